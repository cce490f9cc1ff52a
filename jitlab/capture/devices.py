"""The torch device `jitlab capture --device` runs models on: checked once, and the models and their
inputs moved there in the worker.

Models and inputs are built on the CPU (the same seed gives the same weights and inputs on any
machine) and then moved, so a model compared on two devices starts from the same numbers. A device
this machine cannot use is refused before any worker starts, with what torch sees instead. On a
cluster the head need not have a GPU: each node's worker checks the device, and where it cannot use
it every case fails with what torch sees on that node; each machine's report names its own device.
"""

from __future__ import annotations

import re
from typing import Any

_DEVICE = re.compile(r"(cpu|cuda)(?::(\d+))?")


def parse_device(name: str) -> str:
    """`name` in torch's spelling (`cpu`, `cuda:N`), checked for form only: on a cluster each node's
    worker checks that it can use the device (`check_device`), since the head need not have a GPU."""
    match = _DEVICE.fullmatch(name.strip().lower())
    if match is None:
        raise ValueError(
            f"--device {name!r} is not a torch device jitlab capture runs on: give cpu, cuda or cuda:N"
        )
    kind, index = match.group(1), match.group(2)
    if kind == "cpu":
        if index is not None:
            raise ValueError(f"--device {name!r}: the CPU has no index, give cpu")
        return "cpu"
    return f"cuda:{index or 0}"


def check_device(name: str) -> str:
    """`name` in torch's spelling if this machine's torch can run models there; else ValueError
    saying what torch sees. Accepts `cpu`, `cuda` and `cuda:N`."""
    device = parse_device(name)
    if device == "cpu":
        return device
    import torch

    if not torch.cuda.is_available():
        raise ValueError(
            f"--device {name}: torch {torch.__version__} sees no CUDA GPU on this machine "
            f"(a CPU-only build of torch, or no driver); run with --device cpu, or install torch's CUDA build"
        )
    count = torch.cuda.device_count()
    if int(device.split(":")[1]) >= count:
        raise ValueError(f"--device {name}: torch sees {count} CUDA GPU(s), numbered 0 to {count - 1}")
    return device


def describe(device: str) -> str:
    """The device with its model name where it has one (`cuda:0 (NVIDIA H200)`), for reports."""
    if device.startswith("cuda"):
        import torch

        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return device


def described_in(results: dict[Any, dict[str, Any]], device: str) -> str:
    """The device one machine's results ran on, as its workers described it (on a cluster each node
    names its own GPU); the name alone when no result carries one (nothing ran there)."""
    return next((str(r["device"]) for r in results.values() if r.get("device")), device)


def to_device(value: Any, device: str) -> Any:
    """`value` with every tensor in it (through tuples, lists and dicts, their types kept) moved to
    `device`: a model's inputs as the zoo builds them."""
    import torch

    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return value.to(device)
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(to_device(v, device) for v in value)
    if isinstance(value, list) and type(value) is list:
        return [to_device(v, device) for v in value]
    if isinstance(value, dict):
        moved = {k: to_device(v, device) for k, v in value.items()}
        return moved if type(value) is dict else _same_mapping(value, moved)
    return value


def _same_mapping(original: dict, moved: dict) -> Any:
    """A dict subclass (transformers' `BatchEncoding`) rebuilt with the moved values where it can
    be; a plain dict of them otherwise (the models take either as keyword arguments)."""
    try:
        copy = type(original)(moved)
    except TypeError:
        return moved
    return copy
