"""grammar_sizes' productions (issue 44): sizes moved and pinned by Python, and caches the caller
passes per call. Programs drawn from them alone run equal to eager under jitlab.jit, many from
captured graphs, and they find the wrong result a missing guard gives."""

from __future__ import annotations

import pytest

import jitlab.fuzz.generator as generator
from jitlab.fuzz.grammar import leaf
from jitlab.fuzz.grammar_sizes import aliased_caches, carried_cache, size_moves, size_pinned
from jitlab.fuzz.oracle import compare, eager_method, jit_method, run_program
from jitlab.fuzz.program import render
from jitlab.jit.tracing.call_objects import CallObjects

ONLY_SIZES = [(p, 1.0, False) for p in (leaf, size_moves, size_pinned, carried_cache, aliased_caches)]


def sized_program(monkeypatch, seed: int, index: int) -> str:
    """Program `index` of `seed` drawn from the leaf statement and grammar_sizes' productions only."""
    monkeypatch.setattr(generator, "PRODUCTIONS", ONLY_SIZES)
    return render(generator.generate(seed, index))


def test_the_productions_are_drawn_by_the_whole_grammar():
    features = set()
    for index in range(200):
        features |= generator.generate(3, index).features
    assert {"sizes", "call_objects"} <= features


@pytest.mark.slow
def test_programs_of_sizes_and_caches_equal_eager_and_are_served_by_graphs(monkeypatch, tmp_path):
    served = 0
    for index in range(20):
        source = sized_program(monkeypatch, 0, index)
        reference = run_program(source, eager_method, tmp_path)
        run = run_program(source, jit_method("eager"), tmp_path)
        verdict = compare(reference, run)
        assert verdict.status == "equal", (index, verdict)
        served += bool(run.stats and run.stats["served"])
    assert served >= 6  # 36 of the first 60 at the time of writing


def test_a_cache_passed_twice_is_found_when_distinct_objects_are_not_guarded(monkeypatch, tmp_path):
    source = sized_program(monkeypatch, 1, 119)  # aliased_caches: a fresh pair, one object or two
    reference = run_program(source, eager_method, tmp_path)
    assert compare(reference, run_program(source, jit_method("eager"), tmp_path)).status == "equal"
    monkeypatch.setattr(CallObjects, "guard_call_objects", lambda self: None)  # the mutant
    assert compare(reference, run_program(source, jit_method("eager"), tmp_path)).status == "wrong"
