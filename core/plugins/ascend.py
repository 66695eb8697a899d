"""Built-in plugin: reads torch_npu / MindSpore Ascend outputs and the Ascend
profiler databases (see :mod:`npuprof.readers`)."""
