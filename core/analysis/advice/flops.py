"""FLOPs per device operator from its input and output shapes, and the peak table MFU is judged against.

Counted (multiply-add = 2 FLOPs):

- MatMul / BatchMatMul / Gemm / Linear / addmm / mm / bmm kernels: ``2 * |C| * K``, ``C`` the output and
  ``K`` the contraction: of A's last two dimensions the one that is not the output's rows (transposed
  operands included; a bias input adds nothing counted);
- element-wise kernels (:data:`ELEMENTWISE`): one FLOP per output element.

Other kernels (convolutions in Ascend's 5-D NC1HWC0 layout among them) are left uncounted and said so:
a number is never guessed. Shapes come from the data's ``Input Shapes`` / ``Output Shapes``
(kernel_details of torch_npu and MindSpore, npuprof's record_shapes).

Example::

    >>> matmul_flops([[32, 9216], [4096, 9216], [4096]], [[32, 4096]])
    2415919104
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

MATMUL_TYPES = ("matmul", "batchmatmul", "gemm", "linear", "addmm", "aten::mm", "aten::bmm")
ELEMENTWISE = frozenset({"Add", "AddV2", "Sub", "Mul", "Muls", "Div", "RealDiv", "Relu", "ReluGrad", "Gelu",
                         "GeluGrad", "Sigmoid", "Tanh", "Exp", "Sqrt", "Rsqrt", "Neg", "Maximum", "Minimum",
                         "Axpy", "AxpyV2", "SiLU", "Swish", "Adds", "Square"})
# Dense (no sparsity) vendor peak TFLOP/s per data type. Only figures published by the vendor are listed;
# for another device give --peak-tflops.
PEAK_TFLOPS = {
    "ascend910a": {"fp16": 256.0},                                               # Huawei, Ascend 910 (2019)
    "a100": {"fp16": 312.0, "bf16": 312.0, "tf32": 156.0, "fp32": 19.5},           # NVIDIA A100 datasheet
    "h100-sxm": {"fp16": 989.4, "bf16": 989.4, "tf32": 494.7, "fp32": 66.9},       # NVIDIA H100 SXM datasheet
    "v100": {"fp16": 125.0, "fp32": 15.7},                                        # NVIDIA V100 SXM2 datasheet
}
DTYPES = {"float": "fp32", "float32": "fp32", "dt_float": "fp32", "float16": "fp16", "dt_float16": "fp16",
          "half": "fp16", "bfloat16": "bf16", "dt_bf16": "bf16", "bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}


@dataclass(frozen=True)
class OpFlops:
    """One kernel's FLOPs (None: not counted, ``why`` says why), its type, duration and data type."""

    name: str
    op_type: str
    duration_us: float
    flops: Optional[int]
    dtype: str
    input_shapes: str
    why: str = ""


def parse_shapes(text: str) -> list:
    """``"32,9216;4096,9216;4096"`` -> [[32, 9216], [4096, 9216], [4096]]; an empty entry -> []."""
    out = []
    for part in str(text or "").strip().strip('"').split(";"):
        part = part.strip()
        out.append([int(d) for d in part.split(",") if d.strip().lstrip("-").isdigit()] if part else [])
    return out


def is_matmul(op_type: str) -> bool:
    low = op_type.lower()
    return any(m in low for m in MATMUL_TYPES)


def matmul_flops(inputs: list, outputs: list) -> Optional[int]:
    """2 * |C| * K (see the module docstring); None when the shapes do not make a product."""
    if len(inputs) < 2 or not outputs or len(inputs[0]) < 2 or len(outputs[0]) < 2:
        return None
    a, c = inputs[0], outputs[0]
    rows = c[-2]
    k = a[-1] if a[-2] == rows else a[-2] if a[-1] == rows else None
    if k is None:
        return None
    return 2 * math.prod(c) * k


def kernel_flops(op_type: str, name: str, duration_us: float, input_shapes: str, output_shapes: str,
                 dtypes: str) -> OpFlops:
    """The FLOPs of one kernel row."""
    dtype = DTYPES.get(str(dtypes).split(";")[0].strip().lower(), str(dtypes).split(";")[0].strip().lower())
    ins, outs = parse_shapes(input_shapes), parse_shapes(output_shapes)
    if is_matmul(op_type):
        f = matmul_flops(ins, outs)
        return OpFlops(name, op_type, duration_us, f, dtype, input_shapes, "" if f is not None else
                       "shapes do not make a matrix product")
    if op_type in ELEMENTWISE:
        if outs and outs[0]:
            return OpFlops(name, op_type, duration_us, math.prod(outs[0]), dtype, input_shapes)
        return OpFlops(name, op_type, duration_us, None, dtype, input_shapes, "no output shape")
    return OpFlops(name, op_type, duration_us, None, dtype, input_shapes, "no FLOP formula for this type")


def peak_of(device: str, dtype: str) -> Optional[float]:
    """The table's peak TFLOP/s of ``device`` for ``dtype``; None when not listed."""
    return PEAK_TFLOPS.get(device.lower(), {}).get(dtype)
