"""FLOPs per device operator from its input and output shapes, and the peak table MFU is judged against.

Counted (multiply-add = 2 FLOPs):

- MatMul / BatchMatMul / Gemm / Linear / addmm / mm / bmm kernels: ``2 * |C| * K``, ``C`` the output and
  ``K`` the contraction: of A's last two dimensions the one that is not the output's rows (transposed
  operands included; a bias input adds nothing counted);
- convolutions (forward: ``Conv2D``, ``Conv3D``, ``aten::conv2d``, ``aten::convolution`` ...): ``2 * |out| *
  Cin/groups * Kh * Kw`` (``2·N·Cout·Hout·Wout·Cin·Kh·Kw/groups``), the product ``Cin/groups·Kh·Kw`` read from
  the weight: channels-first weights ``[Cout, Cin/groups, Kh, Kw]`` (NCHW, torch), channels-last filters
  ``[Kh, Kw, Cin/groups, Cout]`` (NHWC, TensorFlow); the weight's Cout must match the output's channel
  dimension, else it is not counted. Ascend's 5-D NC1HWC0 inputs with FRACTAL_Z weights are not counted:
  their channels are padded to C0, the model's channel count is not in the shapes;
- attention (forward: ``scaled_dot_product_attention``, ``FlashAttentionScore``, ``npu_fusion_attention``
  ...): ``4 * B * H * Sq * Sk * D`` = ``4 * |Q| * Sk`` (QKᵀ and PV); ``Sk`` is the key's sequence
  dimension, which depends on the layout (BNSD, BSND, BSH, SBH): counted when every layout the shapes
  allow gives the same ``Sk`` (torch's SDPA is always B, H, S, D), else not counted;
- element-wise kernels (:data:`ELEMENTWISE`): one FLOP per output element.

Other kernels are left uncounted and said so: a number is never guessed. Shapes come from the data's
``Input Shapes`` / ``Output Shapes`` (kernel_details of torch_npu and MindSpore, npuprof's record_shapes).

Example::

    >>> matmul_flops([[32, 9216], [4096, 9216], [4096]], [[32, 4096]])
    2415919104
    >>> conv_flops([[32, 3, 224, 224], [64, 3, 11, 11], [64]], [[32, 64, 55, 55]])
    4497715200
    >>> attention_flops("aten::scaled_dot_product_attention", [[2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 64]])
    134217728
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

MATMUL_TYPES = ("matmul", "batchmatmul", "gemm", "linear", "addmm", "aten::mm", "aten::bmm")
CONV_TYPES = ("conv2d", "conv3d", "conv1d", "aten::convolution", "aten::_convolution", "aten::conv", "convolution")
CHANNELS_LAST = ("NWC", "NHWC", "NDHWC")       # TensorFlow's default layouts: filters [..., Cin/groups, Cout]
CONV_EXCLUDED = ("backprop", "backward", "grad", "transpose")
ATTENTION_TYPES = ("scaled_dot_product", "flashattention", "flash_attention", "fusion_attention", "fusedinferattention",
                   "promptflashattention", "increflashattention")
ELEMENTWISE = frozenset({"Add", "AddV2", "Sub", "Mul", "Muls", "Div", "RealDiv", "Relu", "ReluGrad", "Gelu",
                         "GeluGrad", "Sigmoid", "Tanh", "Exp", "Sqrt", "Rsqrt", "Neg", "Maximum", "Minimum",
                         "Axpy", "AxpyV2", "SiLU", "Swish", "Adds", "Square"})
# Dense (no sparsity) vendor peak TFLOP/s (int8: TOPS) per data type. Only figures the vendor published are
# listed (docs/advise.md#peak-table gives each source); for another device or data type give --peak-tflops.
PEAK_TFLOPS = {
    "ascend910a": {"fp16": 256.0, "int8": 512.0},                                 # Huawei, Ascend 910 launch (2019)
    "a100": {"fp16": 312.0, "bf16": 312.0, "tf32": 156.0, "fp32": 19.5, "int8": 624.0},   # NVIDIA A100 datasheet
    "h100-sxm": {"fp16": 989.4, "bf16": 989.4, "tf32": 494.7, "fp32": 66.9, "int8": 1978.9},  # NVIDIA H100 datasheet
    "v100": {"fp16": 125.0, "fp32": 15.7},                                         # NVIDIA V100 SXM2 datasheet
}
DTYPES = {"float": "fp32", "float32": "fp32", "dt_float": "fp32", "float16": "fp16", "dt_float16": "fp16",
          "half": "fp16", "bfloat16": "bf16", "dt_bf16": "bf16", "bf16": "bf16", "fp16": "fp16", "fp32": "fp32",
          "int8": "int8", "dt_int8": "int8", "c10::half": "fp16", "c10::bfloat16": "bf16"}


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


def is_conv(op_type: str) -> bool:
    """A forward convolution (backward / transposed ones are not: their FLOPs differ)."""
    low = op_type.lower()
    return any(c in low for c in CONV_TYPES) and not any(x in low for x in CONV_EXCLUDED)


def conv_flops(inputs: list, outputs: list, formats: str = "") -> Optional[int]:
    """2 * |out| * Cin/groups * Kh * Kw (see the module docstring); None when not derivable."""
    if len(inputs) < 2 or not outputs:
        return None
    x, w, out = inputs[0], inputs[1], outputs[0]
    if not 3 <= len(out) <= 5 or len(w) != len(out) or len(x) != len(out):
        return None     # 5-D NC1HWC0 input with a 4-D FRACTAL_Z weight, or shapes that are not a convolution
    channels_last = str(formats).split(";")[0].strip().upper() in CHANNELS_LAST
    if channels_last:
        per_output = math.prod(w[:-1]) if w[-1] == out[-1] else None
    else:
        per_output = math.prod(w[1:]) if w[0] == out[1] else None
    if per_output is None:
        return None
    return 2 * math.prod(out) * per_output


def is_attention(op_type: str) -> bool:
    """A forward attention kernel (gradients are not counted: their FLOPs differ)."""
    low = op_type.lower()
    return any(a in low for a in ATTENTION_TYPES) and "grad" not in low and "backward" not in low


def attention_flops(op_type: str, inputs: list) -> Optional[int]:
    """4 * |Q| * Sk (= 4·B·H·Sq·Sk·D, forward); None when the layout leaves Sk ambiguous."""
    if len(inputs) < 2:
        return None
    q, k = inputs[0], inputs[1]
    if len(q) != len(k) or len(q) not in (3, 4):
        return None
    if "scaled_dot_product" in op_type.lower():
        if len(q) != 4:
            return None
        candidates = {k[-2]}                      # torch's SDPA: (B, H, S, D)
    elif len(q) == 4:
        candidates = {k[2], k[1]}                 # BNSD or BSND
    else:
        candidates = {k[1], k[0]}                 # BSH or SBH (TND, varlen, gives neither)
    if len(candidates) != 1:
        return None
    return 4 * math.prod(q) * candidates.pop()


def kernel_flops(op_type: str, name: str, duration_us: float, input_shapes: str, output_shapes: str,
                 dtypes: str, formats: str = "") -> OpFlops:
    """The FLOPs of one kernel row (``formats``: its ``Input Formats``, where the data has them)."""
    dtype = DTYPES.get(str(dtypes).split(";")[0].strip().lower(), str(dtypes).split(";")[0].strip().lower())
    ins, outs = parse_shapes(input_shapes), parse_shapes(output_shapes)
    if is_conv(op_type):
        f = conv_flops(ins, outs, formats)
        return OpFlops(name, op_type, duration_us, f, dtype, input_shapes, "" if f is not None else
                       "convolution shapes without the model's channels (5-D NC1HWC0 / FRACTAL_Z) or not matching")
    if is_attention(op_type):
        f = attention_flops(op_type, ins)
        return OpFlops(name, op_type, duration_us, f, dtype, input_shapes, "" if f is not None else
                       "attention layout (BNSD/BSND/BSH/SBH/TND) not given by the shapes")
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
