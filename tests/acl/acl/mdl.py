"""acl.mdl of the test double: JSON "models" whose ops run with fixed durations."""
from __future__ import annotations

import itertools
import json
import os
import threading

from . import _state as S


def load_from_file(path: str):
    with S.LOCK:
        if not S.STATE.acl_initialised:
            return S.log_call("acl.mdl.load_from_file", (0, S.UNINITIALIZE))
        try:
            with open(path) as fh:
                spec = json.load(fh)
            ops = [{"name": str(o["name"]), "type": str(o["type"]), "duration_us": int(o["duration_us"]),
                    "aa_core": dict(o.get("aa_core", {}))} for o in spec["ops"]]
        except (OSError, ValueError, KeyError, TypeError):
            return S.log_call("acl.mdl.load_from_file", (0, S.INVALID_FILE))
        ctx = S.STATE.current_context.get(threading.get_ident())
        device = S.STATE.contexts.get(ctx, min(S.STATE.devices) if S.STATE.devices else 0)
        model_id = S.STATE.next_model_id
        S.STATE.next_model_id += 1
        S.STATE.models[model_id] = S.Model(model_id, path, ops, spec.get("fail_after"), device)
        return S.log_call("acl.mdl.load_from_file", (model_id, S.SUCCESS))


def unload(model_id: int) -> int:
    with S.LOCK:
        if S.STATE.models.pop(model_id, None) is None:
            return S.log_call("acl.mdl.unload", S.INVALID_MODEL_ID)
        return S.log_call("acl.mdl.unload", S.SUCCESS)


def create_dataset() -> int:
    return S.new_handle()


def destroy_dataset(dataset: int) -> int:
    return S.SUCCESS


_CONNECTION_IDS = itertools.count(1)


def execute(model_id: int, input_dataset: int = 0, output_dataset: int = 0) -> int:
    """Run the model's ops: raw task data for started devices, op records for subscribers.

    Synchronous, as aclmdlExecute is: the call returns once its last task ended, and a device runs
    one task at a time, so no task of a later call overlaps this call's (whatever the host's load).
    """
    with S.LOCK:
        st = S.STATE
        model = st.models.get(model_id)
        if model is None:
            return S.log_call("acl.mdl.execute", S.INVALID_MODEL_ID)
        t_api0 = S.now_ns()
        cursor_us = max(t_api0 // 1000 + 5, st.device_free_us.get(model.device, 0) + 1)
        conn = next(_CONNECTION_IDS)   # the link msprof records between this call and the tasks it ran
        collections = S.collections_for_device(model.device)
        sub_handle = st.subscriptions.get(model_id)
        sub = st.sub_configs.get(sub_handle) if sub_handle is not None else None
        tid = threading.get_ident() & 0xFFFFFFFF
        n_ops = len(model.ops) if model.fail_after is None else min(int(model.fail_after), len(model.ops))
        model.executions += 1
        model_file = os.path.splitext(os.path.basename(model.path))[0]
        for task_id, op in enumerate(model.ops[:n_ops]):
            start_us = cursor_us
            end_us = start_us + op["duration_us"]
            cursor_us = end_us + 1
            for coll in collections:
                if coll.mask & S.TASK_BITS:
                    record = {"op_name": op["name"], "op_type": op["type"],
                              "task_type": "AA_CORE" if coll.is_job else "AI_CORE",
                              "stream_id": 2, "task_id": task_id, "model_id": model_id,
                              "start_ns": start_us * 1000, "dur_ns": op["duration_us"] * 1000,
                              "connection_id": conn}
                    if coll.is_job:
                        record.update(model_file=model_file, iteration=model.executions, device=model.device)
                    S.append_raw(coll.prof_dir, coll.raw_where(f"device_{model.device}"), "task", record)
                if coll.aa_core:    # the SVP collector's per-layer AA Core counters
                    S.append_raw(coll.prof_dir, "", "aacore", {
                        "model_id": model_id, "model_file": model_file, "iteration": model.executions,
                        "device": model.device, "layer_id": task_id, "layer": op["name"], "type": op["type"],
                        "time_us": op["duration_us"], **op["aa_core"]})
            if sub is not None:
                index = st.next_op_index
                st.next_op_index += 1
                st.op_types[index] = op["type"]
                st.op_names[index] = op["name"]
                rec = S.pack_record(model_id, tid, index, start_us, end_us, op["duration_us"], model.device)
                S.writer().write(sub.fd, rec)
        st.device_free_us[model.device] = cursor_us - 1
    S.wait_until_ns(cursor_us * 1000)      # outside the lock: the device works, other threads may call
    with S.LOCK:
        t_api1 = S.now_ns()
        for coll in S.host_collections():
            if coll.mask & S.ACL_API_BIT:
                record = {"name": "aclmdlExecute", "level": "AscendCL", "start_ns": t_api0, "end_ns": t_api1,
                          "pid": os.getpid(), "tid": tid, "connection_id": conn}
                if coll.is_job:
                    record.update(mode="model", model_id=model_id, model_file=model_file,
                                  iteration=model.executions, device=model.device)
                S.append_raw(coll.prof_dir, coll.raw_where("host"), "api", record)
        if n_ops < len(model.ops):
            return S.log_call("acl.mdl.execute", S.MODEL_EXECUTE_FAILED)
        return S.log_call("acl.mdl.execute", S.SUCCESS)
