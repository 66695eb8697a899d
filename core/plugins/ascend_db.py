"""Built-in plugin: reads the Ascend profiler databases (torch_npu / MindSpore
``ascend_*_profiler_{rank}.db`` + ``analysis.db``, CANN ``msprof_*.db``);
see :mod:`npuprof.readers`."""
