"""Reading the size of an outside dict or set the call has only added keys to: `len()` and truth
are guarded on the state before the call (its size, and whether each added key was there), so such
calls are served by the cache and stay exact when the container changes between calls. Before,
any read after a change made the call fall back ("reads a dict after changing it in the same
call"); the break corpus's dict_counts_by_data and set_of_seen_classes did."""

from __future__ import annotations

import torch

from jitlab.jit import jit

COUNTS: dict = {}
SEEN: set = set()


def count_key(x, key):
    COUNTS[key] = COUNTS.get(key, 0) + 1
    return x * COUNTS[key] + len(COUNTS)


def write_key(x, key):
    COUNTS[key] = 1  # not read before: only the guard on the key's presence tells the new size
    return x * len(COUNTS)


def see_key(x, key):
    SEEN.add(key)
    if SEEN:
        x = x + 1
    return x * len(SEEN)


def _compare(fn, state, schedule):
    """Run `schedule` (key, change-between-calls) eagerly and jitted from the same starting state;
    outputs and the container must match after every call."""
    jitted = jit(fn, backend="eager")
    start = state.copy()
    eager_out, eager_states = [], []
    for key, change in schedule:
        change(state)
        eager_out.append(fn(torch.ones(3), key))
        eager_states.append(state.copy())
    state.clear()
    state.update(start)
    for (key, change), expected, expected_state in zip(schedule, eager_out, eager_states):
        change(state)
        assert torch.equal(jitted(torch.ones(3), key), expected)
        assert state == expected_state
    return jitted.explain()


def _keep(state):
    pass


def test_len_of_a_dict_after_item_writes_is_cached_and_exact():
    COUNTS.clear()
    schedule = [
        ("a", _keep),
        ("a", _keep),  # the key is there now: the size stays
        ("b", _keep),  # a new key: the size grows
        ("b", lambda d: d.update(b=0)),  # the same state as before the call...
        ("b", lambda d: d.update(b=0)),  # ...twice: a cache hit
        ("a", lambda d: d.pop("a")),  # removed between calls: added again
        ("a", lambda d: d.pop("a")),  # the same again: a hit
        ("c", lambda d: d.clear()),
    ]
    report = _compare(count_key, COUNTS, schedule)
    assert report.fallbacks == ()
    assert sum(graph.hits for graph in report.graphs) > 0


def _holding(key):
    def change(container):
        container.clear()
        if isinstance(container, set):
            container.add(key)
        else:
            container[key] = 1

    return change


def test_the_guards_tell_apart_states_of_one_size_holding_other_keys():
    """{1} and {2} have one size; adding 2 makes two keys of the first and one of the second."""
    for fn, state in ((see_key, SEEN), (write_key, COUNTS)):
        state.clear()
        schedule = [(2, _holding(1)), (2, _holding(2)), (2, _holding(1)), (2, _holding(2))]
        report = _compare(fn, state, schedule)
        assert report.fallbacks == ()
        assert sum(graph.hits for graph in report.graphs) == 2


def test_len_and_truth_of_a_set_after_adds_are_cached_and_exact():
    SEEN.clear()
    schedule = [
        (1, _keep),
        (1, _keep),
        (2, _keep),
        (2, lambda s: s.discard(2)),
        (3, lambda s: s.clear()),
        (3, _keep),
    ]
    report = _compare(see_key, SEEN, schedule)
    assert report.fallbacks == ()
    assert sum(graph.hits for graph in report.graphs) > 0


def other_change_then_len(x, key):
    COUNTS[key] = 1
    del COUNTS["gone"]  # not an added key: the size can no longer be told from the state before
    return x * len(COUNTS)


def test_another_change_then_a_read_is_guarded_on_the_whole_content_before():
    """A key deleted as well: the size no longer follows from the size before and the keys added, so
    the dict's keys and values before the call are guarded (test_jit_changed_list_reads.py). It ran
    eagerly ("reads a dict after changing it in the same call")."""
    COUNTS.clear()
    put_back = lambda d: d.update(gone=0)  # noqa: E731
    reset = lambda d: (d.clear(), d.update(gone=0))  # noqa: E731
    schedule = [("a", put_back), ("b", put_back), ("a", reset), ("a", reset), ("a", put_back)]
    report = _compare(other_change_then_len, COUNTS, schedule)
    assert report.fallbacks == ()
    assert sum(graph.hits for graph in report.graphs) == 2  # calls 3 and 4 start as call 1 did
