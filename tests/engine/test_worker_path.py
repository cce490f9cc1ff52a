"""A workload file named as a standard module (`copy.py`), run from its own folder, is measured:
jitlab's workers leave the working directory off their module path (`jitlab.worker_python`), where it
replaced `copy` inside the worker and jitlab's own imports failed ("partially initialized module
'jitlab'")."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKLOAD = """
import jitlab

spin = jitlab.Workload("spin", description="a short loop", sizes=[1000], seeds=1)

@spin.implement("python")
def _(ctx):
    def run(seed):
        return float(sum(range(ctx.size)))
    return run
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P arrived in Python 3.11")
def test_a_workload_file_named_as_a_standard_module_runs_from_its_folder(tmp_path):
    (tmp_path / "copy.py").write_text(WORKLOAD)
    command = Path(sys.executable).parent / "jitlab"  # the installed command, as a user runs it
    done = subprocess.run(
        [str(command), "run", "copy.py", "--budget", "0.2", "--processes", "2", "--store", "s.sqlite", "--no-plot",
         "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["status"] == "ok", cell
    assert cell["processes"] >= 1 and cell["median_s"] > 0
