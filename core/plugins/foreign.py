"""Built-in plugin: reads CANN msprof timeline exports and Kineto / Chrome
traces (see :mod:`npuprof.readers`)."""
