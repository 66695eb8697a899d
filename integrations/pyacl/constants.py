"""pyACL profiling constants, as the CANN headers define them.

Data-type flag bits for ``acl.prof.create_config``, AI Core metric ids,
``acl.prof.set_config`` types and the error codes the profiling calls return,
each with its meaning. Values follow the public ``acl_prof.h`` /
``acl_base.h`` headers (see docs/pyacl.md for the version notes).

Example::

    >>> from npuprof.integrations.pyacl import constants as C
    >>> hex(C.ACL_PROF_ACL_API | C.ACL_PROF_TASK_TIME)
    '0x3'
    >>> C.error_name(100042), C.error_meaning(100042)[:29]
    ('ACL_ERROR_PROF_ALREADY_RUN', 'profiling is already switched')
    >>> C.AICORE_METRICS_BY_NAME["PipeUtilization"]
    1
"""
from __future__ import annotations

# --- data-type flags (data_type_config, uint64 bit mask) ------------------
ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_AICORE_METRICS = 0x0004
ACL_PROF_AICPU = 0x0008
ACL_PROF_AICPU_TRACE = ACL_PROF_AICPU  # spelling used by the pyACL sample
ACL_PROF_L2CACHE = 0x0010
ACL_PROF_HCCL_TRACE = 0x0020
ACL_PROF_HCCL = ACL_PROF_HCCL_TRACE  # spelling used by the pyACL sample
ACL_PROF_TRAINING_TRACE = 0x0040
ACL_PROF_MSPROFTX = 0x0080
ACL_PROF_RUNTIME_API = 0x0100
ACL_PROF_GE_API_L0 = 0x0200
ACL_PROF_FWK_SCHEDULE_L0 = ACL_PROF_GE_API_L0  # older name
ACL_PROF_TASK_TIME_L0 = 0x0800
ACL_PROF_TASK_MEMORY = 0x1000
ACL_PROF_TASK_TIME_L2 = 0x2000
ACL_PROF_OP_ATTR = 0x4000
ACL_PROF_TASK_TIME_L3 = 0x8000
ACL_PROF_GE_API_L1 = 0x01000000
ACL_PROF_FWK_SCHEDULE_L1 = ACL_PROF_GE_API_L1  # older name
ACL_PROF_API_STATS = 0x400000000

#: flag name -> (bit, what it collects)
DATA_TYPE_FLAGS: dict[str, tuple[int, str]] = {
    "ACL_PROF_ACL_API": (ACL_PROF_ACL_API, "AscendCL API timing"),
    "ACL_PROF_TASK_TIME": (ACL_PROF_TASK_TIME, "task time and op basic info (task_time l1)"),
    "ACL_PROF_AICORE_METRICS": (ACL_PROF_AICORE_METRICS, "AI Core PMU; needed for aicore_metrics to take effect"),
    "ACL_PROF_AICPU": (ACL_PROF_AICPU, "AI CPU task start/end"),
    "ACL_PROF_L2CACHE": (ACL_PROF_L2CACHE, "L2 cache and TLB hit rate"),
    "ACL_PROF_HCCL_TRACE": (ACL_PROF_HCCL_TRACE, "communication"),
    "ACL_PROF_TRAINING_TRACE": (ACL_PROF_TRAINING_TRACE, "step trace"),
    "ACL_PROF_MSPROFTX": (ACL_PROF_MSPROFTX, "msproftx / mstx user markers"),
    "ACL_PROF_RUNTIME_API": (ACL_PROF_RUNTIME_API, "runtime API timing"),
    "ACL_PROF_GE_API_L0": (ACL_PROF_GE_API_L0, "host scheduling of dynamic-shape ops, main stages"),
    "ACL_PROF_TASK_TIME_L0": (ACL_PROF_TASK_TIME_L0, "task time without op info (lowest overhead)"),
    "ACL_PROF_TASK_MEMORY": (ACL_PROF_TASK_MEMORY, "operator memory"),
    "ACL_PROF_TASK_TIME_L2": (ACL_PROF_TASK_TIME_L2, "task_time l1 plus op attributes"),
    "ACL_PROF_OP_ATTR": (ACL_PROF_OP_ATTR, "aclnn op attributes"),
    "ACL_PROF_TASK_TIME_L3": (ACL_PROF_TASK_TIME_L3, "newest header only (experimental)"),
    "ACL_PROF_GE_API_L1": (ACL_PROF_GE_API_L1, "finer host scheduling"),
    "ACL_PROF_API_STATS": (ACL_PROF_API_STATS, "online analysis mode (newest header); other switches ignored"),
}

ACL_PROF_MAX_OP_NAME_LEN = 257  # deprecated in the header, still the documented get_op_name range
# the name length the pyACL subscription sample passes to get_op_name (a buffer size: longer than the
# header's 257, so names of up to 274 bytes fit); npuprof asks with it when get_op_name_len is absent
ACL_PROF_SAMPLE_OP_NAME_LEN = 275
ACL_PROF_MAX_OP_TYPE_LEN = 65

# --- AI Core metrics (aclprofAicoreMetrics) --------------------------------
ACL_AICORE_ARITHMETIC_UTILIZATION = 0
ACL_AICORE_PIPE_UTILIZATION = 1
ACL_AICORE_MEMORY_BANDWIDTH = 2
ACL_AICORE_L0B_AND_WIDTH = 3
ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4
ACL_AICORE_MEMORY_UB = 5
ACL_AICORE_L2_CACHE = 6
ACL_AICORE_PIPE_EXECUTE_UTILIZATION = 7
ACL_AICORE_MEMORY_ACCESS = 8
ACL_AICORE_NONE = 0xFF

#: string form used by acl.json / msprof / npuprof -> aclprofAicoreMetrics value
AICORE_METRICS_BY_NAME: dict[str, int] = {
    "ArithmeticUtilization": ACL_AICORE_ARITHMETIC_UTILIZATION,
    "PipeUtilization": ACL_AICORE_PIPE_UTILIZATION,
    "Memory": ACL_AICORE_MEMORY_BANDWIDTH,
    "MemoryL0": ACL_AICORE_L0B_AND_WIDTH,
    "ResourceConflictRatio": ACL_AICORE_RESOURCE_CONFLICT_RATIO,
    "MemoryUB": ACL_AICORE_MEMORY_UB,
    "L2Cache": ACL_AICORE_L2_CACHE,
    "PipelineExecuteUtilization": ACL_AICORE_PIPE_EXECUTE_UTILIZATION,  # 310B only
    "MemoryAccess": ACL_AICORE_MEMORY_ACCESS,  # A2/A3 only
    "None": ACL_AICORE_NONE,
}
AICORE_METRICS_NAMES: dict[int, str] = {v: k for k, v in AICORE_METRICS_BY_NAME.items()}

# --- other enums -----------------------------------------------------------
ACL_STEP_START = 0
ACL_STEP_END = 1
ACL_SUBSCRIBE_OP = 0
ACL_SUBSCRIBE_SUBGRAPH = 1
ACL_SUBSCRIBE_OP_THREAD = 2
ACL_SUBSCRIBE_NONE = 0xFF
ACL_SUBSCRIBE_ATTRI_THREADID = 0

# --- set_config types (aclprofConfigType, newest header numbering) ----------
ACL_PROF_ARGS_MIN = 0
ACL_PROF_STORAGE_LIMIT = 1
ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3
ACL_PROF_LLC_MODE = 4
ACL_PROF_SYS_IO_FREQ = 5
ACL_PROF_SYS_INTERCONNECTION_FREQ = 6
ACL_PROF_DVPP_FREQ = 7
ACL_PROF_HOST_SYS = 8
ACL_PROF_HOST_SYS_USAGE = 9
ACL_PROF_HOST_SYS_USAGE_FREQ = 10
ACL_PROF_LOW_POWER_FREQ = 11
ACL_PROF_SYS_MEM_SERVICEFLOW = 12
ACL_PROF_SYS_CPU_FREQ = 13
ACL_PROF_OPTYPE = 14
ACL_PROF_NTS_METRICS = 15
ACL_PROF_PATH = 16
ACL_PROF_ARGS_MAX = 17

#: set_config type -> (name, accepted value description). Values 1 and 3-10
#: mean the same in every header version; 11+ exist in the newest header only.
CONFIG_TYPES: dict[int, tuple[str, str]] = {
    ACL_PROF_STORAGE_LIMIT: ("ACL_PROF_STORAGE_LIMIT", "'<N>MB' with N in [200, 4294967295]"),
    ACL_PROF_SYS_HARDWARE_MEM_FREQ: ("ACL_PROF_SYS_HARDWARE_MEM_FREQ", "an integer string in [1, 100] (Hz)"),
    ACL_PROF_LLC_MODE: ("ACL_PROF_LLC_MODE", "'read' or 'write'"),
    ACL_PROF_SYS_IO_FREQ: ("ACL_PROF_SYS_IO_FREQ", "an integer string in [1, 100]"),
    ACL_PROF_SYS_INTERCONNECTION_FREQ: ("ACL_PROF_SYS_INTERCONNECTION_FREQ", "an integer string in [1, 50]"),
    ACL_PROF_DVPP_FREQ: ("ACL_PROF_DVPP_FREQ", "an integer string in [1, 100]"),
    ACL_PROF_HOST_SYS: ("ACL_PROF_HOST_SYS", "a comma list of cpu, mem, disk, network, osrt"),
    ACL_PROF_HOST_SYS_USAGE: ("ACL_PROF_HOST_SYS_USAGE", "a comma list of cpu, mem"),
    ACL_PROF_HOST_SYS_USAGE_FREQ: ("ACL_PROF_HOST_SYS_USAGE_FREQ", "an integer string in [1, 50]"),
    ACL_PROF_LOW_POWER_FREQ: ("ACL_PROF_LOW_POWER_FREQ", "an integer string in [1, 100]"),
    ACL_PROF_SYS_MEM_SERVICEFLOW: ("ACL_PROF_SYS_MEM_SERVICEFLOW", "a non-empty string"),
    ACL_PROF_SYS_CPU_FREQ: ("ACL_PROF_SYS_CPU_FREQ", "an integer string in [1, 50]"),
    ACL_PROF_OPTYPE: ("ACL_PROF_OPTYPE", "a comma list of op types (at most 256 characters)"),
    ACL_PROF_NTS_METRICS: ("ACL_PROF_NTS_METRICS", "'PipeUtilization' or 'Custom:<event>,...'"),
    ACL_PROF_PATH: ("ACL_PROF_PATH", "an output directory path"),
}
MAX_SET_CONFIG_LEN = 256
MAX_INIT_PATH_LEN = 4096
MAX_MARK_EX_LEN = 127

# --- error codes (acl_base.h) ----------------------------------------------
ACL_SUCCESS = 0
ACL_ERROR_NONE = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_UNINITIALIZE = 100001
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_INVALID_FILE = 100003
ACL_ERROR_INVALID_PROFILING_CONFIG = 100010
ACL_ERROR_INVALID_MODEL_ID = 100011
ACL_ERROR_PROF_ALREADY_RUN = 100042
ACL_ERROR_PROF_NOT_RUN = 100043
ACL_ERROR_PROF_REPEAT_SUBSCRIBE = 148046
ACL_ERROR_PROF_API_CONFLICT = 148047
ACL_ERROR_API_NOT_SUPPORT = 200001
ACL_ERROR_FEATURE_UNSUPPORTED = 200006
ACL_ERROR_PROF_MODULES_UNSUPPORTED = 200007
ACL_ERROR_PROFILING_FAILURE = 500005

#: code -> (name, when the profiling calls return it)
ERROR_CODES: dict[int, tuple[str, str]] = {
    ACL_SUCCESS: ("ACL_SUCCESS", "success"),
    ACL_ERROR_INVALID_PARAM: ("ACL_ERROR_INVALID_PARAM",
                              "invalid parameter: bad length or argument, or an op-record buffer whose size is "
                              "not a multiple of the record size or whose CRC does not match"),
    ACL_ERROR_UNINITIALIZE: ("ACL_ERROR_UNINITIALIZE", "acl is not initialised (acl.init not called)"),
    ACL_ERROR_REPEAT_INITIALIZE: ("ACL_ERROR_REPEAT_INITIALIZE", "acl.prof.init called again in API mode"),
    ACL_ERROR_INVALID_FILE: ("ACL_ERROR_INVALID_FILE",
                             "the profiling path is empty, cannot be created, or is not accessible"),
    ACL_ERROR_INVALID_PROFILING_CONFIG: ("ACL_ERROR_INVALID_PROFILING_CONFIG",
                                         "stop got a config whose data types differ from start's, or a second "
                                         "subscription on a device uses different settings"),
    ACL_ERROR_INVALID_MODEL_ID: ("ACL_ERROR_INVALID_MODEL_ID", "the model is not subscribed"),
    ACL_ERROR_PROF_ALREADY_RUN: ("ACL_ERROR_PROF_ALREADY_RUN",
                                 "profiling is already switched on from outside the API (acl.json, msprof, "
                                 "environment, framework options) or the device is already started"),
    ACL_ERROR_PROF_NOT_RUN: ("ACL_ERROR_PROF_NOT_RUN",
                             "profiling is not initialised: start/stop/finalize/set_config before acl.prof.init"),
    ACL_ERROR_PROF_REPEAT_SUBSCRIBE: ("ACL_ERROR_PROF_REPEAT_SUBSCRIBE", "the model is already subscribed"),
    ACL_ERROR_PROF_API_CONFLICT: ("ACL_ERROR_PROF_API_CONFLICT",
                                  "collection calls (init/start/stop/finalize) and subscription calls are mixed"),
    ACL_ERROR_API_NOT_SUPPORT: ("ACL_ERROR_API_NOT_SUPPORT", "the API is not supported"),
    ACL_ERROR_FEATURE_UNSUPPORTED: ("ACL_ERROR_FEATURE_UNSUPPORTED",
                                    "the feature is not supported here (e.g. start/stop/subscribe on a helper host)"),
    ACL_ERROR_PROF_MODULES_UNSUPPORTED: ("ACL_ERROR_PROF_MODULES_UNSUPPORTED",
                                         "the profiling module is not supported by this CANN version"),
    ACL_ERROR_PROFILING_FAILURE: ("ACL_ERROR_PROFILING_FAILURE",
                                  "profiling failed: the profiler is not ready, start/stop failed on the device, "
                                  "or a data type is unsupported"),
}


def error_name(code: int) -> str:
    """Symbolic name of an ACL error code (``'UNKNOWN_<code>'`` when not listed)."""
    entry = ERROR_CODES.get(int(code))
    return entry[0] if entry else f"UNKNOWN_{int(code)}"


def error_meaning(code: int) -> str:
    """One-line meaning of an ACL error code for profiling calls."""
    entry = ERROR_CODES.get(int(code))
    return entry[1] if entry else "unknown error code"


def flag_names(mask: int) -> list[str]:
    """Names of the known data-type bits set in ``mask``; unknown bits as hex.

    >>> flag_names(0x83)
    ['ACL_PROF_ACL_API', 'ACL_PROF_TASK_TIME', 'ACL_PROF_MSPROFTX']
    """
    names = [n for n, (bit, _) in DATA_TYPE_FLAGS.items() if mask & bit]
    known = 0
    for bit, _ in DATA_TYPE_FLAGS.values():
        known |= bit
    if mask & ~known:
        names.append(hex(mask & ~known))
    return names
