"""The SS928/SS927 msprof.pyc export layout: file names and columns, as seed 002 spells them.

``JOB/timeline/``:

* ``task_time_{device_id}.{model_file_name}.{model_id}.{batch_num}.json``
  (Task Scheduler: ``name, pid, tid, ts, dur, ph, args: Task Type, Stream Id, Task Id``)
* ``acl_{device_id}.{model_file_name}.{model_id}.{batch_num}.json``
  (ACL calls: ``Title, Start, Wall Duration, Mode, Process_Id, Thread_Id``)

``JOB/summary/``:

* ``op_summary_{device_id}.{model_file_name}.{model_id}.{batch_num}.{input_pic_num}.{current_pic_count}.{icache_miss_rate}.{frequency}.csv``
  (AA Core metrics, :data:`OP_SUMMARY_COLUMNS`)
* ``op_statistic_{device_id}_{model_id}_{current_pic_count}_{iter_id}.csv`` (:data:`OP_STATISTIC_COLUMNS`)
* ``acl_statistic_{device_id}_{model_id}_{iter_id}.csv`` (:data:`ACL_STATISTIC_COLUMNS`)

The manual's worked example also names the timelines
``task_time_{device_id}_{model_id}_{iter_id}.json``: both spellings are read;
the last field of a timeline name is the iteration (``batch_num`` / ``iter_id``).

Example::

    >>> key = TimelineKey.parse("task_time_", "task_time_0.resnet50.1.2.json")
    >>> (key.device, key.model_file_name, key.model_id, key.iteration)
    (0, 'resnet50', '1', '2')
    >>> key.file_name("acl_")
    'acl_0.resnet50.1.2.json'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

TASK_TIME, ACL = "task_time_", "acl_"
OP_SUMMARY, OP_STATISTIC, ACL_STATISTIC = "op_summary_", "op_statistic_", "acl_statistic_"
UNKNOWN = "NA"    # a name field the data does not give (file names cannot hold the manual's "N/A")

OP_SUMMARY_COLUMNS = ("Layer Id", "Ori Layer Name", "Layer Name", "Layer Type", "Time(us)", "Time Ratio",
                      "Mac Busy Ratio", "Mac Ppen Ratio", "Vec Busy Ratio", "Vec Ppen Ratio", "Dstr Ratio",
                      "Dtrans Ratio", "DLD Ratio", "WLD Ratio", "Memory Bound", "DDR Read(byte)",
                      "DDR Write(byte)", "DDR Total(byte)")
OP_STATISTIC_COLUMNS = ("Task ID", "Stream ID", "OP Name", "Task Type", "Total Time Ratio(%)", "Total Time(us)",
                        "Count", "Avg(us)", "Max(us)", "Min(us)")
ACL_STATISTIC_COLUMNS = ("Process ID", "Thread ID", "Type", "Name", "Total Time Ratio(%)", "Total Time(us)",
                         "Count", "Avg(us)", "Max(us)", "Min(us)")
# the fields of an op_summary name, as npuprof's aa_core_metrics table names them
SUMMARY_KEY_COLUMNS = ("Device_id", "Model Name", "Model ID", "Batch Num", "Input Pic Num", "Current Pic Count",
                       "ICache Miss Rate", "Frequency")
FREQUENCY_COLUMNS = ("Device_id", "Model Name", "Model ID", "Batch Num", "Current Pic Count", "ICache Miss Rate",
                     "Frequency")


def _int(text: str) -> Optional[int]:
    try:
        return int(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class TimelineKey:
    """Which device, model and iteration a timeline file (and the events read from it) belongs to."""

    device: int
    model_file_name: Optional[str]
    model_id: str
    iteration: str

    @classmethod
    def parse(cls, prefix: str, file_name: str) -> "TimelineKey":
        """The key in ``{prefix}{device}.{model_file_name}.{model_id}.{batch_num}.json`` or
        ``{prefix}{device}_{model_id}_{iter_id}.json``; fields it lacks are :data:`UNKNOWN`."""
        stem = file_name[len(prefix):-len(".json")] if file_name.endswith(".json") else file_name[len(prefix):]
        parts = stem.split(".")
        if len(parts) >= 4 and _int(parts[0]) is not None:
            return cls(int(parts[0]), ".".join(parts[1:-2]), parts[-2], parts[-1])
        parts = stem.split("_")
        device = _int(parts[0]) if parts else None
        rest = parts[1:] + [UNKNOWN] * max(0, 3 - len(parts))
        return cls(device if device is not None else 0, None, rest[0] or UNKNOWN, rest[-1] or UNKNOWN)

    def file_name(self, prefix: str) -> str:
        """The manual's name (its table's dotted form when the model file name is known, else the
        worked example's ``{device}_{model_id}_{iter_id}``)."""
        if self.model_file_name:
            return f"{prefix}{self.device}.{self.model_file_name}.{self.model_id}.{self.iteration}.json"
        return f"{prefix}{self.device}_{self.model_id}_{self.iteration}.json"

    def as_args(self) -> dict:
        out = {"Model Id": self.model_id, "Batch Num": self.iteration}
        if self.model_file_name:
            out["Model Name"] = self.model_file_name
        return out

    @classmethod
    def from_args(cls, device: int, args: dict) -> "TimelineKey":
        return cls(device, args.get("Model Name") or None, str(args.get("Model Id", UNKNOWN)),
                   str(args.get("Batch Num", UNKNOWN)))


@dataclass(frozen=True)
class SummaryKey:
    """The fields of an ``op_summary_*.csv`` name."""

    device: int
    model_file_name: str
    model_id: str
    batch_num: str
    input_pic_num: str
    current_pic_count: str
    icache_miss_rate: str
    frequency: str

    @classmethod
    def parse(cls, file_name: str) -> Optional["SummaryKey"]:
        """None for a name that does not have the manual's eight fields.

        The icache miss rate may itself hold a dot (``0.05``): the device is the first
        field, the model file name the second, the frequency the last, and the miss
        rate what the five fields around it leave."""
        stem = file_name[len(OP_SUMMARY):-len(".csv")] if file_name.endswith(".csv") else None
        parts = stem.split(".") if stem else []
        if len(parts) < 8 or _int(parts[0]) is None:
            return None
        device, model, model_id, batch, pics, current = parts[:6]
        return cls(int(device), model, model_id, batch, pics, current, ".".join(parts[6:-1]), parts[-1])

    def file_name(self) -> str:
        return (f"{OP_SUMMARY}{self.device}.{self.model_file_name}.{self.model_id}.{self.batch_num}."
                f"{self.input_pic_num}.{self.current_pic_count}.{self.icache_miss_rate}.{self.frequency}.csv")

    def cells(self) -> tuple:
        """The values of :data:`SUMMARY_KEY_COLUMNS`."""
        return (self.device, self.model_file_name, self.model_id, self.batch_num, self.input_pic_num,
                self.current_pic_count, self.icache_miss_rate, self.frequency)

    @classmethod
    def from_cells(cls, cells: dict) -> "SummaryKey":
        return cls(int(cells["Device_id"]), *(str(cells[c]) for c in SUMMARY_KEY_COLUMNS[1:]))


def op_statistic_name(key: TimelineKey, current_pic_count: str, ext: str) -> str:
    return f"{OP_STATISTIC}{key.device}_{key.model_id}_{current_pic_count}_{key.iteration}.{ext}"


def acl_statistic_name(key: TimelineKey, ext: str) -> str:
    return f"{ACL_STATISTIC}{key.device}_{key.model_id}_{key.iteration}.{ext}"
