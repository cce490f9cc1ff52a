"""Differential test of jitlab.jit over the whole corpus: for every case, three calls through
`jitlab.jit(model, backend="eager")` (call i on inputs drawn under seed i) give the outputs, the
model state, the inputs afterwards and the observed outside state that eager execution gives.
Whether the JIT made one full graph is not asserted here (that is the capture rate); a wrong result
or a crash eager would not have is a failure for every case."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitlab.capture import Case, load_corpora
from jitlab.capture.compare import state_paths
from jitlab.capture.worker import compare_runs, run_calls
from jitlab.jit import JitFunction, JitModule

REPO = Path(__file__).resolve().parents[2]
CASES = load_corpora(sorted(str(p) for p in (REPO / "corpus").glob("*.py")))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jit_equals_eager_over_three_calls(case: Case):
    paths = state_paths(case.build_model())
    reference = run_calls(case, "eager", 3, paths)
    run = run_calls(case, "jitlab", 3, paths)
    assert compare_runs(reference, run) is None
    compiled = run["captured"].call
    assert isinstance(compiled, (JitFunction, JitModule))  # the calls really went through jitlab.jit
    report = compiled.explain()
    assert report.graphs or report.fallbacks  # it captured, or said why it ran eagerly
