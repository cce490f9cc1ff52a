"""A case is measured only if eager repeats itself: two fresh builds and runs must agree."""

from __future__ import annotations

import json
from pathlib import Path

from jitlab_testing import run_jitlab

DATA = Path(__file__).resolve().parent / "data"


def test_a_case_whose_eager_runs_differ_is_broken_and_numpy_draws_are_seeded():
    result = run_jitlab(
        "capture", str(DATA / "eager_repeats_corpus.py"), "--methods", "jitlab", "--json", timeout=300
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert sorted(report["broken"]) == ["later_build_differs", "numbered"]
    numbered = next(c for c in report["cases"] if c["name"] == "numbered")["results"]["jitlab"]
    assert numbered["error"].startswith(
        "eager is not deterministic: a second eager run differs (initial serial: 3 instead of 2)"
    )
    later = next(c for c in report["cases"] if c["name"] == "later_build_differs")["results"]["jitlab"]
    assert later["equal"] is None and later["broken_case"] is True
    assert later["error"].startswith(
        "eager is not deterministic: another build starts from other values (initial weight"
    ), later["error"]
    noise = next(c for c in report["cases"] if c["name"] == "numpy_noise")["results"]
    # NumPy's generator is seeded before every build and call: eager repeats itself, and jitlab.jit's
    # calls draw what eager's did
    assert noise["jitlab"]["equal"] is True
    assert report["totals"]["jitlab"]["cases"] == 1
