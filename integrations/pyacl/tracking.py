"""Watching the app's own acl calls so the contract can be checked up front.

:func:`track_acl` wraps ``acl.init``, ``acl.finalize`` and the ``acl.mdl``
load/unload calls of the imported ``acl`` module (same functions, same
return values) and tells :data:`~.contract.CONTRACT` what happened: whether
acl is initialised, whether acl.json switched profiling on, which models are
loaded. ``acl.finalize`` also runs the registered before-finalize callbacks
first, so a still-initialised ``acl.prof`` is finalized in the documented
order (prof.finalize, then acl.finalize).

Call it before ``acl.init`` for full checks; npuprof calls it itself when an
:class:`~.profiler.AclProfiler` or the pyACL backend is created, and what
happened before that is treated as unknown.

Example::

    import acl
    from npuprof.integrations.pyacl import track_acl
    track_acl()
    acl.init("acl.json")
"""
from __future__ import annotations

import functools
import logging
from types import ModuleType
from typing import Any, Callable, Optional

from .acl_json import switched_on_source
from .contract import CONTRACT

log = logging.getLogger("npuprof")
_MARK = "__npuprof_wrapped__"
_before_finalize: list = []
_LOADERS = ("load_from_file", "load_from_mem", "load_from_file_with_mem", "load_from_mem_with_mem")


def _wrap(module: Any, name: str, make: Callable[[Callable], Callable]) -> None:
    fn = getattr(module, name, None)
    if fn is None or getattr(fn, _MARK, False):
        return
    wrapped = make(fn)
    try:
        functools.update_wrapper(wrapped, fn)
    except AttributeError:  # some builtins lack __dict__ / __qualname__
        pass
    setattr(wrapped, _MARK, True)
    setattr(wrapped, "__npuprof_original__", fn)
    try:
        setattr(module, name, wrapped)
    except (AttributeError, TypeError):  # a read-only extension module: stay untracked
        log.debug("npuprof: cannot track acl.%s", name)


def _ret_code(ret: Any) -> Any:
    return ret[-1] if isinstance(ret, tuple) else ret


def track_acl(acl: Optional[ModuleType] = None) -> bool:
    """Install the call tracking on ``acl`` (imported if not given). Idempotent.

    Returns True when tracking is (now) installed.
    """
    if acl is None:
        from ._acl import load_acl

        acl = load_acl()

    def make_init(fn: Callable) -> Callable:
        def init(*args: Any, **kwargs: Any) -> Any:
            ret = fn(*args, **kwargs)
            if _ret_code(ret) == 0:
                path = args[0] if args else kwargs.get("config_path")
                with CONTRACT.lock:
                    CONTRACT.on_acl_init(switched_on_source(path if isinstance(path, str) else None))
            return ret
        return init

    def make_finalize(fn: Callable) -> Callable:
        def finalize(*args: Any, **kwargs: Any) -> Any:
            for cb in list(_before_finalize):
                try:
                    cb()
                except Exception as e:  # never block the app's own acl.finalize
                    log.warning("npuprof: closing acl.prof before acl.finalize failed: %s", e)
            ret = fn(*args, **kwargs)
            if _ret_code(ret) == 0:
                with CONTRACT.lock:
                    CONTRACT.on_acl_finalize()
            return ret
        return finalize

    def make_load(fn: Callable) -> Callable:
        def load(*args: Any, **kwargs: Any) -> Any:
            ret = fn(*args, **kwargs)
            if isinstance(ret, tuple) and len(ret) == 2 and ret[1] == 0:
                with CONTRACT.lock:
                    CONTRACT.on_model_load(ret[0])
            return ret
        return load

    def make_unload(fn: Callable) -> Callable:
        def unload(model_id: Any, *args: Any, **kwargs: Any) -> Any:
            ret = fn(model_id, *args, **kwargs)
            if _ret_code(ret) == 0:
                with CONTRACT.lock:
                    CONTRACT.on_model_unload(model_id)
            return ret
        return unload

    _wrap(acl, "init", make_init)
    _wrap(acl, "finalize", make_finalize)
    mdl = getattr(acl, "mdl", None)
    if mdl is not None:
        for name in _LOADERS:
            _wrap(mdl, name, make_load)
        _wrap(mdl, "unload", make_unload)
    return bool(getattr(getattr(acl, "init", None), _MARK, False))


def untrack_acl(acl: ModuleType) -> None:
    """Restore the original functions (tests)."""
    targets = [(acl, "init"), (acl, "finalize")]
    mdl = getattr(acl, "mdl", None)
    if mdl is not None:
        targets += [(mdl, n) for n in (*_LOADERS, "unload")]
    for module, name in targets:
        fn = getattr(module, name, None)
        original = getattr(fn, "__npuprof_original__", None)
        if original is not None:
            setattr(module, name, original)


def before_acl_finalize(callback: Callable[[], None]) -> None:
    """Run ``callback`` before the app's acl.finalize (once registered, kept until removed)."""
    if callback not in _before_finalize:
        _before_finalize.append(callback)


def remove_before_acl_finalize(callback: Callable[[], None]) -> None:
    if callback in _before_finalize:
        _before_finalize.remove(callback)
