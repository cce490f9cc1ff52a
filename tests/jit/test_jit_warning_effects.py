"""`warnings.warn` in a jitted call is replayed as an effect after the graph: one graph, and the
warning shows (or not) on every call as the filters and the module's registry decide, naming the
user's line. It used to split the graph at a call break (ParityBench's
asteroid-team/torch-audiomentations `RandomCrop`, whose forward warns and returns its input, was
then no full graph)."""

from __future__ import annotations

import warnings

import pytest
import torch

from jitlab.jit import jit


def warn_then_scale(x):
    y = x * 2
    warnings.warn("audio length less than cropping length", UserWarning, stacklevel=1)
    return y + 1


WARN_LINE = warn_then_scale.__code__.co_firstlineno + 2


def _shown(fn, x, action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        out = fn(x)
    return out, [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def test_a_warning_is_one_graph_and_shows_on_every_call_from_the_users_line():
    jitted = jit(warn_then_scale, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        out, shown = _shown(jitted, x, "always")
        assert torch.equal(out, x * 2 + 1)
        assert shown == [("audio length less than cropping length", UserWarning, __file__, WARN_LINE)]
    report = jitted.explain()
    assert report.fallbacks == () and report.breaks == () and len(report.graphs) == 1
    assert report.graphs[0].hits == 2


def test_other_filters_miss_the_guard_and_the_call_shows_what_eager_shows():
    jitted = jit(warn_then_scale, backend="eager")
    for action in ("always", "ignore", "always", "ignore"):
        x = torch.randn(3)
        assert _shown(jitted, x, action)[1] == _shown(warn_then_scale, x, action)[1], action
    assert jitted.explain().captures == 2  # one entry per set of filters


def test_the_default_filter_shows_a_warning_once_per_place_as_eager_code():
    jitted = jit(warn_then_scale, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            jitted(torch.randn(3))
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, WARN_LINE)]


def test_an_error_filter_raises_the_warning_at_its_line_as_eager_code():
    calls = []

    def warn_between_effects(x):
        calls.append("before")
        warnings.warn("stop here", RuntimeWarning, stacklevel=1)
        calls.append("after")
        return x + 1

    jitted = jit(warn_between_effects, backend="eager")
    for _ in range(2):
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeWarning, match="stop here"):
                jitted(torch.randn(2))
        assert calls == ["before"]
