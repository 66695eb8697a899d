"""CANN-level concepts shared by the integrations that drive CANN's profiling (TensorFlow on Ascend
through GE, pyACL apps): the ``profiling_options`` schema (:mod:`.profiling_options`).

No framework is imported here; the TensorFlow and pyACL integrations import this, never each other.
"""
