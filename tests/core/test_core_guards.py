"""The guards around the Profiler (dirlock, exitguard, forkguard): each keeps its invariant, and a signal
never re-enters npuprof code that holds one of its locks, whichever module the lock is in."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import time

import pytest

from npuprof import Profiler
from npuprof.dirlock import DirLock
from npuprof.plugins import manager
from npuprof.sigsafe import SignalSafeLock, held_here


def test_a_signal_safe_lock_marks_its_holder_thread_only():
    lock = SignalSafeLock()
    assert not held_here()
    with lock:
        assert held_here()
        seen = []
        import threading
        t = threading.Thread(target=lambda: seen.append(held_here()))
        t.start()
        t.join()
        assert seen == [False]
    assert not held_here()


def test_a_signal_arriving_while_the_lock_is_taken_or_awaited_finds_the_thread_marked():
    """The handler runs between bytecodes and inside a blocking acquire: the mark must already be set
    (found by the SIGINT reliability test: the mark came one step after the lock, a handler arriving
    in between stopped the profiler and joined a flusher waiting for that very lock)."""
    import signal
    import threading

    lock = SignalSafeLock()
    holder_in, handled, seen = threading.Event(), threading.Event(), []
    main = threading.main_thread().ident
    waiting_line = next(n for n, text in enumerate(inspect.getsourcelines(SignalSafeLock.acquire)[0],
                                                   SignalSafeLock.acquire.__code__.co_firstlineno)
                        if "self._lock.acquire(" in text)

    def hold() -> None:
        # holds the lock until the handler ran, and signals once the main thread is waiting for it
        # (its frame at the blocking acquire, marked before): no sleep decides the order, whatever the load
        with lock:
            holder_in.set()
            while True:
                frame = sys._current_frames().get(main)
                if frame is not None and frame.f_code is SignalSafeLock.acquire.__code__ and \
                        frame.f_lineno == waiting_line:
                    break
                time.sleep(0.001)
            signal.pthread_kill(main, signal.SIGALRM)
            handled.wait(60)

    def on_alarm(*_):
        seen.append(held_here())
        handled.set()

    old = signal.signal(signal.SIGALRM, on_alarm)
    t = threading.Thread(target=hold)
    t.start()
    holder_in.wait()
    try:
        with lock:                       # blocks until the handler ran inside this acquire
            pass
    finally:
        signal.signal(signal.SIGALRM, old)
        t.join()
    assert seen == [True]
    assert not held_here()
    assert lock.acquire(timeout=0.01) and (lock.release() or True) and not held_here()


def test_the_plugin_hosts_lock_is_one_of_them():
    """The old name-based wiring could never match plugins/manager.py: its lock was held unseen."""
    with manager._host_lock:
        assert held_here()


def test_sigterm_while_the_plugin_host_lock_is_held_is_delivered_after_it(tmp_path):
    code = textwrap.dedent(f"""
        import os, signal, time
        from npuprof import Profiler, schedule
        from npuprof.plugins import manager
        prof = Profiler({str(tmp_path)!r}, schedule=schedule(wait=0, active=100))
        prof.start()
        prof.step()
        with manager._host_lock:
            os.kill(os.getpid(), signal.SIGTERM)     # arrives while npuprof's lock is held
            time.sleep(0.1)
            print("still here", flush=True)          # not killed inside the lock
        time.sleep(2)                                # re-delivered: stop, save, default action
        print("not reached", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == -15, done.stderr[-2000:]
    assert "still here" in done.stdout and "not reached" not in done.stdout
    assert list(tmp_path.glob("*_ascend_ms"))        # the window was saved before the default action


def test_the_directory_lock_is_exclusive_across_processes_and_released(tmp_path):
    probe = ("import sys; from npuprof.dirlock import DirLock\n"
             "try:\n    DirLock.acquire(__import__('pathlib').Path(sys.argv[1]), int(sys.argv[2])).release()\n"
             "except Exception as e:\n    print(e); sys.exit(3)")

    def other_process_can_take(rank: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", probe, str(tmp_path), str(rank)], capture_output=True,
                              text=True, timeout=60)

    lock = DirLock.acquire(tmp_path, rank=3)
    held = other_process_can_take(3)
    assert held.returncode == 3 and f"pid {os.getpid()}" in held.stdout and "rank 3" in held.stdout
    assert other_process_can_take(4).returncode == 0   # another rank may share the directory
    lock.release()
    lock.release()                                      # idempotent
    assert other_process_can_take(3).returncode == 0


def test_a_forked_child_holds_no_profiler(tmp_path):
    with Profiler(tmp_path) as prof:
        pid = os.fork()
        if pid == 0:                                 # the child: the parent's profiler is inert here
            from npuprof.profiler import running_profiler
            ok = running_profiler() is None and prof._dir_lock is None and not held_here()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert prof._dir_lock is not None


def test_sigint_landing_in_a_weakref_callback_is_delivered_again(monkeypatch):
    """A KeyboardInterrupt raised inside a weak reference's callback is only printed by Python,
    so the program would go on: the handler delivers SIGINT again instead (it failed a CI run)."""
    import signal
    import sys as _sys

    from npuprof import exitguard

    redelivered = []
    monkeypatch.setattr(exitguard, "_postpone", lambda signum: redelivered.append(signum) or True)
    handler = exitguard.make_signal_handler(signal.default_int_handler, lambda: None)
    scope: dict = {"sys": _sys}
    exec(compile("frame = sys._getframe()", "/usr/lib/python3.11/_weakrefset.py", "exec"), scope)
    handler(signal.SIGINT, scope["frame"])
    assert redelivered == [signal.SIGINT]
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGINT, _sys._getframe())
