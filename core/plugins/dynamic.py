"""Built-in plugin: the ``npuprof dynamic`` command (see :mod:`npuprof.dynamic_profile`)."""
