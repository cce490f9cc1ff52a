"""Which clock times a cell (the host's on the CPU, CUDA events on a GPU), the L2-flush option,
device peak memory, and dispatch time only where a workload says it means something."""

from __future__ import annotations

import time

import pytest

from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.engine.timing import measure

TINY = TimingPolicy(budget_s=0.05, min_samples=1)


class StepTimer:
    """A block timer that reports a fixed device time per call: shows that the recipe uses it."""

    method = "fixed"

    def __init__(self) -> None:
        self.blocks = 0

    def time_block(self, call, sync, loops):
        for _ in range(loops):
            sync(call())
        self.blocks += 1
        return 0.02


def test_a_block_timer_replaces_the_host_clock_for_every_block():
    timer = StepTimer()
    result = measure(lambda: 1, lambda value: None, TimingPolicy(budget_s=0.1), timer=timer)
    assert set(result.samples_s) == {0.02} and set(result.warmup_s) == {0.02}
    assert result.loops == 1  # 20 ms per call is above the 10 ms block at once
    assert timer.blocks == len(result.samples_s) + len(result.warmup_s)


def test_cpu_cells_use_the_host_clock_and_say_that_an_l2_flush_does_not_apply():
    plain = execute_cell(CellSpec("pi", "numpy", 1000, policy=TINY), timeout_s=120)
    assert plain.status == "ok" and plain.timing_method == "host clock"
    assert not any("L2" in w for w in plain.warnings)
    flushed = TimingPolicy(budget_s=0.05, min_samples=1, flush_l2=True)
    result = execute_cell(CellSpec("pi", "numpy", 1000, policy=flushed), timeout_s=120)
    assert result.status == "ok"
    assert "L2 flush requested but not a CUDA device: ignored" in result.warnings


def test_dispatch_is_timed_for_one_call_but_not_for_a_loop_of_steps():
    one_call = execute_cell(CellSpec("pi", "jax", 10_000, policy=TINY), timeout_s=300)
    assert one_call.status == "ok", one_call.reason
    assert len(one_call.dispatch_s) >= 5
    loop = execute_cell(CellSpec("async", "jax", 50, {"sync": "once"}, policy=TINY), timeout_s=300)
    assert loop.status == "ok", loop.reason
    assert loop.asynchronous is True and loop.dispatch_s == ()


@pytest.mark.gpu
def test_cuda_events_time_a_kernel_of_known_length():
    import torch

    from jitlab.engine.cuda_timing import CudaEventTimer

    def sleep(cycles):
        return lambda: torch.cuda._sleep(cycles)

    for flush in (False, True):
        timer = CudaEventTimer("cuda", flush_l2=flush)
        short = min(timer.time_block(sleep(1_000_000), lambda v: None, 4) for _ in range(5))
        long = min(timer.time_block(sleep(4_000_000), lambda v: None, 4) for _ in range(5))
        assert 3.0 < long / short < 5.0, (flush, short, long)  # device time follows the kernel's length


@pytest.mark.gpu
def test_a_cuda_cell_is_timed_with_events_and_records_its_device():
    result = execute_cell(CellSpec("pi", "torch", 10**6, policy=TimingPolicy(budget_s=0.2)), timeout_s=300)
    assert result.status == "ok", result.reason
    assert result.timing_method == "cuda events"
    assert result.device.startswith("cuda:0 (") and "CUDA runtime" in result.device
    assert result.peak_device_bytes >= 2 * 10**6 * 4  # the 2 x n float32 draws
    flushed = TimingPolicy(budget_s=0.2, flush_l2=True)
    result = execute_cell(CellSpec("pi", "torch", 10**6, policy=flushed), timeout_s=300)
    assert result.timing_method == "cuda events, L2 flushed before each call"


def test_host_clock_is_untouched_by_gpu_machinery():
    """The CPU path never imports the CUDA timer (no torch import on the timing path)."""
    import sys

    sys.modules.pop("jitlab.engine.cuda_timing", None)  # a GPU test before this one imported it
    measure(lambda: time.sleep(0), lambda v: None, TimingPolicy(budget_s=0.02))
    assert "jitlab.engine.cuda_timing" not in sys.modules
