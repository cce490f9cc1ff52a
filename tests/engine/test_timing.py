"""The measuring recipe: first call apart, calibrated blocks, synchronisation inside the timed region."""

import time

from jitlab.engine.spec import TimingPolicy
from jitlab.engine.timing import measure


def test_first_call_is_timed_apart_and_loops_are_calibrated():
    calls = {"n": 0}

    def call():
        calls["n"] += 1
        if calls["n"] == 1:
            time.sleep(0.05)  # a "compilation" on the first call only
        return calls["n"]

    result = measure(call, lambda value: None, TimingPolicy(budget_s=0.3, min_block_s=0.005))
    assert result.first_call_s >= 0.05
    assert result.loops > 1  # a trivial call needs many per block to be far above the timer's resolution
    assert result.samples_s and max(result.samples_s) < 0.05 / 10
    assert result.first_value == 1


def test_every_timed_call_is_synchronised():
    synced = []

    def sync(value):
        synced.append(value)

    produced = []

    def call():
        produced.append(object())
        return produced[-1]

    measure(call, sync, TimingPolicy(budget_s=0.1), asynchronous=True)
    # every value produced, in the timed blocks and the dispatch timing alike, was waited for
    assert [id(v) for v in synced] == [id(v) for v in produced]


def test_dispatch_is_timed_only_for_asynchronous_backends():
    sync_only = measure(lambda: 1, lambda v: None, TimingPolicy(budget_s=0.05))
    assert sync_only.dispatch_s == []
    asynchronous = measure(lambda: 1, lambda v: None, TimingPolicy(budget_s=0.05), asynchronous=True)
    assert len(asynchronous.dispatch_s) >= 5


def test_at_least_one_sample_even_when_one_call_exceeds_the_budget():
    result = measure(lambda: time.sleep(0.03), lambda v: None, TimingPolicy(budget_s=0.01))
    assert len(result.samples_s) >= 1
    assert result.loops == 1
