"""`jitlab capture --device`: the timed modes (--speed, --shapes, --generate, --train) run the models
on a torch device. A device this machine's torch cannot use is refused before any worker starts;
on a GPU (the `gpu` tests) every call, token and training step is still compared with eager's on the
same device. Never times."""

from __future__ import annotations

import json

import pytest
import torch
from jitlab_testing import REPO, one_line_error, run_jitlab
from transformers import BatchEncoding

from jitlab.capture.devices import check_device, describe, to_device


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--zoo", "transformers", "--generate", "--device", "tpu"], "--device 'tpu' is not a torch device"),
        (["--zoo", "transformers", "--train", "--device", "cpu:1"], "the CPU has no index, give cpu"),
        ([str(REPO / "corpus" / "basics.py"), "--speed", "--device", "cuda:99"], "--device cuda:99"),
        (
            [str(REPO / "corpus" / "basics.py"), "--device", "cpu"],
            "--backend, --budget and --device apply only to --speed",
        ),
    ],
)
def test_a_device_jitlab_cannot_use_is_one_line_and_exit_2(args, message):
    assert message in one_line_error(run_jitlab("capture", *args, timeout=120))


def test_check_device_spells_devices_as_torch_does():
    assert check_device("cpu") == "cpu" and check_device(" CPU ") == "cpu"
    if torch.cuda.is_available():
        assert check_device("cuda") == "cuda:0"
        assert describe("cuda:0").startswith("cuda:0 (")
    else:
        with pytest.raises(ValueError, match="sees no CUDA GPU on this machine"):
            check_device("cuda")
    assert describe("cpu") == "cpu"


def test_to_device_moves_every_tensor_and_keeps_the_containers():
    encoding = BatchEncoding({"input_ids": torch.ones(2, 3, dtype=torch.long)})
    value = ((torch.zeros(2), [torch.ones(1), 3]), {"a": encoding, "b": "text"})
    moved = to_device(value, "cpu")
    assert type(moved) is tuple and type(moved[0][1]) is list and moved[0][1][1] == 3
    assert isinstance(moved[1]["a"], BatchEncoding) and moved[1]["b"] == "text"
    assert torch.equal(moved[1]["a"]["input_ids"], encoding["input_ids"])
    module = torch.nn.Linear(2, 2)
    assert to_device(module, "cpu") is module  # a module moves in place, as nn.Module.to does


def _run_on_gpu(*args: str) -> dict:
    result = run_jitlab("capture", *args, "--device", "cuda", "--json", timeout=900)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["device"].startswith("cuda:0 (")
    return report


@pytest.mark.gpu
@pytest.mark.slow
def test_generate_on_the_gpu_gives_eagers_tokens():
    report = _run_on_gpu(
        "--zoo", "transformers", "--generate", "--cases", "DistillGPT2",
        "--backend", "eager", "--budget", "0.01",
    )  # fmt: skip
    assert len(report["cases"]) == 1
    for case in report["cases"]:
        for method in ("jitlab", "compile"):
            result = case["results"][method]
            assert result["error"] is None and result["equal"] is True, (case["name"], method, result)
            assert result["per_token_s"] > 0


@pytest.mark.gpu
@pytest.mark.slow
def test_training_steps_on_the_gpu_match_eager():
    report = _run_on_gpu(
        "--zoo", "transformers", "--train", "--cases", "DistillGPT2", "--steps", "2", "--optimizer", "sgd",
        "--backend", "eager", "--budget", "0.01",
    )  # fmt: skip
    results = report["cases"][0]["results"]
    for name, result in results.items():
        assert result["error"] is None, (name, result)
        assert result["losses"] == pytest.approx(results["eager"]["losses"], rel=1e-4), name


@pytest.mark.gpu
@pytest.mark.slow
def test_speed_on_the_gpu_compares_the_first_and_a_steady_call_with_eager():
    report = _run_on_gpu(
        str(REPO / "corpus" / "models_speed.py"), "--speed", "--cases", "transformer_encoder_layer",
        "--backend", "inductor", "--budget", "0.05",
    )  # fmt: skip
    (case,) = report["cases"]
    for method in ("eager", "jitlab", "compile"):
        result = case["results"][method]
        assert result["error"] is None and result["equal"] is True, (method, result)
        assert result["median_s"] > 0
