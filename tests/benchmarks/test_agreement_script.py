"""benchmarks/agreement.py runs as a user would run it and reports every tool's median for every
function. The figures themselves are a benchmark, not a test: only their presence is checked."""

import json
import math
import subprocess
import sys

import pytest
from jitlab_testing import REPO


@pytest.mark.slow
def test_agreement_script_reports_three_tools_for_three_functions():
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "agreement.py"), "--smoke", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    functions = [row["function"] for row in data["rows"]]
    assert functions == ["numpy sum of 1e6 float64", "torch matmul 256x256 float32", "busy-wait 2 ms"]
    for row in data["rows"]:
        for key in ("jitlab_s", "torch_s", "pyperf_s", "jitlab_over_torch", "jitlab_over_pyperf"):
            assert row[key] > 0 and math.isfinite(row[key])
    busy = data["rows"][2]
    # every tool timed a call that busy-waits 2 ms: none can report less
    assert min(busy["jitlab_s"], busy["torch_s"], busy["pyperf_s"]) >= 0.0019
