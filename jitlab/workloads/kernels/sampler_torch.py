"""The balanced sampler of the variable-shapes article, in PyTorch: a naive and a static-shape version.

From N labelled items (boolean labels) pick K = N // 10 indices, K // 2 positive and the rest
negative; when one class has too few items, all of it is taken and the other class tops the sample
up to K. Both versions return K distinct indices drawn uniformly at random within each class.

- `naive_sample`: `nonzero` finds each class, `randperm` shuffles it. The output shapes of
  `nonzero` depend on the data, so on a GPU each call waits for the device to learn the counts, a
  compiler must break its graph there, and a batch can only be handled by a Python loop.
- `static_sample`: `count_nonzero` gives the class sizes as tensors, random scores masked with
  `where` and `topk` pick a random ordering of each class, `gather` takes the first n_pos positives
  and the first K - n_pos negatives. Every shape is known from N and K alone, and the same code runs
  on a batch (labels of shape (B, N)) along the last dimension.
"""

from __future__ import annotations

import torch


def sample_size(n: int) -> int:
    """K = N // 10, at least 1."""
    return max(1, n // 10)


def positive_quota(k: int, positives, negatives):
    """How many positives to take: K // 2 if both classes suffice, else top up from the other class.

    Works on Python ints and on tensors alike (tensors: elementwise, for a batch)."""
    want = k // 2
    if isinstance(positives, torch.Tensor):
        return torch.minimum(positives, torch.clamp(k - negatives, min=want))
    return min(positives, max(want, k - negatives))


def naive_sample(labels: torch.Tensor, k: int) -> torch.Tensor:
    positive = torch.nonzero(labels).squeeze(1)
    negative = torch.nonzero(~labels).squeeze(1)
    n_pos = positive_quota(k, len(positive), len(negative))
    pick_pos = positive[torch.randperm(len(positive), device=labels.device)[:n_pos]]
    pick_neg = negative[torch.randperm(len(negative), device=labels.device)[: k - n_pos]]
    return torch.cat([pick_pos, pick_neg])


def naive_sample_batch(labels: torch.Tensor, k: int) -> torch.Tensor:
    """The naive sampler over a batch: a Python loop, one data-dependent call per row."""
    return torch.stack([naive_sample(row, k) for row in labels])


def static_sample(labels: torch.Tensor, k: int) -> torch.Tensor:
    """Static shapes only: labels (..., N) -> indices (..., K)."""
    n = labels.shape[-1]
    positives = torch.count_nonzero(labels, dim=-1)
    n_pos = positive_quota(k, positives, n - positives).unsqueeze(-1)
    scores = torch.rand(labels.shape, device=labels.device)
    # a random order of each class: its items get their random score, the other class -1
    top_pos = torch.topk(torch.where(labels, scores, -1.0), k, dim=-1).indices
    top_neg = torch.topk(torch.where(labels, -1.0, scores), k, dim=-1).indices
    slot = torch.arange(k, device=labels.device)
    # slot i takes the i-th positive while i < n_pos, then the (i - n_pos)-th negative
    from_pos = slot < n_pos
    both = torch.cat([top_pos, top_neg], dim=-1)
    index = torch.where(from_pos, slot, k + slot - n_pos)
    return torch.gather(both, -1, index)
