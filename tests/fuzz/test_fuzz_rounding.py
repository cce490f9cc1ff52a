"""The oracle's probe for programs that amplify rounding (jitlab/fuzz/rounding.py): it moves rounded
results by about one rounding step and leaves exact ones alone, and a compiling backend's difference
in such a program is "unstable", not "wrong", while one in a program the probe does not move stays
wrong."""

from __future__ import annotations

import torch

from jitlab.fuzz.oracle import CallRecord, Run, eager_method, judge, run_program
from jitlab.fuzz.rounding import RoundingNoise

#: fuzz seed 105, program 1561 (shrunk): AdamW on a bias whose gradient is exactly zero in eager code
#: (a centred batch of two rows); a compiled graph's 1e-9 there moves the bias by 4e-4
UNSTABLE = """
import torch
from torch import nn

W = 3
PW2 = torch.nn.Parameter(torch.linspace(-0.5, 0.5, W * W).reshape(W, W))
PB2 = torch.nn.Parameter(torch.zeros(W))
OPT2 = torch.optim.AdamW([PW2, PB2], lr=0.01, weight_decay=0.1)


def target(x):
    h = x * 1.0
    h = h - h.mean(0, keepdim=True)
    loss2 = ((h.detach() @ PW2 + PB2) - h.detach().tanh()).pow(2).mean()
    loss2.backward()
    OPT2.step()
    OPT2.zero_grad(set_to_none=False)
    return h + loss2.detach() * 0.1


def make():
    return target


def setup_0(model):
    return (torch.randn(2, W),), {}


def setup_1(model):
    return (torch.randn(2, W),), {}


CALLS = [setup_0, setup_1]
"""

#: the same step on a batch of five uncentred rows: no gradient sits on zero
STABLE = UNSTABLE.replace("    h = h - h.mean(0, keepdim=True)\n", "").replace("randn(2, W)", "randn(5, W)")


def test_rounded_results_move_by_about_one_rounding_step():
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    plain = x * 1.1
    with RoundingNoise():
        noisy = x * 1.1
    moved = noisy != plain
    assert 0.2 < moved.float().mean().item() < 0.9
    relative = ((noisy - plain) / plain).abs().max().item()
    assert 0 < relative <= 3 * torch.finfo(torch.float32).eps


def test_exact_results_and_short_values_stay():
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(1))
    with RoundingNoise():
        line = torch.linspace(-1.0, 1.0, 3)
        total = line.sum()
        ties = torch.relu(-x.abs()) - 0.5  # every element exactly -0.5
        copied = x.clone()
        picked = x[torch.tensor([3, 1])]
        biggest = x.max(dim=1).values
    assert total.item() == 0.0 and torch.equal(line, torch.tensor([-1.0, 0.0, 1.0]))
    assert torch.equal(ties, torch.full_like(x, -0.5))
    assert (
        torch.equal(copied, x)
        and torch.equal(picked, x[[3, 1]])
        and torch.equal(biggest, x.max(dim=1).values)
    )


def test_the_programs_own_draws_are_unchanged():
    torch.manual_seed(7)
    expected = torch.randn(5)
    torch.manual_seed(7)
    with RoundingNoise():
        drawn = torch.randn(5)
    assert torch.equal(drawn, expected)


def _off(run: Run, by: float = 1e-3) -> Run:
    """`run` with its last call's output moved by `by` per element: a compiling backend's difference."""
    last = run.calls[-1]
    changed = CallRecord(last.output + by, last.printed, last.error, last.inputs, last.state)
    return Run([*run.calls[:-1], changed], run.stats)


def test_a_difference_in_a_program_amplifying_rounding_is_unstable(tmp_path):
    reference = run_program(UNSTABLE, eager_method, tmp_path)
    verdict = judge(UNSTABLE, reference, _off(reference), tmp_path, compiled=True, random_draws=False)
    assert verdict.status == "unstable", verdict
    assert "eager code with rounding noise" in verdict.detail and "PB2" in verdict.detail


def test_a_difference_far_beyond_the_noise_stays_wrong(tmp_path):
    """The noise moves the bias by about 1e-2; an output off by 100 is an error, unstable or not."""
    reference = run_program(UNSTABLE, eager_method, tmp_path)
    verdict = judge(UNSTABLE, reference, _off(reference, 100.0), tmp_path, compiled=True, random_draws=False)
    assert verdict.status == "wrong", verdict
    assert "eager code with rounding noise differs less" in verdict.detail


def test_the_same_difference_elsewhere_stays_wrong(tmp_path):
    reference = run_program(STABLE, eager_method, tmp_path)
    for compiled in (True, False):
        verdict = judge(STABLE, reference, _off(reference), tmp_path, compiled=compiled, random_draws=False)
        assert verdict.status == "wrong", verdict
    unstable = run_program(UNSTABLE, eager_method, tmp_path)  # the eager backend is never excused
    assert (
        judge(UNSTABLE, unstable, _off(unstable), tmp_path, compiled=False, random_draws=False).status
        == "wrong"
    )
