"""Synchronisations, data-dependent shapes and blocking calls in loops, found at the right lines."""

from __future__ import annotations

import pytest
from doctor_helpers import line_of, lines_of, program, view

from jitlab.doctor import diagnose

SAMPLER = program("sampler.py")
MISC = program("misc.py")


@pytest.fixture(scope="module")
def naive():
    return diagnose(f"{SAMPLER}:naive_sample", "make_labels", checks=["sync", "loops", "graph"])


@pytest.fixture(scope="module")
def static():
    return diagnose(f"{SAMPLER}:static_sample", "make_labels", checks=["sync", "loops", "graph"])


def test_naive_sampler_synchronises_at_both_nonzero_lines(naive):
    expected = [line_of(SAMPLER, "nonzero-positives"), line_of(SAMPLER, "nonzero-negatives")]
    assert lines_of(naive.findings, "sync") == expected
    assert lines_of(naive.findings, "data-dependent-shape") == expected
    assert all("sampler.py:" in f.location for f in naive.findings)
    shape = [f for f in naive.findings if f.kind == "data-dependent-shape"]
    assert all("nonzero" in f.detail and "topk" in f.suggestion for f in shape)


def test_naive_sampler_breaks_the_graph_at_nonzero(naive):
    breaks = [f for f in naive.findings if "graph-break" in f.kinds]
    assert sorted(f.line for f in breaks) == [
        line_of(SAMPLER, "nonzero-positives"),
        line_of(SAMPLER, "nonzero-negatives"),
    ]
    assert all("Dynamic shape operator" in view(f, "graph-break") for f in breaks)
    assert naive.graph["graph_break_count"] == 2
    assert naive.graph["compiled_graphs"]["same inputs again"] == 0


def test_static_sampler_has_no_sync_no_shapes_no_graph_break(static):
    kinds = static.kinds()
    assert not kinds & {"sync", "data-dependent-shape", "graph-break", "blocking-in-loop"}
    assert static.graph["graph_count"] == 1
    assert static.graph["graph_break_count"] == 0
    assert static.graph["compiled_graphs"]["same inputs again"] == 0


def test_print_in_a_loop_is_a_blocking_call_in_a_loop():
    found = diagnose(f"{MISC}:print_in_loop", "vector", checks=["sync", "loops"]).findings
    line = line_of(MISC, "print")
    (loop,) = found  # one finding for the line: a print (the cause), inside a loop
    assert (loop.kind, loop.cause, loop.line, loop.count) == ("blocking-in-loop", "sync", line, 5)
    assert f"misc.py:{line - 2}" in view(loop, "blocking-in-loop")  # the `for` header
    assert "printing" in loop.detail or "formatting" in loop.detail


def test_item_in_a_loop_counts_every_iteration():
    found = diagnose(f"{MISC}:item_in_loop", "matrix", checks=["sync", "loops"]).findings
    (loop,) = [f for f in found if f.kind == "blocking-in-loop"]
    assert loop.line == line_of(MISC, "item")
    assert loop.count == 4  # the input has four rows
    assert "Tensor.item()" in loop.detail and "ran 4 times" in view(loop, "blocking-in-loop")


def test_control_flow_and_mask_indexing():
    found = diagnose(f"{MISC}:control_flow", "vector", checks=["sync", "loops"]).findings
    assert lines_of(found, "sync") == [line_of(MISC, "bool"), line_of(MISC, "mask")]
    assert lines_of(found, "data-dependent-shape") == [line_of(MISC, "mask")]
    assert "blocking-in-loop" not in {f.kind for f in found}
    bool_sync = next(f for f in found if f.kind == "sync" and f.line == line_of(MISC, "bool"))
    assert "bool(tensor)" in bool_sync.detail
    assert len(found) == 2  # one finding per line


def test_recompilation_on_every_call_is_reported_with_its_guard():
    found = diagnose(f"{MISC}:counts_calls", "vector", checks=["graph"]).findings
    repeated = [f for f in found if f.kind == "recompile" and "same inputs again" in f.detail]
    assert len(repeated) == 1
    assert "calls" in repeated[0].detail  # the global whose guard fails
    assert "no failed guard" not in repeated[0].detail


@pytest.mark.gpu
def test_cuda_confirms_the_synchronisations():
    found = diagnose(f"{SAMPLER}:naive_sample", "make_cuda_labels", checks=["sync"]).findings
    syncs = [view(f, "sync") for f in found if "sync" in f.kinds]
    assert len(syncs) == 2
    assert all("confirmed on CUDA" in detail for detail in syncs)


@pytest.mark.gpu
def test_the_profiler_confirms_the_synchronisations_in_the_users_function():
    found = diagnose(f"{SAMPLER}:naive_sample", "make_cuda_labels", checks=["sync"]).findings
    syncs = [view(f, "sync") for f in found if "sync" in f.kinds]
    assert len(syncs) == 2  # the two nonzero lines, and no unexplained extra
    assert all("the profiler saw cuda" in detail for detail in syncs)  # a blocking CUDA runtime call
    assert all("in naive_sample()" in detail for detail in syncs)


@pytest.mark.gpu
def test_the_profiler_finds_a_synchronisation_the_interception_does_not_know():
    found = diagnose(f"{MISC}:explicit_synchronize", "cuda_vector", checks=["sync"]).findings
    (sync,) = [f for f in found if f.kind == "sync"]
    assert "cudaDeviceSynchronize" in sync.detail and "explicit_synchronize()" in sync.detail
    assert sync.line == line_of(MISC, "def-explicit-synchronize")


def test_every_kind_of_sync_is_found_at_its_line():
    found = diagnose(f"{MISC}:every_kind_of_sync", "vector", checks=["sync"]).findings
    markers = ["int", "float", "tolist", "cpu", "numpy", "unique", "masked_select", "equal", "repr"]
    assert lines_of(found, "sync") == [line_of(MISC, marker) for marker in markers]
    assert lines_of(found, "data-dependent-shape") == [
        line_of(MISC, "unique"),
        line_of(MISC, "masked_select"),
    ]
    details = {f.line: f.detail for f in found}  # the cause of each line
    assert "int(tensor)" in details[line_of(MISC, "int")]
    assert ".numpy()" in details[line_of(MISC, "numpy")]
    assert "torch.unique" in details[line_of(MISC, "unique")]
