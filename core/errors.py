"""The exceptions npuprof raises.

Every error a user can cause derives from :class:`ProfilerError`, so one
``except npuprof.ProfilerError`` catches them all.

Example::

    >>> from npuprof import Profiler, ProfilerConfigError
    >>> try:
    ...     Profiler(host_sys_usage_freq=0)
    ... except ProfilerConfigError as e:
    ...     print(e.param)
    host_sys_usage_freq
"""
from __future__ import annotations

from typing import Any


# Key set in a log record's ``extra`` when an analysis result also carries the message (a reader's
# warning, an exporter's failure): the command line prints those from the result, so it drops the log
# line and each is printed once.
CARRIED_IN_RESULT = "npuprof_carried_in_result"


class ProfilerError(Exception):
    """Base class of every npuprof error."""


class ProfilerConfigError(ProfilerError, ValueError):
    """An invalid setting, raised before anything starts.

    Carries the parameter name, the value given and a description of what is
    allowed, and renders them as one sentence.
    """

    def __init__(self, param: str, value: Any, allowed: str, hint: str = "") -> None:
        self.param = param
        self.value = value
        self.allowed = allowed
        msg = f"invalid {param}={value!r}: expected {allowed}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class ProfilerDataError(ProfilerError):
    """Unreadable or corrupt profiling data, naming the file and the problem."""

    def __init__(self, path: Any, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class ProfilerStateError(ProfilerError, RuntimeError):
    """A call made in the wrong state (e.g. a second Profiler started while one runs)."""


class ProfilerPluginError(ProfilerError):
    """A plugin failed; the message names the plugin."""

    def __init__(self, plugin: str, problem: str) -> None:
        self.plugin = plugin
        super().__init__(f"plugin {plugin!r}: {problem}")


class BackendUnavailable(ProfilerError):
    """Raised by a backend plugin's ``npuprof_configure`` when it cannot run here.

    The core logs the reason once and carries on without that backend.
    """
