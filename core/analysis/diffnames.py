"""Matching the names of two runs' rows (operators, kernels, APIs, ranges, collectives).

Three stages, each over the names the stages before left unmatched:

1. **exact**: the same text on both sides;
2. **normalised**: :func:`normalise_name` equal on both sides (several names of
   one side may fold into one key: they are compared together);
3. **map**: a user mapping (``--map FILE.json``, :func:`read_name_map`) from
   base names to new names, for cross-hardware diffs where nothing in the text
   says that ``volta_sgemm_128x64_nn`` and ``MatMulV2`` do the same work.

What is left is unmatched and listed as such, never dropped.

Example::

    >>> normalise_name("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)")
    'vectorized_elementwise_kernel'
    >>> normalise_name("aten::addmm"), normalise_name("aclnnAddmm_AddmmKernel_1")
    ('addmm', 'addmm')
    >>> [m.how for m in match_names(["aten::mm", "x"], ["aclnnMm", "y"])]
    ['normalised', 'base only', 'new only']
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Union

from ..errors import ProfilerConfigError

EXACT, NORMALISED, MAPPED, BASE_ONLY, NEW_ONLY = "exact", "normalised", "map", "base only", "new only"
_PREFIXES = ("aten::", "c10d::", "aclnn", "npu::", "torch_npu::", "cuda::", "void ")
_NAMESPACE = re.compile(r"^(?:[A-Za-z_][\w]*::)+")         # at::native:: ...
_KERNEL_SUFFIX = re.compile(r"(?:_\d+)+$|(?:-op\d+)$")     # CANN's "_1", MindSpore's "-op12" instance suffixes


def normalise_name(name: str) -> str:
    """The key names are matched by after an exact match failed: lower case, without
    template and call arguments (``<...>``, ``(...)``, as HTA's short names), return
    type, namespaces, the ``aten::``/``aclnn``/``void`` prefixes, CANN's kernel
    suffix after the first ``_`` of an ``aclnn`` name and instance numbers (``_1``, ``-op3``).
    """
    text = name.strip()
    was_aclnn = text.startswith("aclnn")
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
    text = _strip_brackets(text)
    if " " in text:          # "float at::foo" (return type before the function): keep the function
        text = text.rsplit(" ", 1)[-1]
    text = _NAMESPACE.sub("", text)
    if was_aclnn:            # aclnnAddmm_AddmmKernel_1: the aclnn API name is the operator
        text = text.split("_", 1)[0]
    text = _KERNEL_SUFFIX.sub("", text)
    return text.lower() or name


def _strip_brackets(text: str) -> str:
    """``text`` without anything inside ``<>`` or ``()`` (nested), the brackets included."""
    out, depth = [], 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out).strip()


@dataclass(frozen=True)
class NameMatch:
    """One row of the comparison: the base names and the new names compared together, and how they were matched."""

    base: tuple[str, ...]
    new: tuple[str, ...]
    how: str            # exact | normalised | map | base only | new only

    @property
    def name(self) -> str:
        """What the row is called: the name when both sides agree, else ``base -> new``."""
        if self.how == EXACT or not self.new:
            return " + ".join(self.base)
        if not self.base:
            return " + ".join(self.new)
        b, n = " + ".join(self.base), " + ".join(self.new)
        return b if b == n else f"{b} -> {n}"


def match_names(base: Iterable[str], new: Iterable[str], name_map: Optional[Mapping[str, str]] = None,
                normalise: bool = True, bare: Optional[Callable[[str], str]] = None) -> list[NameMatch]:
    """Match two sides' distinct names (exact, normalised unless ``normalise`` is False, then ``name_map``);
    every name is in one match. ``bare(name)``: the part of a row label the normalisation and the map
    look at (a collective's name without its ``[group]``)."""
    strip = bare or (lambda n: n)
    base_left = list(dict.fromkeys(base))
    new_left = list(dict.fromkeys(new))
    new_set = set(new_left)
    matches = [NameMatch((n,), (n,), EXACT) for n in base_left if n in new_set]
    done = {n for n in base_left if n in new_set}
    base_left = [n for n in base_left if n not in done]
    new_left = [n for n in new_left if n not in done]
    stages = [(NORMALISED, lambda n: normalise_name(strip(n)), lambda n: normalise_name(strip(n)))] if normalise \
        else []
    if name_map:
        stages.append((MAPPED, lambda n: name_map.get(strip(n), "\0unmapped:" + n), strip))
    for how, base_key, new_key in stages:
        by_key_base: dict[str, list[str]] = {}
        for n in base_left:
            by_key_base.setdefault(base_key(n), []).append(n)
        by_key_new: dict[str, list[str]] = {}
        for n in new_left:
            by_key_new.setdefault(new_key(n), []).append(n)
        taken_base: set[str] = set()
        taken_new: set[str] = set()
        for key, names in by_key_base.items():
            if key in by_key_new:
                matches.append(NameMatch(tuple(names), tuple(by_key_new[key]), how))
                taken_base.update(names)
                taken_new.update(by_key_new[key])
        base_left = [n for n in base_left if n not in taken_base]
        new_left = [n for n in new_left if n not in taken_new]
    matches += [NameMatch((n,), (), BASE_ONLY) for n in base_left]
    matches += [NameMatch((), (n,), NEW_ONLY) for n in new_left]
    return matches


def read_name_map(path: Union[str, Path]) -> dict[str, str]:
    """A ``--map`` file: one JSON object of base name -> new name (strings).

    Example file: ``{"volta_sgemm_128x64_nn": "MatMulV2", "aten::linear": "aten::matmul"}``.
    Raises :class:`ProfilerConfigError` naming ``--map`` when the file is not that.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ProfilerConfigError("--map", str(path), f"a readable JSON file ({e.strerror or e})") from None
    except ValueError as e:
        raise ProfilerConfigError("--map", str(path), f"a JSON file ({e})") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise ProfilerConfigError("--map", str(path), 'one JSON object of base name -> new name, e.g. '
                                                      '{"volta_sgemm_128x64_nn": "MatMulV2"}')
    return doc
