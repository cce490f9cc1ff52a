"""The corpus itself: it loads, it is large and diverse enough, and every case is a sound program
(runs eagerly, and two builds give identical models, inputs and outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from jitlab.capture import Case, Corpus, load_corpora, load_corpus
from jitlab.capture.compare import difference
from jitlab.capture.worker import seed_call
from jitlab.errors import UserError

REPO = Path(__file__).resolve().parents[2]
CORPUS_FILES = sorted(str(p) for p in (REPO / "corpus").glob("*.py"))
DATA = Path(__file__).resolve().parent / "data"
CASES = load_corpora(CORPUS_FILES)

# what the issue asks the corpus to cover, as tags that at least one case must carry
REQUIRED_TAGS = {
    "closure", "global", "kwargs", "varargs", "list", "dict", "tuple", "container", "attribute",
    "batchnorm", "dropout", "item", "nonzero", "recursion", "inheritance", "super", "property",
    "dataclass", "fstring", "exception", "shape", "no_grad", "inplace", "model", "isinstance",
    "config", "random", "train", "eval",
}  # fmt: skip


def test_corpus_is_large_with_unique_names_and_required_themes():
    assert len(CORPUS_FILES) >= 5
    assert len(CASES) >= 80
    names = [case.name for case in CASES]
    assert len(set(names)) == len(names)
    tags = {tag for case in CASES for tag in case.tags}
    assert REQUIRED_TAGS <= tags, f"no case tagged {sorted(REQUIRED_TAGS - tags)}"


def _call_three_times(case: Case) -> list:
    model = case.build_model()
    outputs = []
    for i in range(3):
        args, kwargs = case.build_inputs(i)
        seed_call(i)
        outputs.append(model(*args, **kwargs))
    return outputs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_runs_eagerly_and_is_deterministic(case: Case):
    first, second = _call_three_times(case), _call_three_times(case)
    assert difference(first, second) is None
    args, _ = case.build_inputs(1)
    again, _ = case.build_inputs(1)
    assert difference(args, again, "inputs") is None


def test_inputs_change_between_seeds_but_keep_their_shapes():
    case = next(c for c in CASES if c.name == "item_branch")
    (a,), _ = case.build_inputs(0)
    (b,), _ = case.build_inputs(1)
    assert a.shape == b.shape and not torch.equal(a, b)
    # the data-dependent branch of this case really flips between the seeds the harness uses
    signs = {bool(case.build_inputs(i)[0][0].sum() > 0) for i in range(3)}
    assert signs == {True, False}


def test_building_does_not_disturb_the_callers_rng():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    CASES[0].build_model()
    CASES[0].build_inputs(2)
    assert torch.equal(torch.rand(3), expected)


def test_duplicate_names_are_rejected():
    corpus = Corpus()
    corpus.case("a", inputs=lambda: ((), {}))(lambda: abs)
    with pytest.raises(ValueError, match="already"):
        corpus.case("a", inputs=lambda: ((), {}))(lambda: abs)
    with pytest.raises(UserError, match="failed to load at line 19: ValueError: a case named 'same'"):
        load_corpus(DATA / "duplicate_corpus.py")
    with pytest.raises(UserError, match="defined in both"):
        load_corpora([CORPUS_FILES[0], CORPUS_FILES[0]])


def test_bad_corpus_files_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_corpus(tmp_path / "missing.py")
    with pytest.raises(UserError, match="failed to load at line 8: RuntimeError: this corpus is broken"):
        load_corpus(DATA / "broken_corpus.py")
    with pytest.raises(UserError, match="defines no CORPUS"):
        load_corpus(DATA / "no_corpus.py")
    text = tmp_path / "notes.txt"
    text.write_text("x")
    with pytest.raises(UserError, match="not a .py file"):
        load_corpus(text)


def test_bad_inputs_factory_is_reported():
    case = Case("bad", make_model=lambda: abs, make_inputs=lambda: [1, 2])
    with pytest.raises(TypeError, match="make_inputs must return"):
        case.build_inputs()
