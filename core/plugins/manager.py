"""Loading plugins and calling hooks one plugin at a time.

Plugins come from the ``npuprof`` entry-point group. Built-in ones (modules
under ``npuprof.``) are always loaded; third-party autoloading is turned off
with ``NPUPROF_DISABLE_PLUGIN_AUTOLOAD=1``. A plugin that fails to import is
reported by name and skipped. Hooks are called per plugin so that one
plugin's failure is reported by name and disables only that plugin.

Example::

    host = get_plugin_host()
    host.call("npuprof_start", session=session)
    print(host.describe())
"""
from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Iterable, Optional

import pluggy

from .. import hookspecs
from ..errors import BackendUnavailable, ProfilerConfigError, ProfilerDataError
from ..sigsafe import SignalSafeLock

log = logging.getLogger("npuprof")
ENTRY_POINT_GROUP = "npuprof"
DISABLE_AUTOLOAD_ENV = "NPUPROF_DISABLE_PLUGIN_AUTOLOAD"
# Built-ins, used when the package metadata is unavailable (e.g. running from a source tree).
BUILTIN_PLUGINS = {
    "host": "npuprof.plugins.host",
    "analyzers": "npuprof.plugins.analyzers",
    "exporters": "npuprof.plugins.exporters",
    "trace_view": "npuprof.plugins.trace_view",
    "database": "npuprof.plugins.database",
    "mindspore": "npuprof.integrations.mindspore.plugin",
    "tensorflow": "npuprof.integrations.tensorflow.plugin",
    "pyacl": "npuprof.integrations.pyacl.plugin",
    "cluster": "npuprof.cluster.plugin",
    "report": "npuprof.report.plugin",
    "diff": "npuprof.rundiff.plugin",
    "advise": "npuprof.advise.plugin",
    "ascend": "npuprof.plugins.ascend",
    "ascend_db": "npuprof.plugins.ascend_db_runs",
    "kineto": "npuprof.plugins.kineto",
    "python_memory": "npuprof.plugins.python_memory",
}


@dataclass
class PluginRecord:
    name: str
    module: str
    builtin: bool
    loaded: bool = False
    error: Optional[str] = None
    hooks: list = field(default_factory=list)


class PluginHost:
    """A pluggy manager plus per-plugin error isolation and bookkeeping."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}

    # -- loading --------------------------------------------------------------
    def load_entry_points(self) -> None:
        autoload = os.environ.get(DISABLE_AUTOLOAD_ENV, "").strip().lower() not in ("1", "true", "yes", "on")
        seen = set()
        try:
            eps = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
        except Exception:  # broken metadata of an unrelated distribution
            eps = []
        for ep in eps:
            builtin = ep.value.startswith("npuprof.")
            if ep.name in seen or (not builtin and not autoload):
                if not builtin and not autoload:
                    self.records[ep.name] = PluginRecord(ep.name, ep.value, False,
                                                         error=f"not loaded: {DISABLE_AUTOLOAD_ENV} is set")
                continue
            seen.add(ep.name)
            self._load(ep.name, ep.value, builtin, ep.load)
        for name, module in BUILTIN_PLUGINS.items():
            if name not in seen:
                self._load(name, module, True, lambda m=module: importlib.import_module(m))

    def _load(self, name: str, module: str, builtin: bool, loader: Any) -> None:
        rec = PluginRecord(name, module, builtin)
        self.records[name] = rec
        try:
            plugin = loader()
            self.pm.register(plugin, name=name)
        except ModuleNotFoundError as e:
            if builtin and e.name and module.startswith(e.name):
                rec.error = "not installed"
                return
            rec.error = f"failed to load: {e}"
            log.warning("npuprof: plugin %r (%s) failed to load and is skipped: %s", name, module, e)
        except Exception as e:
            rec.error = f"failed to load: {type(e).__name__}: {e}"
            log.warning("npuprof: plugin %r (%s) failed to load and is skipped: %s", name, module, e)
        else:
            rec.loaded = True
            rec.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])

    def register(self, plugin: Any, name: str) -> None:
        """Register an in-process plugin object or module (tests, scripts)."""
        self.pm.register(plugin, name=name)
        self.records[name] = PluginRecord(name, repr(plugin), False, loaded=True,
                                          hooks=sorted(h.name for h in self.pm.get_hookcallers(plugin) or []))

    def unregister(self, name: str) -> None:
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self.records.pop(name, None)

    # -- calling --------------------------------------------------------------
    def impls(self, hook: str, only: Optional[Iterable[str]] = None) -> list:
        """The implementations of ``hook`` in the order they are called: pluggy's order, the plugin
        registered *last* first (so a third-party plugin, registered after the built-ins, can take a run
        before a built-in reader does), ``tryfirst``/``trylast`` respected."""
        caller = getattr(self.pm.hook, hook)
        wanted = None if only is None else set(only)
        return [i for i in reversed(caller.get_hookimpls()) if wanted is None or i.plugin_name in wanted]

    def call(self, hook: str, only: Optional[Iterable[str]] = None, on_error: Any = None,
             **kwargs: Any) -> list[tuple[str, Any]]:
        """Call ``hook`` on each plugin; returns (plugin, result) for non-None results.

        A plugin that raises is reported by name via ``on_error(name, exc)``
        (default: a warning) and the call goes on with the next plugin.
        ProfilerConfigError and ProfilerDataError propagate: they are the
        user's to see.
        """
        results = []
        for impl in self.impls(hook, only):
            try:
                res = impl.function(*[kwargs[a] for a in impl.argnames])
            except (ProfilerConfigError, BackendUnavailable, ProfilerDataError):
                raise
            except Exception as e:
                if on_error is not None:
                    on_error(impl.plugin_name, e)
                else:
                    log.warning("npuprof: plugin %r failed in %s: %s: %s", impl.plugin_name, hook,
                                type(e).__name__, e)
                continue
            if res is not None:
                results.append((impl.plugin_name, res))
        return results

    def contributions(self, hook: str, kind: type, key: Callable[[Any], str], key_name: str,
                      noun: str) -> list[tuple[Any, str, bool]]:
        """``(item, plugin, built in)`` for each item the plugins return (as a list) from ``hook``: the
        built-in plugins' first (in the order they list them), then the others in the order they were
        loaded. An item that is not a ``kind`` (``noun``: "an Analyzer") is left out with a warning, and
        so is one whose ``key`` another plugin took first (a third party never replaces a built-in).

        Example::

            host.contributions("npuprof_advice_rules", Rule, lambda r: r.id, "rule id", "a Rule")
        """
        answers = list(reversed(self.call(hook)))     # load order
        builtin = {name for name, rec in self.records.items() if rec.builtin}
        answers.sort(key=lambda pair: pair[0] not in builtin)       # stable: load order kept within each kind
        out: list[tuple[Any, str, bool]] = []
        owner: dict[str, str] = {}
        for plugin, found in answers:
            for item in found or []:
                if not isinstance(item, kind):
                    log.warning("npuprof: plugin %r returned %r from %s, not %s; left out", plugin,
                                type(item).__name__, hook, noun)
                    continue
                taken = key(item)
                if taken in owner:
                    log.warning("npuprof: %s %r of plugin %r is taken by plugin %r; left out", key_name, taken,
                                plugin, owner[taken])
                    continue
                owner[taken] = plugin
                out.append((item, plugin, plugin in builtin))
        return out

    def configure(self, config: Any) -> list[str]:
        """Run npuprof_configure per plugin; return the names taking part."""
        active = []
        for impl in self.impls("npuprof_configure"):
            try:
                impl.function(config)
            except BackendUnavailable as e:
                _say_once(f"{impl.plugin_name}:{e}", "npuprof: %s backend skipped: %s", impl.plugin_name, e)
                continue
            except ProfilerConfigError:
                raise
            except Exception as e:
                log.warning("npuprof: plugin %r failed in npuprof_configure and is skipped: %s: %s",
                            impl.plugin_name, type(e).__name__, e)
                continue
            active.append(impl.plugin_name)
        configured = set(active) | {i.plugin_name for i in self.impls("npuprof_configure")}
        # plugins without a configure hook take part unconditionally
        others = {n for n, r in self.records.items() if r.loaded and n not in configured}
        return active + sorted(others)

    def describe(self) -> list[PluginRecord]:
        return list(self.records.values())


_said: set = set()
_said_lock = SignalSafeLock()   # a signal handler must not re-enter it


def _say_once(key: str, msg: str, *args: Any) -> None:
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    log.info(msg, *args)


_host: Optional[PluginHost] = None
_host_lock = SignalSafeLock()   # a signal handler must not re-enter it


def get_plugin_host() -> PluginHost:
    """The process-wide plugin host, loaded on first use."""
    global _host
    with _host_lock:
        if _host is None:
            host = PluginHost()
            host.load_entry_points()
            _host = host
        return _host


def reset_plugin_host() -> None:
    """Forget loaded plugins (tests; after changing the environment)."""
    global _host
    with _host_lock:
        _host = None
