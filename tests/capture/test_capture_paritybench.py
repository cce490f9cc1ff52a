"""ParityBench's generated programs as capture cases (`jitlab capture --paritybench DIR`).

The generated file used here is written for these tests in ParityBench's format (its header of
imports and mocks, classes, the `TESTCASES` list and unittest classes); it is copied into a folder
laid out like a clone of the repository (`generated/test_*.py`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jitlab_testing import one_line_error, run_jitlab

from jitlab.capture import load_corpora
from jitlab.capture.paritybench import is_paritybench_file, list_cases, paritybench_files
from jitlab.capture.paritybench.files import entry_classes
from jitlab.cli.capture_cmd import sample_cases
from jitlab.errors import UserError

DATA = Path(__file__).resolve().parent / "data" / "paritybench"
CASES = [
    "pb.jitlab_examples.Block",
    "pb.jitlab_examples.Gate",
    "pb.jitlab_examples.Gate.2",
    "pb.jitlab_examples.DenseHead",
    "pb.jitlab_examples.Normalise",
]


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    """A folder laid out like a clone of ParityBench, with one generated file and one that is not."""
    generated = tmp_path / "pytorch-jit-paritybench" / "generated"
    generated.mkdir(parents=True)
    shutil.copy(DATA / "jitlab_examples.txt", generated / "test_jitlab_examples.py")
    (generated / "test_no_modules.py").write_text("import sys\n_module = sys.modules[__name__]\n")
    return generated.parent


def test_cases_are_listed_from_the_file_without_running_it(clone):
    files = paritybench_files(str(clone))
    assert [Path(f).name for f in files] == ["test_jitlab_examples.py"]  # the file without modules is not one
    assert paritybench_files(str(clone / "generated")) == files
    before = set(sys.modules)
    cases = load_corpora(files)
    assert [c.name for c in cases] == CASES
    assert all(c.source == files[0] and c.tags == ("paritybench",) for c in cases)
    assert not any(name.startswith("_jitlab_pb") for name in set(sys.modules) - before)


_BUILD = """
import sys
import pytest
from jitlab.capture import load_corpora
from jitlab.capture.paritybench import paritybench_files

block, gate, gate2, dense, _ = load_corpora(paritybench_files(sys.argv[1]))
model = block.build_model()
assert model.training is False and model.scale == 2.0 and model.fc.in_features == 4
(x,), kwargs = block.build_inputs(0)
assert tuple(x.shape) == (2, 4) and kwargs == {}
assert not bool((block.build_inputs(1)[0][0] == x).all())  # call 1 draws new values
assert type(gate.build_model().block).__name__ == "DummyBlock"  # _mock_layer() without sizes
assert type(gate2.build_model().block).__name__ == "Linear"  # _mock_layer(4, 4)
with pytest.raises(ModuleNotFoundError, match="tensorflow is a stand-in"):
    dense.build_model()
# the file imports torch.utils.tensorboard's SummaryWriter: a stand-in wherever TensorBoard is missing
import importlib.util
writer = sys.modules["torch.utils.tensorboard"].SummaryWriter
assert importlib.util.find_spec("tensorboard") is not None or repr(writer).startswith("<stand-in")
print("built")
"""


def test_a_case_builds_its_module_in_eval_mode_with_fresh_inputs(clone):
    """Building imports the file, with the helper module and the stand-ins it needs: in a process of
    its own, as in a worker (the stand-ins would hide TensorFlow from the rest of this test run)."""
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, str(clone)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "built", done.stderr


def test_a_file_that_is_not_python_gives_cases_that_fail_to_build(tmp_path, clone):
    text = (DATA / "jitlab_examples.txt").read_text().replace("True),\n]", "scale=2=3),\n]", 1)
    broken = tmp_path / "test_broken.py"
    broken.write_text(text)
    assert is_paritybench_file(broken)
    assert entry_classes(text) == ["Block", "Gate", "Gate", "DenseHead", "Normalise"]
    assert len(list_cases(broken)) == 5
    script = "import sys; from jitlab.capture.paritybench import list_cases; list_cases(sys.argv[1])[0].build_model()"
    done = subprocess.run(
        [sys.executable, "-c", script, str(broken)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    assert "ParityBench file" in done.stderr and "failed to load at line" in done.stderr
    assert "SyntaxError" in done.stderr


def test_sample_is_seeded_and_keeps_the_order(clone):
    cases = load_corpora(paritybench_files(str(clone)))
    first = sample_cases(cases, 3, seed=7)
    assert len(first) == 3 and first == sample_cases(cases, 3, seed=7)
    assert [c.name for c in first] == [c.name for c in cases if c in first]
    assert sample_cases(cases, 99, seed=0) == cases
    with pytest.raises(UserError, match="--sample 0"):
        sample_cases(cases, 0, seed=0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "https://github.com/jansel/pytorch-jit-paritybench",
            "looks like a URL: give the folder of a local clone",
        ),
        ("nowhere/paritybench", "is not a folder"),
    ],
)
def test_bad_folder_is_one_line_and_exit_2(value, message):
    assert message in one_line_error(run_jitlab("capture", "--paritybench", value, timeout=120))


def test_empty_folder_is_one_line_and_exit_2(tmp_path):
    error = one_line_error(run_jitlab("capture", "--paritybench", str(tmp_path), timeout=120))
    assert "holds no generated ParityBench files" in error


def test_capture_runs_paritybench_cases_beside_dynamo(clone):
    result = run_jitlab(
        "capture", "--paritybench", str(clone), "--methods", "jitlab,dynamo", "--json", timeout=600
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [c["name"] for c in report["cases"]] == CASES
    assert report["broken"] == ["pb.jitlab_examples.DenseHead"]  # needs TensorFlow: a stand-in here
    results = {c["name"]: c["results"] for c in report["cases"]}
    for name in ("pb.jitlab_examples.Block", "pb.jitlab_examples.Gate", "pb.jitlab_examples.Gate.2"):
        assert results[name]["jitlab"]["captured"] is True, results[name]["jitlab"]
        assert results[name]["dynamo"]["captured"] is True, results[name]["dynamo"]
    normalise = results["pb.jitlab_examples.Normalise"]
    assert normalise["jitlab"]["equal"] is True  # a data-dependent branch: never a wrong result
    assert normalise["dynamo"]["full_graph"] is False  # fullgraph=True cannot branch on data
    assert report["totals"]["jitlab"]["cases"] == 4


def test_worker_reads_only_the_files_of_its_cases(clone):
    """A batch's worker gets only the files its cases come from (1,500 files in a full run)."""
    from jitlab.capture.harness import run_batch

    broken = Path(__file__).resolve().parent / "data" / "broken_corpus.py"  # fails to load if read
    files = paritybench_files(str(clone))
    seen: list[list[str]] = []
    sources = {"pb.jitlab_examples.Block": files[0]}

    def spy(case: str, method: str, result: dict) -> None:
        seen.append([case, method])

    results = run_batch(
        [str(broken), *files], [("pb.jitlab_examples.Block", ["fx"])], 300, 1, spy, sources=sources
    )
    assert results[("pb.jitlab_examples.Block", "fx")]["captured"] is True
    assert seen == [["pb.jitlab_examples.Block", "fx"]]
