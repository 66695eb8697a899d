"""The documented pyACL profiling contract, rule by rule, and its error type.

Each :class:`Rule` carries the ACL error code the library returns (or, where
the documentation names no code, the closest one; marked ``documented=False``)
and a sentence saying what the rule is. :class:`AclProfilingError` is raised
for a broken rule before the library is called, and for a non-zero return
code from the library itself.

Example::

    >>> from npuprof.integrations.pyacl.errors import AclProfilingError, RULES
    >>> err = AclProfilingError.for_rule("START_NEEDS_INIT", "acl.prof.start")
    >>> err.code, err.code_name
    (100043, 'ACL_ERROR_PROF_NOT_RUN')
    >>> "acl.prof.init" in str(err)
    True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from npuprof.errors import ProfilerError

from . import constants as C


@dataclass(frozen=True)
class Rule:
    """One rule of the call-order contract."""

    key: str
    code: int
    text: str
    documented: bool = True  # False: the docs state the rule but no code; ``code`` is npuprof's choice


RULES: dict[str, Rule] = {r.key: r for r in (
    Rule("INIT_AFTER_ACL_INIT", C.ACL_ERROR_UNINITIALIZE,
         "acl.prof.init must be called after acl.init"),
    Rule("INIT_BEFORE_MODEL_LOAD", C.ACL_ERROR_PROFILING_FAILURE,
         "acl.prof.init must be called before any model is loaded", documented=False),
    Rule("ONE_INIT_PAIR", C.ACL_ERROR_REPEAT_INITIALIZE,
         "acl.prof.init/acl.prof.finalize may be used as one pair only, once per process"),
    Rule("START_NEEDS_INIT", C.ACL_ERROR_PROF_NOT_RUN,
         "acl.prof.start, acl.prof.stop, acl.prof.set_config and acl.prof.finalize need a successful "
         "acl.prof.init first"),
    Rule("CMD_MODE_ACTIVE", C.ACL_ERROR_PROF_ALREADY_RUN,
         "profiling is already switched on by acl.json, msprof or the environment, so the acl.prof "
         "init/start/stop/finalize API must not be used (set \"switch\": \"off\" in acl.json to use the API)"),
    Rule("NO_DUPLICATE_DEVICE", C.ACL_ERROR_PROF_ALREADY_RUN,
         "acl.prof.start must not name a device that an earlier start has not stopped yet"),
    Rule("NO_DUPLICATE_CONFIG", C.ACL_ERROR_PROF_ALREADY_RUN,
         "acl.prof.start must not be called again with a configuration that is already started"),
    Rule("STOP_SAME_CONFIG", C.ACL_ERROR_INVALID_PROFILING_CONFIG,
         "acl.prof.stop must receive the same configuration that acl.prof.start received"),
    Rule("START_STOP_PAIRED", C.ACL_ERROR_PROFILING_FAILURE,
         "every acl.prof.start must be paired with an acl.prof.stop before acl.prof.finalize",
         documented=False),
    Rule("NO_SUBSCRIBE_IN_API_MODE", C.ACL_ERROR_PROF_API_CONFLICT,
         "acl.prof.model_subscribe, acl.prof.get_* and acl.prof.model_unsubscribe must not be called between "
         "acl.prof.init and acl.prof.finalize"),
    Rule("NO_INIT_WHILE_SUBSCRIBED", C.ACL_ERROR_PROF_API_CONFLICT,
         "acl.prof.init must not be called while a model is subscribed (collection and subscription "
         "must not be mixed)"),
    Rule("NO_REPEAT_SUBSCRIBE", C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE,
         "a model may be subscribed only once until it is unsubscribed"),
    Rule("UNSUBSCRIBE_SUBSCRIBED", C.ACL_ERROR_INVALID_MODEL_ID,
         "acl.prof.model_unsubscribe needs a model that is subscribed"),
    Rule("MSPROFTX_IN_START", C.ACL_ERROR_PROF_NOT_RUN,
         "msproftx calls (stamps, mark, push/pop, range_start/range_stop) must be made between acl.prof.start "
         "and acl.prof.stop of a configuration that includes ACL_PROF_MSPROFTX", documented=False),
    Rule("PUSH_POP_SAME_THREAD", C.ACL_ERROR_INVALID_PARAM,
         "acl.prof.push and acl.prof.pop must be paired on the same thread (use range_start/range_stop across "
         "threads)", documented=False),
    Rule("STAMP_PAIRS", C.ACL_ERROR_INVALID_PARAM,
         "create_stamp/destroy_stamp and range_start/range_stop are used in pairs; the stamp or range id must be "
         "live", documented=False),
    Rule("VALID_ARGUMENT", C.ACL_ERROR_INVALID_PARAM,
         "the arguments must be in the documented range"),
    Rule("VALID_PATH", C.ACL_ERROR_INVALID_FILE,
         "the profiling output path must be a non-empty path that can be created and written"),
    Rule("LIBRARY_RETURN", C.ACL_ERROR_PROFILING_FAILURE,
         "the acl library reported an error"),
)}


class AclProfilingError(ProfilerError):
    """A pyACL profiling call broke the contract or failed in the library.

    Attributes: ``code`` (ACL error code), ``code_name``, ``rule`` (the
    :class:`Rule`, or None for an unexplained library failure), ``call`` (the
    acl function concerned) and ``from_library`` (True when the code came back
    from acl rather than from npuprof's pre-check).
    """

    def __init__(self, code: int, message: str, rule: Optional[Rule] = None, call: str = "",
                 from_library: bool = False) -> None:
        self.code = int(code)
        self.code_name = C.error_name(code)
        self.rule = rule
        self.call = call
        self.from_library = from_library
        super().__init__(f"{message} [{self.code_name} {self.code}]")

    @classmethod
    def for_rule(cls, key: str, call: str, detail: str = "") -> "AclProfilingError":
        """The error for breaking rule ``key`` in ``call`` (checked before calling acl)."""
        rule = RULES[key]
        msg = f"{call}: rule broken: {rule.text}"
        if detail:
            msg += f"; {detail}"
        return cls(rule.code, msg, rule, call)

    @classmethod
    def from_return(cls, call: str, code: int, rule_key: Optional[str] = None,
                    detail: str = "") -> "AclProfilingError":
        """The error for a non-zero return code ``code`` of ``call``.

        ``rule_key`` names the rule the code means for this call when known.
        """
        rule = RULES.get(rule_key) if rule_key else None
        msg = f"{call} returned {int(code)} ({C.error_meaning(code)})"
        if rule is not None:
            msg += f": rule broken: {rule.text}"
        if detail:
            msg += f"; {detail}"
        return cls(code, msg, rule, call, from_library=True)
