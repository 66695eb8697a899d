"""The built-in rules, in the order they are listed (``BUILTIN_RULES``; ids are stable)."""
from __future__ import annotations

from . import breakdown, communication, host, memory, mfu, operators, slowrank

BUILTIN_RULES = [*breakdown.RULES, *communication.RULES, *host.RULES, *operators.RULES, *memory.RULES, *mfu.RULES, *slowrank.RULES]

__all__ = ["BUILTIN_RULES"]
