"""``record_shapes`` for TensorFlow: the input and output shapes of the ops a window ran.

TensorFlow's own trace (XSpace) names each op of a ``tf.function`` (``dense/MatMul:_MklMatMul``) but
carries no shapes (TF 2.20/2.21, at every host tracer level). The graphs of the process's traced
functions do: every op of a ``ConcreteFunction``'s graph has its inputs' and outputs' static shapes.
At the end of a window recorded with ``record_shapes=True`` npuprof writes, in its run directory (not in
TensorFlow's folder), ``tf_op_shapes.json``: op name -> ``Input Shapes`` / ``Input Data Types`` / ``Output Shapes`` (the Ascend
tools' text: ``"256,1024;1024,1024"``). The reader gives each OP event of that name these args.

An op name that two graphs give different shapes (the same layer traced for two batch sizes) is left
out: which one ran is not in the trace. A dimension TensorFlow does not know statically (``None``)
makes the op's shapes unknown, and it is left out too.

Example::

    shapes = collect_op_shapes()        # in the process, after the functions were traced
    shapes["dense/MatMul"]["Input Shapes"]      # '256,1024;1024,1024'
"""
from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any, Optional

FILE_NAME = "tf_op_shapes.json"


def _shape_text(tensors: Any) -> Optional[str]:
    parts = []
    for t in tensors:
        dims = t.shape.as_list() if t.shape.rank is not None else None
        if dims is None or any(d is None for d in dims):
            return None
        parts.append(",".join(str(int(d)) for d in dims))
    return ";".join(parts)


def _graphs() -> list:
    """The graphs of the process's live traced functions (``ConcreteFunction.graph``)."""
    try:
        from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction
    except ImportError:      # older TensorFlow
        from tensorflow.python.eager.function import ConcreteFunction   # type: ignore
    seen, out = set(), []
    for obj in gc.get_objects():
        if isinstance(obj, ConcreteFunction):
            graph = getattr(obj, "graph", None)
            if graph is not None and id(graph) not in seen:
                seen.add(id(graph))
                out.append(graph)
    return out


def collect_op_shapes() -> dict:
    """op name -> {"Input Shapes", "Input Data Types", "Output Shapes"} over the live traced functions."""
    found: dict = {}
    clash: set = set()
    for graph in _graphs():
        for op in graph.get_operations():
            ins, outs = _shape_text(op.inputs), _shape_text(op.outputs)
            if ins is None or outs is None or not op.inputs:
                continue
            entry = {"Input Shapes": ins, "Output Shapes": outs,
                     "Input Data Types": ";".join(t.dtype.name for t in op.inputs)}
            if op.name in found and found[op.name] != entry:
                clash.add(op.name)
            found.setdefault(op.name, entry)
    for name in clash:
        del found[name]
    return found


def write_op_shapes(directory: Path) -> Optional[Path]:
    """``tf_op_shapes.json`` in ``directory`` (npuprof's run directory); None when no op has shapes."""
    shapes = collect_op_shapes()
    if not shapes:
        return None
    from npuprof.fileio import atomic_write

    path = Path(directory) / FILE_NAME
    atomic_write(path, json.dumps(shapes, sort_keys=True))
    return path


def read_op_shapes(directory: Path) -> dict:
    """What :func:`write_op_shapes` wrote under ``directory``; {} without the file."""
    path = Path(directory) / FILE_NAME
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {str(k): v for k, v in data.items() if isinstance(v, dict)}
