"""Read the Ascend profiler databases: torch_npu's ``ascend_pytorch_profiler_{rank}.db``,
MindSpore's ``ascend_mindspore_profiler_{rank}.db`` (``export_type=db``) and CANN's
``msprof_{timestamp}.db`` (``msprof --type=db``).

All three hold msprof's tables (schema 1.x, ``META_DATA.SCHEMA_VERSION``); the
framework ones add their own (torch_npu: ``PYTORCH_API``, ``CONNECTION_IDS``,
``STEP_TIME``, ``MEMORY_RECORD`` ...). Every table is optional and read by
column name (``PRAGMA table_info``): a query names only the columns the file
has, an optional column missing reads as unknown, a table missing one of its
required columns is skipped with a warning. Text is decoded through
``STRING_IDS`` (a cell that is already text is taken as it is), enumerations
through the ``ENUM_*`` tables (or their documented values when the table is
absent). Times are ns since the Unix epoch ("local unix time" in the schema;
checked on real files against ``SESSION_TIME_INFO`` and ``profiler_info``).

How tables become events (:mod:`npuprof.events`; each row one event, nothing
counted twice):

=============================  ==============================================================
table                          events
=============================  ==============================================================
``STEP_TIME``                  STEP ``ProfilerStep#<id>``; without it, the framework's own
                               ``ProfilerStep#N`` rows (never both)
``PYTORCH_API``                by ``type`` (``ENUM_API_TYPE``): ``op`` -> OP (type = its
                               name, as torch_npu's ``cpu_op``), ``queue`` -> RANGE
                               (``enqueue``/``dequeue``), ``trace`` -> STACK, ``mstx`` ->
                               RANGE/MARK
``CANN_API``                   API, type = its level (``acl``, ``node``, ``hccl`` ...)
``TASK`` + ``COMPUTE_TASK_INFO``  KERNEL: op type, ``Accelerator Core`` (its ``taskType``),
                               ``Block Dim``, ``Mix Block Dim``, ``Task ID``, ``Model ID``,
                               ``Context ID``, ``Wait Time(us)``, tensor columns; stream,
                               device as recorded
``TASK`` + ``COMMUNICATION_TASK_INFO``  COMM task (``task_type``; ``src_rank``/``dst_rank``/
                               ``size``/``transport`` where it is a transfer), group and op
                               type of its operator
``TASK`` + ``COMMUNICATION_SCHEDULE_TASK_INFO``  COMM task (communication run as kernels)
other ``TASK`` rows            RANGE ``device_task`` on its device and stream (event
                               records/waits, memcpy, profiling markers: device activity,
                               neither compute nor communication)
``COMMUNICATION_OP``           COMM operator: op type, ``group`` (see below), device (its
                               ``deviceId`` column from schema 1.2, else its tasks' device)
``MSTX_EVENTS``                MARK (``marker``) or RANGE, type ``mstx``
``MEMORY_RECORD``              COUNTER series ``<component> NPU:<d> Total ...(MB)``, type
                               ``memory`` (as memory_record.csv rows; args: ``Component``,
                               ``Device Type``, ``Stream Ptr``)
``OP_MEMORY``                  MEMORY, one per allocation, type ``operator_memory`` (as
                               operator_memory.csv rows: its other columns in args under the
                               csv's names, times as exact µs text)
``NPU_MEM``                    COUNTER series ``<type> NPU:<d> ddr(B)`` / ``hbm(B)``, type
                               ``npu_mem`` (args: ``Component`` = app/device, ``Device``)
``NPU_MODULE_MEM``             COUNTER series ``<module> NPU:<d> Total Reserved(MB)``, type
                               ``npu_module_mem`` (as npu_module_mem.csv rows; module names
                               from ``ENUM_MODULE``)
=============================  ==============================================================

Launch links: ``TASK.connectionId`` is the ``corr`` of a task and of the
``CANN_API`` row (or ``COMMUNICATION_OP``) with that id; a framework op gets the
one of its ``CONNECTION_IDS`` that a task carries only where no CANN API
carries it (so a launch is linked once, as the text reader does with
``HostToDevice`` flows before ``async_npu`` ones); its other connection ids stay in
its ``args`` (``connection_ids``), so a writer can give them back.

Groups: ``COMMUNICATION_OP.groupName`` is the group's own name
(``90.91.105.46%enp189s0f0_60000_0_1736410538306028``); the Ascend tools name a
group in their summaries (``analysis.db``, ``communication.json``) by its
:func:`group_id`, so a communication event's ``args`` carry both: ``group`` =
the id, ``group_name`` = the name.

The database is opened read-only and immutable (``file:...?mode=ro&immutable=1``):
sqlite writes no journal or lock file beside it. ``analysis.db`` (the tools'
StepTraceTime / CommAnalyzer* summaries) is the tool's result, not events; it is
not read here. Not read either: PMU tables (``TASK_PMU_INFO``, ``SAMPLE_PMU_*``),
hardware counters (``HBM``, ``LLC``, ``ACC_PMU`` ...),
``NPU_OP_MEM``, call stacks, and ``PYTORCH_API``'s input
shapes/types (in torch_npu's schema 1.0.0 the column named ``inputShapes``
holds the types and ``inputDtypes`` the dims).

Example::

    >>> group_id("90.91.105.46%enp189s0f0_60000_0_1736410538306028")
    '17148521525495523210'
    >>> read = read_ascend_db(Path("ascend_pytorch_profiler_0.db"))      # doctest: +SKIP
    >>> read.facts.rank, read.facts.devices, len(read.events)            # doctest: +SKIP
    (0, (0,), 5134)
"""
from __future__ import annotations

from .files import (ANALYSIS_DB, MINDSPORE_DB_RE, MSPROF_DB_RE, SQLITE_MAGIC, TORCH_NPU_DB_RE, db_kind, framework_dbs,
                    group_id, open_readonly, rank_in_name)
from .reader import read_ascend_db
from .schema import API_TYPES, INVALID_U32, MODULES, MSTX_TYPES, AscendDbFacts, AscendDbRead, Warn

__all__ = ["ANALYSIS_DB", "API_TYPES", "INVALID_U32", "MINDSPORE_DB_RE", "MODULES", "MSPROF_DB_RE", "MSTX_TYPES",
           "SQLITE_MAGIC", "TORCH_NPU_DB_RE", "AscendDbFacts", "AscendDbRead", "Warn", "db_kind",
           "framework_dbs", "group_id", "open_readonly", "rank_in_name", "read_ascend_db"]
