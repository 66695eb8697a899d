"""The subscription op record (``ProfOpDesc``) layout and its CRC check.

Little-endian, natural alignment; 72 bytes (2025 collector) or 80 bytes
(2026, adds ``devId``). Always size records with
``acl.prof.get_op_desc_size()``. The first u32 is a CRC-32C (Castagnoli,
reflected polynomial 0x82F63B78, initial value 0xFFFFFFFF, *no* final XOR)
over the remaining ``size - 4`` bytes. Op names and types are not in the
record: they stay inside libmsprofiler and come from ``get_op_name`` /
``get_op_type``.

Example::

    >>> rec = build_record(model_id=3, thread_id=7, op_index=1, start_us=10, end_us=25, exec_us=15)
    >>> decoded = decode_records(rec, 72)
    >>> int(decoded["modelId"][0]), int(decoded["end"][0] - decoded["start"][0])
    (3, 15)
"""
from __future__ import annotations

import struct

import numpy as np

from npuprof.errors import ProfilerDataError

_FIELDS = [("signature", "<u4"), ("modelId", "<u4"), ("flag", "<u4"), ("threadId", "<u4"),
           ("opIndex", "<u8"), ("duration", "<u8"), ("start", "<u8"), ("end", "<u8"),
           ("executionTime", "<u8"), ("cubeFops", "<u8"), ("vectorFops", "<u8")]
DTYPE_72 = np.dtype(_FIELDS)
DTYPE_80 = np.dtype(_FIELDS + [("devId", "<u4"), ("pad", "<u4")])
SIZES = {72: DTYPE_72, 80: DTYPE_80}

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)


def signature(data: bytes) -> int:
    """libmsprofiler's record signature: CRC-32C, init 0xFFFFFFFF, no final XOR.

    >>> hex(signature(b"123456789") ^ 0xFFFFFFFF)  # the standard CRC-32C check value
    '0xe3069283'
    """
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def signatures(records: np.ndarray) -> np.ndarray:
    """Signatures of many records at once: ``records`` is (n, size) uint8, vectorised over n."""
    crc = np.full(records.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for col in range(4, records.shape[1]):
        crc = _TABLE_NP[(crc ^ records[:, col]) & 0xFF] ^ (crc >> 8)
    return crc


def decode_records(data: bytes, size: int, check_crc: bool = True) -> np.ndarray:
    """Parse whole records into a structured array; raises ProfilerDataError.

    ``len(data)`` must be a multiple of ``size`` and every signature must
    match (the rules ``get_op_num`` applies).
    """
    dtype = SIZES.get(size)
    if dtype is None:
        raise ProfilerDataError("<subscription pipe>", f"op record size {size} is not one of {sorted(SIZES)}")
    if len(data) % size:
        raise ProfilerDataError("<subscription pipe>", f"{len(data)} bytes is not a multiple of the {size}-byte "
                                                       "record size")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, size)
    recs = raw.view(dtype).reshape(-1)
    if check_crc and len(recs):
        bad = np.nonzero(signatures(raw) != recs["signature"])[0]
        if len(bad):
            raise ProfilerDataError("<subscription pipe>", f"{len(bad)} of {len(recs)} op records fail the CRC "
                                                           f"check (first at record {int(bad[0])})")
    return recs


def build_record(model_id: int, thread_id: int, op_index: int, start_us: int, end_us: int, exec_us: int = 0,
                 flag: int = 0, device: int = 0, size: int = 72) -> bytes:
    """One signed record (tests, and tools that replay records)."""
    body = struct.pack("<IIIQQQQQQQ", model_id, flag, thread_id, op_index, end_us - start_us, start_us, end_us,
                       exec_us, 0, 0)
    if size == 80:
        body += struct.pack("<II", device, 0)
    elif size != 72:
        raise ValueError(f"size must be 72 or 80, not {size}")
    return struct.pack("<I", signature(body)) + body
