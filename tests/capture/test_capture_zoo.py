"""`jitlab capture --zoo`: models of transformers, timm and torchvision, built small and offline,
run under jitlab.jit and TorchDynamo like the corpus (a few small ones here; the whole zoo is the
command in docs/capture.md)."""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest
from jitlab_testing import one_line_error, run_jitlab

from jitlab.capture.corpus import load_corpus
from jitlab.capture.zoo import HERE, ZOOS, library_problem

CI = os.environ.get("CI") == "true"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "give corpus files (e.g. corpus/*.py), --zoo transformers,timm,torchvision or --paritybench DIR",
        ),
        (["--zoo", "keras"], "unknown zoo keras: choose from transformers, timm, torchvision (or all)"),
    ],
)
def test_bad_zoo_input_is_one_line_and_exit_2(args, message):
    assert message in one_line_error(run_jitlab("capture", *args, timeout=120))


def test_the_zoos_hold_the_benchmark_lists():
    sizes = {name: len(load_corpus(HERE / ZOOS[name][0])) for name in ("transformers",)}
    assert sizes["transformers"] >= 40
    # timm and torchvision need the library only to build a model: their lists load anywhere
    assert len(load_corpus(HERE / ZOOS["timm"][0])) + len(load_corpus(HERE / ZOOS["torchvision"][0])) >= 40


def _needs(library: str) -> None:
    problem = library_problem(library)
    if problem is not None and "not installed" in problem and "3.12 and 3.13 only" not in problem:
        if CI:
            pytest.fail(f"CI must run the zoo: {problem}")
        pytest.skip(problem)


@pytest.fixture
def offline(monkeypatch):
    """No network for this test: any connection attempt raises (a download would)."""

    def refuse(self, address):
        raise OSError(f"network access attempted to {address!r} while building a zoo model")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_transformers_models_build_and_run_offline(offline):
    _needs("transformers")
    cases = {c.name: c for c in load_corpus(HERE / ZOOS["transformers"][0])}
    for name in ("BertForMaskedLM", "DistillGPT2", "T5Small", "ViTForImageClassification"):
        model = cases[name].build_model()
        args, kwargs = cases[name].build_inputs(0)
        out = model(*args, **kwargs)
        assert out[0].shape[0] == 2  # the batch of two, through the library's own output class


def _run_zoo(zoo: str, cases: str) -> dict:
    result = run_jitlab(
        "capture", "--zoo", zoo, "--cases", cases, "--methods", "jitlab,dynamo", "--calls", "2", "--json",
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _check_no_wrong_result_and_no_crash(report: dict, names: list[str]) -> None:
    assert [c["name"] for c in report["cases"]] == names
    assert report["broken"] == []
    for case in report["cases"]:
        dynamo, jit = case["results"]["dynamo"], case["results"]["jitlab"]
        assert dynamo["captured"] is True, (case["name"], dynamo)
        # jitlab.jit: equal to eager on every call, and no exception, whether or not it made a graph
        assert jit["equal"] is True, (case["name"], jit)
        assert jit["error"] is None, (case["name"], jit)
        assert jit["captured"] == (jit["full_graph"] and jit["equal"])
        if not jit["full_graph"]:
            assert jit.get("note"), "a capture that is not one graph says why"


def test_transformers_subset_under_jitlab_and_dynamo():
    _needs("transformers")
    names = ["BertForMaskedLM", "DistillGPT2"]
    report = _run_zoo("transformers", ",".join(names))
    _check_no_wrong_result_and_no_crash(report, names)
    for case in report["cases"]:  # an encoder, and a decoder that builds a DynamicCache: one graph each
        assert case["results"]["jitlab"]["captured"] is True, (case["name"], case["results"]["jitlab"])


@pytest.mark.parametrize(("zoo", "names"), [("torchvision", ["tv_resnet18"]), ("timm", ["timm_lcnet_050"])])
def test_vision_subset_runs_where_torchvision_loads(zoo, names):
    _needs("torchvision")
    problem = library_problem("torchvision")
    if problem is not None:
        if CI and sys.version_info >= (3, 12):  # the matrix installs the zoo: it must run there
            pytest.fail(f"CI must run the {zoo} zoo on Python 3.12+: {problem}")
        # here (Python 3.11 through constraints.txt: the CPU torch) the zoo says why, in one line
        line = one_line_error(run_jitlab("capture", "--zoo", zoo, timeout=120))
        assert line.startswith(f"jitlab: error: zoo {zoo}: torchvision")
        assert sys.version_info < (3, 12) or "does not load with this torch" in line
        return
    _check_no_wrong_result_and_no_crash(_run_zoo(zoo, ",".join(names)), names)
