"""The background thread that watches a config file.

Every ``poll_interval`` seconds it stats the file; when its content changed
it parses it (:func:`~npuprof.dynamic_profile.request.parse_config_text`) and
hands the result to ``on_request`` or, for a file that cannot be used, the
error to ``on_error``. A file caught half-written (an editor writing in
place) is read again after a short pause before it is called invalid. The
training thread never waits for it: the step path only reads one attribute
the callbacks set.

Example::

    watcher = ConfigWatcher(Path("cfg/profiler_config.json"), "npuprof", 2.0, on_request, on_error, on_poll)
    watcher.start()
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Optional

from ..errors import ProfilerConfigError
from .request import CaptureRequest, check_writable, parse_config_text

SETTLE_SECONDS = 0.2
_MAX_BYTES = 1 << 20


class ConfigWatcher(threading.Thread):
    """Polls one config file in a daemon thread; see the module docstring."""

    def __init__(self, path: Path, dialect: str, poll_interval: float,
                 on_request: Callable[[CaptureRequest], None], on_error: Callable[[str], None],
                 on_poll: Callable[[], None], baseline: Optional[str] = None,
                 default_prof_dir: Optional[Path] = None) -> None:
        super().__init__(name="npuprof-dynamic-watcher", daemon=True)
        self.path = path
        self.dialect = dialect
        self.poll_interval = poll_interval
        self._on_request = on_request
        self._on_error = on_error
        self._on_poll = on_poll
        self._last_text = baseline
        self._default_prof_dir = default_prof_dir
        self._stat: Optional[tuple] = None
        self._missing_reported = False
        self._stop_event = threading.Event()
        self._lock = threading.Lock()     # check_now runs in this thread and, on start()/init, in the caller's

    @property
    def has_baseline(self) -> bool:
        """True when the file's content at start is known (and is not applied: only changes are)."""
        return self._last_text is not None

    def stop(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        while not self._stop_event.wait(self.poll_interval):
            try:
                self.check_now()
                self._on_poll()
            except Exception as e:   # never let the thread die silently: say why, keep polling
                self._on_error(f"dynamic profiling watcher: {type(e).__name__}: {e}")

    def check_now(self) -> None:
        """Read the file if it changed since the last look (also called by ``start()``)."""
        with self._lock:
            self._check_locked()

    def _check_locked(self) -> None:
        text = self._read_if_changed()
        if text is None or text == self._last_text:
            return
        for _ in range(3):
            try:
                request = parse_config_text(text, self.dialect, default_prof_dir=self._default_prof_dir)
                break
            except ProfilerConfigError as e:
                error: ProfilerConfigError = e
            if self._stop_event.wait(SETTLE_SECONDS):
                return
            again = self._read()
            if again is None or again == text:
                self._last_text = text
                self._on_error(f"{self.path}: {error} - the last valid config stays in effect")
                return
            text = again       # still being written: look at the newer content
        else:
            self._last_text = text
            self._on_error(f"{self.path}: {error} - the last valid config stays in effect")
            return
        self._last_text = text
        if request.enabled:
            try:
                check_writable("prof_dir" if self.dialect == "npuprof" else "prof_path", request.prof_dir)
            except ProfilerConfigError as e:
                self._on_error(f"{self.path}: {e} - the last valid config stays in effect")
                return
        self._on_request(request)

    def force(self) -> None:
        """Apply the file's content even if it did not change (``dynamic_profile.start()``)."""
        with self._lock:
            self._last_text = None
            self._stat = None
            self._check_locked()

    def apply_file(self, path: Path) -> None:
        """Apply another config file once, leaving the watched one as it is (``start(config_path)``)."""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            request = parse_config_text(text, self.dialect, default_prof_dir=self._default_prof_dir)
            if request.enabled:
                check_writable("prof_dir" if self.dialect == "npuprof" else "prof_path", request.prof_dir)
        except OSError as e:
            self._on_error(f"{path}: cannot read the config ({e.strerror})")
            return
        except ProfilerConfigError as e:
            self._on_error(f"{path}: {e} - the last valid config stays in effect")
            return
        self._on_request(request)

    def _read_if_changed(self) -> Optional[str]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if not self._missing_reported:
                self._missing_reported = True
                self._on_error(f"{self.path}: the config file was deleted - the last valid config stays in "
                               "effect; write it again to change it")
            self._stat = None
            return None
        except OSError as e:
            self._on_error(f"{self.path}: cannot stat the config file ({e.strerror})")
            return None
        self._missing_reported = False
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if key == self._stat:
            return None
        self._stat = key
        return self._read()

    def _read(self) -> Optional[str]:
        try:
            with open(self.path, "rb") as fh:
                data = fh.read(_MAX_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as e:
            self._on_error(f"{self.path}: cannot read the config file ({e.strerror})")
            return None
        if len(data) > _MAX_BYTES:
            self._on_error(f"{self.path}: larger than 1 MB, not a profiler config - the last valid config "
                           "stays in effect")
            return None
        return data.decode("utf-8", "replace")
