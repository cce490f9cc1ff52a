"""The balanced sampler of MISSION.md section 2, naive and static, as user code for the doctor.

Both pick K = N/10 of N labelled items, half positive and half negative, topping up from the other
class when one class has too few. The line numbers of the marked lines are asserted by the tests.
"""

import torch


def naive_sample(labels: torch.Tensor) -> torch.Tensor:
    k = labels.numel() // 10
    positives = torch.nonzero(labels).squeeze(1)  # doctor: nonzero-positives
    negatives = torch.nonzero(~labels).squeeze(1)  # doctor: nonzero-negatives
    n_pos = min(positives.numel(), max(k // 2, k - negatives.numel()))
    n_neg = k - n_pos
    pick_pos = positives[torch.randperm(positives.numel(), device=labels.device)[:n_pos]]
    pick_neg = negatives[torch.randperm(negatives.numel(), device=labels.device)[:n_neg]]
    return torch.cat([pick_pos, pick_neg])


def static_sample(labels: torch.Tensor) -> torch.Tensor:
    n = labels.numel()
    k = n // 10
    n_pos = torch.count_nonzero(labels)
    n_neg = n - n_pos
    # as many positives as half of K allows, more when negatives run short, never more than exist
    want_pos = torch.minimum(n_pos, torch.clamp(k - n_neg, min=k // 2))
    scores = torch.rand(n, device=labels.device)
    # random scores rank each class; the other class scores -1 and sorts last
    pos_order = torch.topk(torch.where(labels, scores, -1.0), k).indices
    neg_order = torch.topk(torch.where(labels, -1.0, scores), k).indices
    slot = torch.arange(k, device=labels.device)
    from_neg = torch.gather(neg_order, 0, torch.clamp(slot - want_pos, min=0))
    return torch.where(slot < want_pos, pos_order, from_neg)


def make_labels(scale: int = 1) -> tuple[tuple[torch.Tensor], dict]:
    generator = torch.Generator().manual_seed(0)
    labels = torch.rand(20_000 * scale, generator=generator) < 0.3
    return (labels,), {}


def make_cuda_labels(scale: int = 1) -> tuple[tuple[torch.Tensor], dict]:
    """The same labels on the GPU (for the CUDA confirmation test, skipped without one)."""
    (labels,), kwargs = make_labels(scale)
    return (labels.cuda(),), kwargs
