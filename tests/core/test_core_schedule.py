"""Schedule semantics against torch.profiler's, step by step."""
import pytest

from npuprof import ProfilerAction, ProfilerConfigError, schedule
from npuprof.schedule import TRANSITIONS, Op

A = ProfilerAction


def torch_reference(wait, warmup, active, repeat, skip_first):
    """torch.profiler.schedule's documented algorithm, written independently."""
    def fn(step):
        if step < skip_first:
            return A.NONE
        step -= skip_first
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return A.NONE
        mod = step % num_steps
        if mod < wait:
            return A.NONE
        if mod < wait + warmup:
            return A.WARMUP
        return A.RECORD if mod < num_steps - 1 else A.RECORD_AND_SAVE
    return fn


SETTINGS = [
    (1, 1, 2, 2, 1), (0, 0, 1, 0, 0), (2, 0, 3, 1, 0), (1, 2, 1, 3, 5), (0, 1, 4, 0, 2), (3, 3, 3, 2, 0),
    (0, 0, 5, 1, 0),
]


@pytest.mark.parametrize("wait,warmup,active,repeat,skip_first", SETTINGS)
def test_schedule_matches_torch_semantics(wait, warmup, active, repeat, skip_first):
    ours = schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
    ref = torch_reference(wait, warmup, active, repeat, skip_first)
    assert [ours(s) for s in range(60)] == [ref(s) for s in range(60)]


def test_mindspore_worked_example():
    s = schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=2)
    assert [s(i) for i in range(7)] == [A.NONE, A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE]


@pytest.mark.parametrize("kwargs,param", [
    (dict(wait=-1, active=1), "wait"), (dict(wait=0, active=0), "active"), (dict(wait=0, active=1, warmup=-2), "warmup"),
    (dict(wait=0, active=1, repeat=-1), "repeat"), (dict(wait=0, active=1, skip_first=-1), "skip_first"),
    (dict(wait=1.5, active=1), "wait"), (dict(wait=True, active=1), "wait"), (dict(wait=0, active="2"), "active"),
])
def test_invalid_schedule_arguments_raise(kwargs, param):
    with pytest.raises(ProfilerConfigError) as e:
        schedule(**kwargs)
    assert e.value.param == param and param in str(e.value)


def test_schedule_rejects_negative_step():
    with pytest.raises(ProfilerConfigError):
        schedule(wait=0, active=1)(-1)


def test_transition_table_covers_every_pair_and_exit():
    actions = [A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE]
    for prev in actions:
        for cur in actions + [None]:
            assert (prev, cur) in TRANSITIONS
    # the traps fixed: leaving in RECORD saves, leaving in WARMUP discards
    assert TRANSITIONS[(A.RECORD, None)] == (Op.STOP, Op.SAVE)
    assert TRANSITIONS[(A.WARMUP, None)] == (Op.DISCARD,)


def test_to_dict_roundtrip():
    s = schedule(wait=1, warmup=2, active=3, repeat=4, skip_first=5)
    assert schedule(**s.to_dict()).to_dict() == s.to_dict()
