"""Counting instructions under Valgrind (`--measure instructions`): the counts are the calls' own,
they repeat from one process to the next, they scale with the work, every backend the issue names
can be counted, and what cannot be counted is refused in one line. No test here reads a clock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest
from jitlab_testing import REPO, run_jitlab

from jitlab.engine import valgrind
from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.schemas import load_schema

WORKLOAD = str(REPO / "benchmarks" / "fixed_work.py")
requires_valgrind = pytest.mark.skipif(
    valgrind.valgrind_path() is None and os.environ.get("CI") != "true", reason="Valgrind is not installed"
)

COUNT_SCRIPT = """
import json, sys
from jitlab.engine.counting import count_instructions

def loop(n):
    total = 0
    for i in range(n):
        total += i * i & 0xFF
    return total

out = {}
for n in (10_000, 20_000):
    out[n] = count_instructions(lambda: loop(n), lambda value: None).per_call
print(json.dumps(out))
"""


def test_client_requests_do_nothing_outside_valgrind():
    assert valgrind.client_request(valgrind.RUNNING_ON_VALGRIND) == 0
    assert not valgrind.running_on_valgrind()
    assert valgrind.client_request(valgrind.TOGGLE_COLLECT) == 0  # harmless on a real CPU


@requires_valgrind
@pytest.mark.slow
def test_counts_are_the_calls_own_and_repeat_between_processes(tmp_path):
    """Two processes under Callgrind count a loop identically (to 0.01%), and twice the iterations
    count twice the instructions (to 0.5%): interpreter start-up, which varies by millions, is not in it."""
    runs = []
    for k in range(2):
        out = str(tmp_path / f"callgrind-{k}.out")
        done = subprocess.run(
            [*valgrind.command(out), sys.executable, "-c", COUNT_SCRIPT],
            env={**os.environ, **valgrind.environment(), valgrind.OUT_ENV: out},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        runs.append({int(n): counts for n, counts in json.loads(done.stdout).items()})
    for n in (10_000, 20_000):
        first, second = sorted(runs[0][n])[2], sorted(runs[1][n])[2]
        assert abs(second / first - 1) < 1e-4
        assert max(runs[0][n]) / min(runs[0][n]) - 1 < 1e-3
    assert sorted(runs[0][20_000])[2] / sorted(runs[0][10_000])[2] == pytest.approx(2.0, rel=0.005)


@requires_valgrind
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["python", "numpy", "numba", "torch"])
def test_every_named_backend_is_counted_in_a_worker(backend):
    spec = CellSpec("pi", backend, 1000, {}, None, 1, TimingPolicy(processes=1, measure="instructions"))
    result = execute_cell(spec, timeout_s=600)
    assert result.status == "ok", result.reason
    counts = result.instructions
    assert len(counts) >= 3 and min(counts) > 0
    assert max(counts) / min(counts) - 1 < 0.01  # blocks of one process agree
    assert result.timing_method == "instructions (callgrind)" and result.samples_s == ()
    assert result.values[0] == pytest.approx(3.14, abs=0.3)


@requires_valgrind
def test_a_backend_that_cannot_be_counted_is_refused_in_one_line(store):
    done = run_jitlab("run", "pi", "--measure", "instructions", "--backends", "numpy,torch-compile",
                      "--store", str(store))  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr.strip().count("\n") == 0
        and "torch-compile cannot be measured in instructions" in done.stderr
    )
    threads = run_jitlab("run", "pi", "--measure", "instructions", "--threads", "2", "--store", str(store))
    assert threads.returncode == 2 and "counts one thread" in threads.stderr
    assert not store.exists()  # refused before anything was written


def test_without_valgrind_the_run_says_how_to_install_it(store, tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python")
    done = run_jitlab("run", "pi", "--measure", "instructions", "--backends", "numpy", "--store", str(store),
                      env={"PATH": str(bare)})  # fmt: skip
    assert done.returncode == 2
    assert (
        "needs Valgrind, which is not installed" in done.stderr and "apt-get install valgrind" in done.stderr
    )
    assert done.stderr.strip().count("\n") == 0


@requires_valgrind
@pytest.mark.slow
def test_counted_runs_compare_on_instructions_and_call_a_1_percent_change(store):
    """Two runs of the same loop compare as the same, a 1% longer loop is called slower: on counts,
    which load does not move."""
    runs = []
    for factor in (1.0, 1.0, 1.01):
        done = run_jitlab("run", WORKLOAD, "--backends", "python", "--sizes", "5e3", "--measure", "instructions",
                          "--store", str(store), "--no-plot", "--json", env={"JITLAB_BENCH_FACTOR": str(factor)})  # fmt: skip
        assert done.returncode == 0, done.stderr
        jsonschema.validate(json.loads(done.stdout), load_schema("run"), cls=jsonschema.Draft202012Validator)
        cell = json.loads(done.stdout)["cells"][0]
        assert cell["measure"] == "instructions" and cell["instructions"] > 1e6 and cell["median_s"] is None
        runs.append(json.loads(done.stdout)["run_id"])
    same = json.loads(
        run_jitlab("compare", str(runs[0]), str(runs[1]), "--store", str(store), "--json").stdout
    )
    slower = run_jitlab(
        "compare", str(runs[0]), str(runs[2]), "--store", str(store), "--json", "--fail-above", "0.5"
    )
    assert same["cells"][0]["verdict"] == "same" and same["cells"][0]["basis"] == "instructions"
    assert same["cells"][0]["ratio"] == pytest.approx(1.0, abs=1e-4)
    cell = json.loads(slower.stdout)["cells"][0]
    assert (
        slower.returncode == 1
        and cell["verdict"] == "slower"
        and cell["ratio"] == pytest.approx(1.01, abs=0.001)
    )
    wall = run_jitlab(
        "compare", str(runs[0]), str(runs[1]), "--store", str(store), "--measure", "wall", "--json"
    )
    assert "not comparable: run A measured instructions" in json.loads(wall.stdout)["cells"][0]["reason"]


def test_valgrind_is_installed_by_ci():
    assert "apt-get install -y -qq valgrind" in (REPO / ".ci" / "run").read_text()
    if os.environ.get("CI") == "true":
        assert shutil.which("valgrind")
