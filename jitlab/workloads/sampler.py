"""The balanced sampler (MISSION.md §2): what data-dependent shapes cost, and what static shapes,
compilation and batching win back.

Variants (the swept parameter `variant`), each on `torch` (eager) and `torch-compile`:
- `naive`: `nonzero` + `randperm` on one input (the speed-up baseline);
- `static`: `count_nonzero`, random scores with `where`, `topk`, `gather` on one input;
- `batched-naive`: a Python loop of the naive sampler over a batch of inputs (baseline of the batched);
- `batched-static`: the static sampler on the whole batch at once.

The batch is 32 inputs, reduced where 32 x N would pass `BATCH_ITEM_LIMIT` items (at N = 10^7: 3),
so that a batch fits comfortably in memory on a small machine; both batched variants use the same
batch (`batch_size(N)`), so their ratio is fair.

There is no numeric reference: a sample is correct or not. The error metric is 0 when the sample
satisfies the sampler's invariants (K distinct indices, the right number from each class) and 1
otherwise; uniformity is a statistical property, checked by the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitlab.workloads.api import Case, Context, Prepared, Workload
from jitlab.workloads.registry import register_workload

VARIANTS = ("naive", "static", "batched-naive", "batched-static")
BATCH = 32
#: largest number of labels in one batched input (32 x 10^6 passes, 32 x 10^7 is cut to 3 x 10^7)
BATCH_ITEM_LIMIT = 1 << 25
POSITIVE_SHARE = 0.1


def batch_size(n: int) -> int:
    return max(1, min(BATCH, BATCH_ITEM_LIMIT // n))


def sample_size(n: int) -> int:
    return max(1, n // 10)


def labels_for(case: Case) -> np.ndarray:
    """Boolean labels, positive with probability `positive_share`; shape (batch, N) when batched."""
    share = float(case.params.get("positive_share", POSITIVE_SHARE))
    shape = (batch_size(case.size), case.size) if is_batched(case.params) else (case.size,)
    return case.rng.random(shape) < share


def is_batched(params: Any) -> bool:
    return str(params.get("variant", "")).startswith("batched")


def sample_violations(indices: np.ndarray, labels: np.ndarray) -> list[str]:
    """What is wrong with one sample (empty when it is a correct balanced sample of `labels`)."""
    n = labels.shape[-1]
    k = sample_size(n)
    indices = np.asarray(indices)
    problems = []
    if indices.shape != (k,):
        return [f"shape {indices.shape}, expected ({k},)"]
    if indices.min() < 0 or indices.max() >= n:
        return ["index out of range"]
    if len(np.unique(indices)) != k:
        problems.append("duplicate indices")
    positives = int(labels.sum())
    negatives = n - positives
    want = min(positives, max(k // 2, k - negatives))
    got = int(labels[indices].sum())
    if got != want:
        problems.append(f"{got} positives, expected {want}")
    return problems


def invariant_error(value: Any, labels: Any) -> float:
    """0 when every sample (one, or one per batch row) satisfies the invariants, else 1."""
    value, labels = np.asarray(value), np.asarray(labels)
    if labels.ndim == 1:
        return float(bool(sample_violations(value, labels)))
    if value.shape[0] != labels.shape[0]:
        return 1.0
    return float(any(sample_violations(v, row) for v, row in zip(value, labels)))


def compiles_only_static(backend: str, size: int, params: Any) -> bool:
    """torch.compile runs the static variants (as the article compiled them); the naive ones break
    the graph at every `nonzero`, and the eager `torch` cells already show what they cost."""
    return backend != "torch-compile" or "static" in str(params.get("variant", ""))


#: the article's grid: N = 1, 10, ..., 10^7 (`jitlab run sampler --full`)
FULL_SIZES = tuple(10**e for e in range(8))

sampler = register_workload(
    Workload(
        name="sampler",
        description="balanced sampler: K = N/10 items, half positive, naive vs static shapes",
        # one size where overhead and synchronisation dominate, one where the work does; the
        # default run (10 cells, 2 cold torch.compile compiles) stays within 3 minutes on 2 cores
        sizes=(10**3, 10**5),
        full_sizes=FULL_SIZES,
        size_name="N",
        params={"positive_share": POSITIVE_SHARE},
        sweep={"variant": list(VARIANTS)},
        # compiled at the small size only, where the article saw compilation win (each cold compile
        # costs 10-30 s on a 2-core CPU)
        backend_sizes={"torch-compile": (10**3,)},
        include_cell=compiles_only_static,
        full_include_cell=compiles_only_static,
        default_budget_s=1.0,
        reference=lambda case, inputs: inputs[0],
        error=invariant_error,
        error_name="invariants violated (0/1)",
        inputs=lambda case: (labels_for(case),),
        seeds=3,
    )
)


def baseline(backend: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Speed-ups are against naive eager torch: single inputs against `naive`, batches against
    `batched-naive` (the Python loop) on the same batch."""
    variant = "batched-naive" if is_batched(params) else "naive"
    return "torch", {**params, "variant": variant}


sampler.baseline = baseline  # read by jitlab.report.speedup


@sampler.implement("torch", "torch-compile")
def _torch(ctx: Context) -> Prepared:
    import torch

    from jitlab.workloads.kernels.sampler_torch import naive_sample, naive_sample_batch, static_sample

    variant = ctx.params["variant"]
    functions = {
        "naive": naive_sample,
        "static": static_sample,
        "batched-naive": naive_sample_batch,
        "batched-static": static_sample,
    }
    if variant not in functions:
        raise ValueError(f"unknown sampler variant {variant!r}: choose from {', '.join(VARIANTS)}")
    k = sample_size(ctx.size)
    device = ctx.backend.device()
    fn = ctx.prepare(functions[variant])

    def args(seed: int) -> tuple:
        torch.manual_seed(seed)  # the random draws of seed s are reproducible, eager and compiled
        return (torch.from_numpy(ctx.inputs(seed)[0]).to(device), k)

    return Prepared(fn, args=args)
