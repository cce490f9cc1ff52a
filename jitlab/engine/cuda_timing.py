"""Timing blocks of calls on a CUDA device with CUDA events, the way GPU kernels are timed.

A host clock around a block measures the host's view: launch costs, Python and the final
synchronisation's wake-up latency included. CUDA events are timestamps taken by the GPU itself when
the stream reaches them, so `start.elapsed_time(end)` is the device time between the two points of
the stream (idle gaps included, so a launch-bound call still shows its launch cost). This is the
recipe of `triton.testing.do_bench`: events around the timed work, results read after a
synchronisation, and optionally the L2 cache flushed before every call (by zeroing a buffer larger
than any L2) so each call starts from cold caches, as in a real program where other kernels ran in
between.

Only imported when a backend computes on a CUDA device (`Backend.device_timer`); the CPU path never
touches torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: bytes zeroed before each call to evict the L2 cache (H100/H200: 50 MB of L2; do_bench uses 256 MB)
L2_FLUSH_BYTES = 256 * 1024 * 1024


class CudaEventTimer:
    """`BlockTimer` for torch's current CUDA stream on one device.

    Without the flush, one pair of events brackets the whole block of `loops` calls (back-to-back
    calls overlap the host's launches with the device's work, as in a training loop). With the flush,
    every call gets its own pair of events and a buffer of `L2_FLUSH_BYTES` is zeroed before it,
    outside its events; the sample is the mean of the per-call times.
    """

    def __init__(self, device: str = "cuda", flush_l2: bool = False) -> None:
        import torch

        self._torch = torch
        self.device = torch.device(device)
        self.flush_l2 = flush_l2
        self.method = "cuda events" + (", L2 flushed before each call" if flush_l2 else "")
        self._flush_buffer = (
            torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=self.device) if flush_l2 else None
        )
        #: device bytes this timer holds itself (left out of the cell's peak device memory)
        self.own_device_bytes = L2_FLUSH_BYTES if flush_l2 else 0

    def _event(self) -> Any:
        return self._torch.cuda.Event(enable_timing=True)

    def time_block(self, call: Callable[[], Any], sync: Callable[[Any], None], loops: int) -> float:
        torch = self._torch
        stream = torch.cuda.current_stream(self.device)
        value = None
        if self._flush_buffer is None:
            start, end = self._event(), self._event()
            start.record(stream)
            for _ in range(loops):
                value = call()
            end.record(stream)
            sync(value)  # the backend's own wait: also covers work a backend queued elsewhere
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / loops
        starts = [self._event() for _ in range(loops)]
        ends = [self._event() for _ in range(loops)]
        for begin, finish in zip(starts, ends):
            self._flush_buffer.zero_()
            begin.record(stream)
            value = call()
            finish.record(stream)
        sync(value)
        ends[-1].synchronize()
        total_ms = sum(begin.elapsed_time(finish) for begin, finish in zip(starts, ends))
        return total_ms / 1e3 / loops
