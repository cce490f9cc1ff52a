"""The balanced sampler: invariants on every class mix, uniform randomness (chi-square), the error
metric, and `jitlab run sampler` end to end on both torch backends."""

from __future__ import annotations

import itertools
import json
import sqlite3

import numpy as np
import pytest
import torch
from scipy import stats

from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.workloads.kernels.sampler_torch import (
    naive_sample,
    naive_sample_batch,
    positive_quota,
    sample_size,
    static_sample,
)
from jitlab.workloads.sampler import VARIANTS, batch_size, invariant_error, sample_violations

SINGLE = {"naive": naive_sample, "static": static_sample}
BATCHED = {"batched-naive": naive_sample_batch, "batched-static": static_sample}
TINY = TimingPolicy(budget_s=0.2)


@pytest.mark.parametrize("n", [10, 11, 57, 1000])
@pytest.mark.parametrize("share", [0.0, 0.02, 0.1, 0.5, 0.95, 1.0])
@pytest.mark.parametrize("variant", sorted(SINGLE))
def test_single_sample_invariants(n, share, variant):
    rng = np.random.default_rng(n)
    labels = rng.random(n) < share
    torch.manual_seed(1)
    out = SINGLE[variant](torch.from_numpy(labels), sample_size(n)).numpy()
    assert sample_violations(out, labels) == []
    k = sample_size(n)
    positives = int(labels.sum())
    chosen = int(labels[out].sum())
    if positives >= k // 2 and n - positives >= k - k // 2:
        assert chosen == k // 2  # balanced when both classes suffice
    elif positives < k // 2:
        assert chosen == positives  # every positive taken, negatives top up
    else:
        assert chosen == k - (n - positives)  # every negative taken, positives top up


@pytest.mark.parametrize("variant", sorted(BATCHED))
def test_batched_sample_invariants(variant):
    rng = np.random.default_rng(3)
    shares = np.array([0.0, 0.01, 0.1, 0.5, 0.99, 1.0])[:, None]
    labels = rng.random((6, 200)) < shares
    torch.manual_seed(2)
    out = BATCHED[variant](torch.from_numpy(labels), sample_size(200)).numpy()
    assert out.shape == (6, 20)
    assert invariant_error(out, labels) == 0.0
    for row, row_labels in zip(out, labels):
        assert sample_violations(row, row_labels) == []


def test_positive_quota_on_ints_and_tensors_agree():
    for k, pos, neg in itertools.product([1, 4, 5, 10], range(0, 12), range(0, 12)):
        if pos + neg < k:
            continue
        expected = positive_quota(k, pos, neg)
        got = positive_quota(k, torch.tensor([pos]), torch.tensor([neg]))
        assert int(got[0]) == expected
        assert 0 <= expected <= pos and 0 <= k - expected <= neg


def _chi_square_uniform(counts: np.ndarray) -> float:
    return float(stats.chisquare(counts).pvalue)


def _draws(variant: str, labels: np.ndarray, draws: int) -> np.ndarray:
    """`draws` samples of `labels` (seeded: the test is deterministic)."""
    torch.manual_seed(1234)
    k = sample_size(len(labels))
    t = torch.from_numpy(labels)
    if variant == "batched-static":
        return static_sample(t.expand(draws, -1).contiguous(), k).numpy()
    return np.stack([SINGLE[variant](t, k).numpy() for _ in range(draws)])


@pytest.mark.parametrize("variant", ["naive", "static", "batched-static"])
def test_samples_are_uniformly_random_within_each_class(variant):
    """N = 40, 10 positives: each draw takes 2 positives and 2 negatives. Every positive pair
    (45 of them) and every negative item must come up equally often (chi-square, p > 0.001)."""
    labels = np.zeros(40, dtype=bool)
    labels[[0, 3, 7, 12, 18, 21, 25, 30, 33, 39]] = True
    draws = 3000
    samples = _draws(variant, labels, draws)
    positives = np.flatnonzero(labels)
    negatives = np.flatnonzero(~labels)
    pair_counts = dict.fromkeys(itertools.combinations(positives.tolist(), 2), 0)
    negative_counts = np.zeros(40, dtype=int)
    for sample in samples:
        assert sample_violations(sample, labels) == []
        pair = tuple(sorted(int(i) for i in sample if labels[i]))
        pair_counts[pair] += 1
        for i in sample:
            if not labels[i]:
                negative_counts[i] += 1
    assert _chi_square_uniform(np.array(list(pair_counts.values()))) > 1e-3
    assert _chi_square_uniform(negative_counts[negatives]) > 1e-3


@pytest.mark.parametrize("variant", ["naive", "static"])
def test_top_up_is_uniform_over_the_other_class(variant):
    """One positive in 40 items: it is always taken and the 3 others are uniform negatives."""
    labels = np.zeros(40, dtype=bool)
    labels[17] = True
    samples = _draws(variant, labels, 2000)
    assert all(17 in s for s in samples)
    counts = np.bincount(samples.ravel(), minlength=40)
    assert _chi_square_uniform(np.delete(counts, 17)) > 1e-3


def test_error_metric_flags_broken_samples():
    labels = np.array([True] * 10 + [False] * 90)
    good = np.array([0, 1, 2, 3, 4, 10, 11, 12, 13, 14])
    assert invariant_error(good, labels) == 0.0
    assert invariant_error(np.array([0, 0, 2, 3, 4, 10, 11, 12, 13, 14]), labels) == 1.0  # duplicate
    assert invariant_error(np.arange(10), labels) == 1.0  # all positives: unbalanced
    assert invariant_error(good[:9], labels) == 1.0  # wrong K
    assert invariant_error(np.array([0, 1, 2, 3, 4, 10, 11, 12, 13, 100]), labels) == 1.0


def test_batch_size_is_32_until_the_item_limit():
    assert batch_size(10**3) == 32 and batch_size(10**6) == 32
    assert batch_size(10**7) == 3


def test_run_sampler_end_to_end(jitlab_cli, store, tmp_path):
    done = jitlab_cli(
        "run", "sampler", "--backends", "torch", "--sizes", "1000", "--budget", "0.2", "--store", str(store)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "speed-up against the baseline" in done.stdout
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT backend, params, status, errors FROM cells").fetchall()
    assert sorted(json.loads(p)["variant"] for _, p, _, _ in rows) == sorted(VARIANTS)
    for backend, params, status, errors in rows:
        assert status == "ok", (backend, params)
        assert json.loads(errors) and set(json.loads(errors)) == {0.0}, (backend, params, errors)
    assert (tmp_path / "run-1-sampler-speedup.png").is_file()


def test_compiled_static_sampler_on_a_batch_is_correct():
    """The static sampler through torch.compile (one cold Inductor compile), in a worker process."""
    spec = CellSpec("sampler", "torch-compile", 1000, {"variant": "batched-static"}, policy=TINY)
    result = execute_cell(spec, timeout_s=300)
    assert result.status == "ok", result.reason
    assert result.errors and set(result.errors) == {0.0}
