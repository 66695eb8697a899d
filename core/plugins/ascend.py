"""Built-in plugin: reads torch_npu / MindSpore Ascend text outputs
(``*_ascend_pt`` / ``*_ascend_ms`` run directories); see :mod:`npuprof.readers`."""
