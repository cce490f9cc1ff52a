"""The cache entry that served last is checked first on the next call (most recently used first).

Why it matters: `generate` captures its prefill entries before the decode step's, and a transformers
config's guards then read through `PreTrainedConfig.__getattribute__` (Python code). Checked in
capture order, every decoded token first failed the guards of every earlier entry; T5's generation
with Inductor took 22% longer per token than torch.compile's (benchmark in docs/jit.md)."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

import torch
import transformers

from jitlab.jit import jit

CONFIG = transformers.BertConfig(num_hidden_layers=2)


def scaled(x: torch.Tensor, state: dict) -> torch.Tensor:
    y = x * CONFIG.num_hidden_layers + CONFIG.layer_norm_eps
    if state["mode"] == "a":
        return y + 1
    if state["mode"] == "b":
        return y - 1
    return y * 3


def entries_checked(calls: Callable[[], object]) -> int:
    """Cache entries whose guards ran while `calls` ran (each entry is one generated function)."""
    count = 0

    def profile(frame, event, arg):  # noqa: ANN001 -- sys.setprofile's signature
        nonlocal count
        code = frame.f_code
        if event == "call" and code.co_name == "entry" and code.co_filename == "<jitlab.jit entry>":
            count += 1

    sys.setprofile(profile)
    try:
        calls()
    finally:
        sys.setprofile(None)
    return count


def test_a_hit_on_a_later_entry_costs_what_a_hit_on_the_only_entry_costs() -> None:
    x = torch.ones(3)
    served = jit(scaled)
    for mode in "aabb":  # entry 0 serves "a", entry 1 serves "b"
        served(x, {"mode": mode})
    alone = jit(scaled)
    for mode in "bb":
        alone(x, {"mode": mode})
    checked = entries_checked(lambda: [served(x, {"mode": "b"}) for _ in range(3)])
    checked_alone = entries_checked(lambda: [alone(x, {"mode": "b"}) for _ in range(3)])
    assert checked_alone == 3  # one entry's guards per call
    assert checked == checked_alone  # entry 0's guards are no longer checked first on every call
    report = served.explain()
    assert report.captures == 2
    assert [g.hits for g in report.graphs] == [1, 4]  # explain() keeps numbering entries in capture order


def test_entries_served_in_any_order_give_eager_results() -> None:
    rng = random.Random(7)
    served = jit(scaled)
    for call in range(40):
        mode = rng.choice("abc")
        x = torch.randn(rng.choice([3, 5, 8]))
        assert torch.equal(served(x, {"mode": mode}), scaled(x, {"mode": mode})), (call, mode)
    report = served.explain()
    assert report.disabled is None and report.eager_misses == 0
    assert report.captures <= 6  # each mode, then its sizes made symbolic
    assert sum(g.hits for g in report.graphs) >= 40 - report.captures
