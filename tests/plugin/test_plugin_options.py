"""pytest-benchmark's habits in the jitlab_bench plugin: compare with a stored run and fail the session
on a regression, write the run as JSON, run each function once with --jitlab-disable, and peak memory
per test (not the pytest process's ever-growing maximum)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from jitlab.schemas import load_schema
from jitlab.store import Store

pytest_plugins = ["pytester"]

USER_TESTS = """
import os
from pathlib import Path

import numpy as np

FACTOR = int(os.environ.get("WORK_FACTOR", "1"))


def work(n):
    calls = os.environ.get("CALLS_FILE")
    if calls:
        with open(calls, "a") as f:
            f.write("call\\n")
    return sum(range(n * FACTOR))


def allocate(n):
    return float(np.ones(n).sum())


def test_big_allocation_first(jitlab_bench):
    assert jitlab_bench(allocate, 20_000_000, backend="numpy", size=20_000_000) == 20_000_000


def test_small_after_it(jitlab_bench):
    assert jitlab_bench(work, 20_000, size=20_000) == sum(range(20_000 * FACTOR))
"""

BASE = ["--jitlab-budget", "0.3", "-p", "no:cacheprovider"]


@pytest.fixture
def session(pytester, tmp_path, monkeypatch):
    pytester.makepyfile(test_user=USER_TESTS)
    store = tmp_path / "bench.sqlite"

    def run(*args: str, factor: int = 1, calls_file: str | None = None):
        monkeypatch.setenv("WORK_FACTOR", str(factor))
        if calls_file:
            monkeypatch.setenv("CALLS_FILE", calls_file)
        return pytester.runpytest_subprocess("--jitlab-store", str(store), *BASE, *args)

    return run, store


def test_json_file_and_per_test_peak_memory(session, tmp_path):
    run, store = session
    out = tmp_path / "out" / "bench.json"
    result = run("--jitlab-json", str(out), "--jitlab-machine", "bench-box")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"jitlab: run written as JSON to {out}"])
    document = json.loads(out.read_text())
    jsonschema.validate(document, load_schema("run"), cls=jsonschema.Draft202012Validator)
    assert document["machine"]["fingerprint"] == "bench-box" and document["summary"]["ok"] == 2
    cells = {c["workload"]: c for c in document["cells"]}
    big, small = cells["test_big_allocation_first"], cells["test_small_after_it"]
    # 160 MB allocated per call by the first test; the second, measured after it, is not charged with it
    assert big["extras"]["rss_growth_bytes"] > 100e6
    assert small["peak_rss_bytes"] < big["peak_rss_bytes"] - 100e6
    assert small["extras"]["rss_growth_bytes"] < 50e6


def test_compare_fail_fails_the_session_on_a_regression(session):
    run, store = session
    run().assert_outcomes(passed=2)
    slower = run("--jitlab-compare", "last", "--jitlab-compare-fail", "50", factor=4)
    slower.assert_outcomes(passed=2)  # every test passed...
    assert slower.ret == pytest.ExitCode.TESTS_FAILED  # ...and the session fails on the regression
    slower.stdout.fnmatch_lines(
        [
            "*jitlab: run 2 against run 1*",
            "*significantly slower than in run 1 by more than 50%: the session fails*",
            "*test_small_after_it · python · n=20000: +*",
        ]
    )
    same = run("--jitlab-compare", "1", "--jitlab-compare-fail", "100")
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["*no cell significantly slower than in run 1 by more than 100%*"])
    assert [r.run_id for r in Store(store).runs()] == [1, 2, 3]


def test_compare_with_an_unknown_run_is_reported_not_a_crash(session):
    run, _ = session
    result = run("--jitlab-compare", "9")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*jitlab: --jitlab-compare: no run 9 in*"])


def test_disable_calls_each_function_once_and_stores_nothing(session, tmp_path):
    run, store = session
    calls = tmp_path / "calls.txt"
    result = run("--jitlab-disable", calls_file=str(calls))
    result.assert_outcomes(passed=2)
    assert calls.read_text().count("call") == 1
    assert not store.exists()


def test_usage_errors(session):
    run, _ = session
    result = run("--jitlab-compare-fail", "5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--jitlab-compare-fail needs --jitlab-compare RUN*"])
