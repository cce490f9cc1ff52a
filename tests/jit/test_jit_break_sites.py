"""The methods a graph break may resume through are marked where they are defined
(`jitlab.jit.interpreter.sites`), not matched by name: every truth hook and both native-call methods
are marked, a marked function is recognised whatever it is called, and a break still resumes the
program through them (with the result eager gives)."""

import pytest
import torch

import jitlab
from jitlab.jit.interpreter import sites
from jitlab.jit.interpreter.hooks import Hooks
from jitlab.jit.tracing.break_tracer import BreakTracer
from jitlab.jit.tracing.lookasides import Lookasides
from jitlab.jit.tracing.tracer import Tracer


def test_every_truth_hook_and_both_native_call_methods_are_marked():
    for owner in (Hooks, Tracer, BreakTracer, Lookasides):
        assert sites.is_site(owner.truth.__code__, sites.TRUTH), owner
    assert sites.is_site(BreakTracer.call_native.__code__, sites.NATIVE_CALL_OUTER)
    assert sites.is_site(BreakTracer._call_native_or_break.__code__, sites.NATIVE_CALL_INNER)
    assert not sites.is_site(Tracer.call_native.__code__, sites.NATIVE_CALL_OUTER)


def test_a_mark_follows_the_code_not_the_name():
    @sites.resumable(sites.TRUTH)
    def any_name(value):
        return bool(value)

    assert sites.is_site(any_name.__code__, sites.TRUTH)
    assert not sites.is_site(any_name.__code__, sites.NATIVE_CALL_INNER)

    def truth(value):  # named like the hooks, not marked
        return bool(value)

    assert not sites.is_site(truth.__code__, sites.TRUTH)
    with pytest.raises(KeyError):
        sites.resumable("a role that does not exist")


def with_class_pattern(t):
    match t:
        case torch.Tensor():  # MATCH_CLASS, which jitlab.jit does not interpret: a native call
            factor = 2.0
    return t * factor + 1


def test_a_native_call_still_breaks_and_resumes_through_the_marked_methods():
    def program(x):
        y = torch.relu(x) * 3
        z = with_class_pattern(y)  # a call break, through BreakTracer.call_native
        return torch.tanh(z) - x

    jitted = jitlab.jit(program, backend="eager")
    for seed in range(6):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(jitted(x), program(x))
    explained = jitted.explain()
    assert [b.kind for b in explained.graph_breaks] == ["call"], explained
    assert not explained.fallbacks and explained.captures == 1, explained
