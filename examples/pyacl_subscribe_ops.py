"""pyACL sample 2 (subscription: op records read from a pipe in a thread), with npuprof.

The documented sequence: load the model -> os.pipe() ->
create_subscribe_config(1, ACL_AICORE_NONE, w) -> model_subscribe -> a reader
thread drains the pipe (get_op_desc_size, get_op_num, get_model_id,
get_op_type, get_op_name, get_op_start/end/duration) -> execute ->
model_unsubscribe -> stop the thread -> close r -> destroy_subscribe_config.
npuprof's OpSubscriber does all of it, also when the model fails, and puts
each op into an npuprof Profiler's event table.

Run against the acl test double (no NPU needed)::

    PYTHONPATH=tests/acl python examples/pyacl_subscribe_ops.py /tmp/acl_sub
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import acl  # pyACL (or the test double in tests/acl)

import npuprof
from npuprof.integrations.pyacl import OpSubscriber, constants as C, track_acl


def check(ret: int, what: str) -> None:
    if ret != 0:
        raise RuntimeError(f"{what} failed with {ret} ({C.error_name(ret)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", nargs="?", default=os.path.join(tempfile.gettempdir(), "npuprof_acl_subscribe"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    os.makedirs(args.output, exist_ok=True)
    model_path = args.model
    if model_path is None:
        model_path = os.path.join(args.output, "toy_model.json")
        with open(model_path, "w") as fh:
            json.dump({"ops": [{"name": "conv1", "type": "Conv2D", "duration_us": 120},
                               {"name": "relu1", "type": "Relu", "duration_us": 30}]}, fh)

    track_acl()
    check(acl.init(), "acl.init")
    check(acl.rt.set_device(args.device), "acl.rt.set_device")
    context, ret = acl.rt.create_context(args.device)
    check(ret, "acl.rt.create_context")
    model_id, ret = acl.mdl.load_from_file(model_path)
    check(ret, "acl.mdl.load_from_file")

    def show(op):  # called on the reader thread for each op
        if op.op_type == "Conv2D":
            print(f"  model {op.model_id} {op.op_name} ({op.op_type}) {op.duration_us} us")

    # Host-side profiler (CPU only): collection and subscription must not be mixed,
    # so the NPU backend (acl.prof.init) stays out of this process.
    with npuprof.Profiler(output_path=os.path.join(args.output, "prof"), activities=["CPU"]) as prof:
        with OpSubscriber([model_id], callback=show, context=context, profiler=prof) as sub:
            for _ in range(args.runs):
                with npuprof.record_function("execute"):
                    check(acl.mdl.execute(model_id, 0, 0), "acl.mdl.execute")
    print(f"{len(sub.events)} op records; reader thread alive: {sub.reader_alive}")

    check(acl.mdl.unload(model_id), "acl.mdl.unload")
    check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
    check(acl.rt.reset_device(args.device), "acl.rt.reset_device")
    check(acl.finalize(), "acl.finalize")

    result = npuprof.analyse(prof.saved_runs[0])[0]
    for row in result.tables["op_statistic"].rows():
        print("   ", row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
