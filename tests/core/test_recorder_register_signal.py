"""A Ctrl-C landing while a thread's buffers are first registered shows as the user's KeyboardInterrupt
alone, not as an error raised while handling the buffer lookup's AttributeError."""
from __future__ import annotations

import traceback

import pytest

from npuprof.recorder import Recorder


class _InterruptedLock:
    def __enter__(self):
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        return False


def test_a_signal_in_the_first_registration_is_not_chained_onto_the_lookup():
    rec = Recorder(writer=None, offset_ns=0)
    rec._reg_lock = _InterruptedLock()      # the signal lands while the thread's buffers are listed
    with pytest.raises(KeyboardInterrupt) as caught:
        rec.add(0, "step", 1, 2)
    text = "".join(traceback.format_exception(caught.value))
    assert text.count("Traceback") == 1, text
    assert "AttributeError" not in text
    rec._reg_lock = type(rec)(writer=None, offset_ns=0)._reg_lock
    rec.add(0, "step", 1, 2)                # the next call registers the thread as usual
    assert sum(len(b.events) for b in rec._threads) == 6
