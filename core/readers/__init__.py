"""Readers of other tools' files: torch_npu / MindSpore Ascend outputs, the
Ascend profiler databases, CANN msprof exports, Kineto and Chrome traces.

Each reader turns files it recognises into an :class:`~npuprof.events.EventTable`
and never writes into the directory it reads (another tool's files are
read-only input). Readers are registered with the plugin host by the built-in
plugins under ``npuprof.plugins``.
"""
