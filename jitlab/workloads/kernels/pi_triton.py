"""A Triton Monte Carlo pi kernel: each program draws a block of points with `tl.rand` and counts hits.

Every point i uses Philox counters 2i and 2i+1 for its x and y, so all draws are independent and
the estimate depends only on (seed, n), not on the block size. Per-block counts are summed on the
device. The interpreter runs large blocks much faster than small ones (one Python step per block),
while on a GPU a block must fit in registers: the block size is chosen per device.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

INTERPRETER_BLOCK = 1 << 16
GPU_BLOCK = 1 << 12


@triton.jit
def pi_kernel(counts_ptr, n, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.rand(seed, 2 * offsets)
    y = tl.rand(seed, 2 * offsets + 1)
    inside = (x * x + y * y <= 1.0) & (offsets < n)
    tl.store(counts_ptr + pid, tl.sum(inside.to(tl.int32), axis=0))


def triton_pi(n: int, seed: int, device: str) -> torch.Tensor:
    block = GPU_BLOCK if device.startswith("cuda") else min(INTERPRETER_BLOCK, triton.next_power_of_2(n))
    programs = triton.cdiv(n, block)
    counts = torch.empty(programs, dtype=torch.int32, device=device)
    pi_kernel[(programs,)](counts, n, seed, BLOCK=block)
    return 4.0 * counts.sum(dtype=torch.int64) / n
