"""pyACL sample 1 (collect to file), written with npuprof.

The documented sequence: acl.init -> prof.init -> start(devices) -> load and
execute the model -> stop(same config) -> prof.finalize -> acl.finalize,
here through npuprof's AclProfiler, which checks the call order before each
acl call, then imports the PROF_ data with npuprof's analysis.

Run against the acl test double (no NPU needed)::

    PYTHONPATH=tests/acl PATH=tests/acl/bin:$PATH python examples/pyacl_collect_to_file.py /tmp/acl_demo

On a machine with CANN, drop PYTHONPATH/PATH and pass a real .om model and
device with --model/--device (the double reads a JSON model description).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import acl  # pyACL (or the test double in tests/acl)

import npuprof
from npuprof.integrations.pyacl import AclProfiler, constants as C, track_acl


def check(ret: int, what: str) -> None:
    if ret != 0:
        raise RuntimeError(f"{what} failed with {ret} ({C.error_name(ret)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", nargs="?", default=os.path.join(tempfile.gettempdir(), "npuprof_acl_collect"))
    ap.add_argument("--model", default=None, help="model file (the double: a JSON op list)")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    model_path = args.model
    if model_path is None:  # a toy model for the double
        model_path = os.path.join(args.output, "toy_model.json")
        os.makedirs(args.output, exist_ok=True)
        with open(model_path, "w") as fh:
            json.dump({"ops": [{"name": "conv1", "type": "Conv2D", "duration_us": 120},
                               {"name": "relu1", "type": "Relu", "duration_us": 30},
                               {"name": "fc1", "type": "MatMul", "duration_us": 80}]}, fh)

    track_acl()                                           # lets npuprof check the order from acl.init on
    check(acl.init(), "acl.init")                         # 1. runtime resources
    check(acl.rt.set_device(args.device), "acl.rt.set_device")
    context, ret = acl.rt.create_context(args.device)
    check(ret, "acl.rt.create_context")

    prof = AclProfiler(os.path.join(args.output, "prof"), profiler_level="Level1")
    prof.init()                                           # 4. acl.prof.init: after acl.init, before loading
    handle = prof.start(devices=[args.device])            # 5. create_config + start
    model_id, ret = acl.mdl.load_from_file(model_path)    # 2. load the model
    check(ret, "acl.mdl.load_from_file")
    for _ in range(args.runs):                            # 6. execute
        check(acl.mdl.execute(model_id, 0, 0), "acl.mdl.execute")
    check(acl.mdl.unload(model_id), "acl.mdl.unload")     # 8. unload
    prof.stop(handle)                                     # 9. stop (same config) + destroy_config
    prof.finalize()                                       #    acl.prof.finalize
    check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
    check(acl.rt.reset_device(args.device), "acl.rt.reset_device")
    check(acl.finalize(), "acl.finalize")                 # 10. check acl.finalize's return, as the docs ask

    for prof_dir in prof.prof_dirs:                       # import what CANN wrote (msprof exports first);
        # CANN's PROF_ directory stays as it is: npuprof's outputs go beside it
        for result in npuprof.analyse(prof_dir, output_path=prof_dir.parent / "npuprof_output"):
            print(f"{prof_dir.name}: {len(result.events)} events")
            for row in result.tables["op_statistic"].rows():
                print("   ", row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
