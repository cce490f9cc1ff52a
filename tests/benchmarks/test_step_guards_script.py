"""benchmarks/step_guards.py runs as a user would run it: it finds a training step's entry, its guard
code alone hits on the captured arguments, and it prints one row per model. The times are a
benchmark, not a test: only their presence is checked."""

import subprocess
import sys

import pytest
from jitlab_testing import REPO


@pytest.mark.slow
def test_step_guards_script_prints_a_row_per_model():
    script = str(REPO / "benchmarks" / "step_guards.py")
    result = subprocess.run(
        [sys.executable, script, "--models", "BertForMaskedLM"], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stderr[-2000:]
    header, row, *busy = result.stdout.strip().splitlines()
    assert header.split()[:3] == ["model", "guards", "total"]
    name, guards, *times = row.split()
    assert name == "BertForMaskedLM" and int(guards) > 100 and len(times) == 4
    # each part timed on its own: never a negative difference, loaded or not
    assert all(float(t) > 0 for t in times)
    # a busy spell (the suite may share the machine) is said, not hidden
    assert all(line.startswith("  measured in a busy spell (") for line in busy)
    bad = subprocess.run([sys.executable, script, "--models", "NoSuchModel"], capture_output=True, text=True)
    assert bad.returncode == 1 and "no transformers zoo model named 'NoSuchModel'" in bad.stderr
