"""Analysis: raw data of one run -> one event table -> analyzer tables.

Analyzers are pure functions of the event table (see :mod:`.analyzers`);
:mod:`.pipeline` loads runs, runs every analyzer and hands the result to the
export hooks.
"""
