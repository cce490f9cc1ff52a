"""Time the first call (the capture) of jitlab.jit against TorchDynamo's first call, per model.

Run: `python benchmarks/capture_time.py [--rounds 3] [--models densenet121,regnet_y_400mf,hourglass]
[--profile MODEL]`. For each round and model it builds a fresh model (random weights, eval mode)
and times one call under `jitlab.jit(model, backend="eager")` and one under
`torch.compile(model, backend="eager", fullgraph=False)` (after `torch._dynamo.reset()`), the two in
alternating order, so that the drift of a shared machine (up to 1.7x over minutes) hits both alike;
compare the per-round ratio, not absolute seconds across runs. A warm-up round on a tiny model
imports what both need first, so that neither pays for torch's lazy imports alone. Torch runs on one
thread by default (`--threads`): both systems run the model's operations once on real tensors, and
on a shared 2-core machine more threads only add noise to that part.

Models: torchvision's densenet121 and regnet_y_400mf at 64x64 (batch 2; needs a Python whose torch
loads torchvision, here the 3.12 venv), timm's resnet50 and vit_tiny_patch16_224 when timm is
installed, and ParityBench's `HourglassNet` (pb.D_X_Y_landmark_detection, from
/tmp/pb/generated/test_D_X_Y_landmark_detection.py when that file exists). Models that cannot be
built here are skipped with a note.

Round 1 is the cold figure (the first capture of these code objects in the process); later rounds
reuse what both systems keep per code object across compiled callables. `--profile NAME` instead
runs one jitlab.jit capture of that model under cProfile and prints the top functions by tottime
and cumtime.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from jitlab.jit import jit

PB_FILE = Path("/tmp/pb/generated/test_D_X_Y_landmark_detection.py")
PB_HOURGLASS_INDEX = 8  # TESTCASES[8] of that file is HourglassNet

Builder = Callable[[], tuple[torch.nn.Module, tuple[Any, ...]]]


def _torchvision(name: str) -> Builder:
    def build() -> tuple[torch.nn.Module, tuple[Any, ...]]:
        import torchvision

        model = getattr(torchvision.models, name)(weights=None).eval()
        return model, (torch.randn(2, 3, 64, 64),)

    return build


def _timm(name: str, size: int) -> Builder:
    def build() -> tuple[torch.nn.Module, tuple[Any, ...]]:
        import timm

        model = timm.create_model(name, pretrained=False).eval()
        return model, (torch.randn(1, 3, size, size),)

    return build


def _hourglass() -> tuple[torch.nn.Module, tuple[Any, ...]]:
    from jitlab.capture.paritybench import loading

    model = loading.make_model(str(PB_FILE), PB_HOURGLASS_INDEX)
    args, kwargs = loading.make_inputs(str(PB_FILE), PB_HOURGLASS_INDEX)
    assert not kwargs
    return model, args


def _tiny() -> tuple[torch.nn.Module, tuple[Any, ...]]:
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    return model, (torch.randn(1, 3, 8, 8),)


MODELS: dict[str, Builder] = {
    "densenet121": _torchvision("densenet121"),
    "regnet_y_400mf": _torchvision("regnet_y_400mf"),
    "timm_resnet50": _timm("resnet50", 64),
    "timm_vit_tiny": _timm("vit_tiny_patch16_224", 224),
    "hourglass": _hourglass,
}


def available(names: list[str]) -> list[str]:
    """The models of `names` that can be built here (a note for each that cannot)."""
    kept = []
    for name in names:
        try:
            MODELS[name]()
        except Exception as exc:  # noqa: BLE001 - a missing library or file only skips the model
            print(f"skipping {name}: {type(exc).__name__}: {exc}")
            continue
        kept.append(name)
    return kept


def first_call(method: str, build: Builder) -> float:
    """Seconds of the first call of a fresh model under `method` ("jitlab" or "dynamo")."""
    model, args = build()
    with torch.no_grad():
        expected = model(*args)
    if method == "dynamo":
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="eager", fullgraph=False)
    else:
        compiled = jit(model, backend="eager")
    start = time.perf_counter()
    with torch.no_grad():
        out = compiled(*args)
    seconds = time.perf_counter() - start
    if isinstance(out, torch.Tensor) and not torch.allclose(out, expected, atol=1e-5, rtol=1e-4):
        raise AssertionError(f"{method}: result differs from eager")
    if method == "jitlab":
        report = compiled.explain()
        if report.fallbacks:
            print(f"  note: jitlab.jit fell back: {report.fallbacks[0][:120]}")
    return seconds


def bench(names: list[str], rounds: int) -> None:
    """Interleaved first-call timings, `rounds` rounds, with a per-model table of medians."""
    first_call("jitlab", _tiny)  # warm-up: torch's and Dynamo's lazy imports
    first_call("dynamo", _tiny)
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for i, name in enumerate(names):
            order = ["jitlab", "dynamo"] if (r + i) % 2 == 0 else ["dynamo", "jitlab"]
            for method in order:
                seconds = first_call(method, MODELS[name])
                times.setdefault((name, method), []).append(seconds)
            j, d = times[(name, "jitlab")][-1], times[(name, "dynamo")][-1]
            print(f"round {r + 1} {name:16s} jitlab.jit {j:7.2f} s  dynamo {d:7.2f} s  ratio {j / d:5.2f}")
    print(
        f"\n{'model':16s} {'jitlab.jit':>10s} {'dynamo':>8s} {'ratio':>6s} {'round-1 ratio':>14s}  (median s)"
    )
    ratios = []
    for name in names:
        js, ds = times[(name, "jitlab")], times[(name, "dynamo")]
        per_round = statistics.median(j / d for j, d in zip(js, ds, strict=True))
        ratios.append(per_round)
        print(f"{name:16s} {statistics.median(js):10.2f} {statistics.median(ds):8.2f} {per_round:6.2f} "
              f"{js[0] / ds[0]:14.2f}")  # fmt: skip
    print(f"median ratio jitlab.jit / dynamo: {statistics.median(ratios):.2f}")


def profile(name: str, top: int) -> None:
    """One jitlab.jit capture of `name` under cProfile (after a warm-up capture of a tiny model)."""
    first_call("jitlab", _tiny)
    model, args = MODELS[name]()
    compiled = jit(model, backend="eager")
    profiler = cProfile.Profile()
    with torch.no_grad():
        profiler.enable()
        compiled(*args)
        profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumtime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--models", default="densenet121,regnet_y_400mf,timm_resnet50,timm_vit_tiny,hourglass"
    )
    parser.add_argument("--profile", metavar="MODEL", help="profile one jitlab.jit capture of MODEL instead")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1, help="torch's intra-op threads (default 1)")
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(options.threads)
    if options.profile:
        profile(options.profile, options.top)
        return
    names = available([n.strip() for n in options.models.split(",") if n.strip()])
    bench(names, options.rounds)


if __name__ == "__main__":
    main()
