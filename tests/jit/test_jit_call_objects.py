"""Objects the caller makes per call (a cache that `generate` makes and passes in) are guarded by what
the capture read of them, not by identity: one entry serves every new object, its tensors' growing
length symbolic; and never a wrong result when objects are aliased, compared, hashed or change
(issue 44)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from jitlab.jit import jit


class Layer:
    def __init__(self):
        self.keys = None


class KVCache:
    """Made by the caller for each sequence; the model appends to it on every step."""

    def __init__(self, layers=2):
        self.layers = [Layer() for _ in range(layers)]

    def update(self, k, i):
        layer = self.layers[i]
        layer.keys = k if layer.keys is None else torch.cat([layer.keys, k], dim=1)
        return layer.keys


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))

    def forward(self, x, cache):
        for i, proj in enumerate(self.proj):
            keys = cache.update(proj(x), i)
            x = x + keys.softmax(1).mean(1, keepdim=True)
        return x


def generate(model, cache_class, prompt, steps):
    """A decoding loop: a new cache per sequence, one step per token, as `generate` does."""
    cache = cache_class()
    x, outs = prompt, []
    for _ in range(steps):
        x = model(x, cache)[:, -1:].contiguous()  # symbolic sizes need contiguous inputs
        outs.append(x)
    return torch.cat(outs, 1), cache


def assert_same_cache(a, b):
    assert type(a) is type(b) and len(a.layers) == len(b.layers)
    for la, lb in zip(a.layers, b.layers):
        assert torch.allclose(la.keys, lb.keys, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_new_cache_per_sequence_is_served_by_the_same_entries(backend):
    torch.manual_seed(0)
    model = Decoder().eval()
    fast = jit(copy.deepcopy(model), backend=backend)
    for length in (3, 5, 4, 7, 6, 2, 8):
        prompt = torch.randn(2, length, 8)
        with torch.no_grad():
            want, want_cache = generate(model, KVCache, prompt, 5)
            got, got_cache = generate(fast, KVCache, prompt, 5)
        assert torch.allclose(got, want, atol=1e-5), length
        assert_same_cache(got_cache, want_cache)  # the writes were replayed on the new cache
    report = fast.explain()
    assert not report.fallbacks and report.eager_misses == 0, str(report)
    assert report.captures <= 4, str(report)  # prefill and decode, then both with symbolic sizes
    guards = [g for entry in report.graphs for g in entry.guards]
    assert not any(g.startswith("ID_MATCH: args[1]") for g in guards), guards
    assert any("TYPE_MATCH: type(args[1]) is KVCache" in g for g in guards), guards
    symbolic = [s for entry in report.graphs for s in entry.symbolic_sizes]
    assert "args[1].layers[0].keys (*, *, 8)" in symbolic, symbolic


def test_the_cache_itself_is_returned_and_written():
    def step(x, cache):
        cache.step = getattr(cache, "step", 0) + 1
        cache.last = x.sum()
        return cache

    fast = jit(step, backend="eager")
    for n in range(4):
        a, b = KVCache(), KVCache()
        x = torch.full((2,), float(n))
        assert fast(x, b) is b and step(x, a) is a
        assert (b.step, float(b.last)) == (a.step, float(a.last)) == (1, 2.0 * n)
    assert fast.explain().captures == 1


def pair(x, a, b):
    a.keys = x  # written to a, then read from b: the same object or not decides
    return b.keys * 2


def make_pair(same):
    a, b = Layer(), Layer()
    a.keys = b.keys = torch.ones(3)
    return (a, a) if same else (a, b)


def run_objects(fn, make, flags):
    """Call `fn` eagerly and jitted on objects `make(flag)` builds anew for each; results equal."""
    fast = jit(fn, backend="eager")
    for flag in flags:
        x = torch.full((3,), 5.0)
        want, got = fn(x, *make(flag)), fast(x, *make(flag))
        assert torch.equal(got, want), flag
    report = fast.explain()
    assert report.captures == 2 and not report.fallbacks, str(report)
    return [g for entry in report.graphs for g in entry.guards]


def test_two_arguments_that_become_the_same_object_are_not_served_by_a_distinct_capture():
    guards = run_objects(pair, make_pair, (False, False, True, False, True))
    assert any("distinct objects" in g for g in guards), guards


def through_child(x, a, b):
    a.keys = x
    return b.child.keys + 1  # b.child is a, or another object


def make_parent(shared):
    a, b, other = Layer(), Layer(), Layer()
    a.keys = other.keys = torch.zeros(3)
    b.child = a if shared else other
    return a, b


def test_one_object_reached_two_ways_must_stay_one_object():
    guards = run_objects(through_child, make_parent, (True, True, False, True, False))
    assert any(" is v" in g or "is args[1]" in g for g in guards), guards


def count_distinct(x, a, b):
    return x * len({a, b})  # hashed into a set: their identity decides


def test_an_object_hashed_is_guarded_by_identity():
    fast = jit(count_distinct, backend="eager")
    a, b = KVCache(), KVCache()
    for pair in ((a, b), (a, b), (a, a), (b, a), (b, b)):
        assert torch.equal(fast(torch.ones(1), *pair), count_distinct(torch.ones(1), *pair))
    guards = [g for entry in fast.explain().graphs for g in entry.guards]
    assert any(g.startswith("ID_MATCH: args[1] is <KVCache") for g in guards), guards


def keep_id(x, cache, log):
    log.append(id(cache))  # the identity leaves the call
    return x + 1


def test_an_identity_that_leaves_the_call_is_the_calls_own():
    fast = jit(keep_id, backend="eager")
    log = []
    caches = [KVCache() for _ in range(3)]
    for cache in caches:
        fast(torch.ones(1), cache, log)
    assert log == [id(c) for c in caches]


class Kind:
    def __init__(self, scale, keys=None):
        self.scale = scale
        if keys is not None:
            self.keys = keys


def scaled(x, obj):
    extra = getattr(obj, "keys", None)
    out = x * obj.scale
    return out if extra is None else out + extra


class OtherKind(Kind):
    pass


def test_what_was_read_of_the_object_is_guarded():
    fast = jit(scaled, backend="eager")
    cases = [
        Kind(2.0),
        Kind(2.0),
        Kind(3.0),  # another value
        Kind(3.0, torch.ones(2)),  # an attribute that was missing
        OtherKind(3.0),  # another class
        Kind(3),  # another type of value
        Kind(3.0, torch.ones(2, dtype=torch.float64)),  # another dtype
    ]
    for obj in cases:
        x = torch.ones(2)
        want, got = scaled(x, obj), fast(x, obj)
        assert got.dtype == want.dtype and torch.equal(got, want), vars(obj)
    assert not fast.explain().fallbacks


class Owner(nn.Module):
    """A module that keeps an object of the same class as the one passed in."""

    def __init__(self):
        super().__init__()
        self.kept = Kind(10.0)

    def forward(self, x, obj):
        obj.scale = obj.scale + 1.0
        return x * self.kept.scale  # read after the write: the same object or not decides


def test_an_argument_that_is_an_object_guarded_by_identity_is_not_served_by_its_structure():
    model = Owner()
    twin = copy.deepcopy(model)
    fast = jit(twin, backend="eager")
    for use_kept in (False, False, True, False):
        want = model(torch.ones(1), model.kept if use_kept else Kind(10.0))
        got = fast(torch.ones(1), twin.kept if use_kept else Kind(10.0))
        assert torch.equal(got, want), use_kept
    assert fast.explain().captures >= 2


@pytest.mark.slow
def test_transformers_generate_reuses_entries_across_generate_calls():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=1, eos_token_id=2
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    eager_forward = model.forward
    kwargs = dict(max_new_tokens=5, min_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None)
    prompts = [torch.randint(3, 100, (2, n)) for n in (4, 7, 5, 9)]
    with torch.no_grad():
        wants = [model.generate(p, **kwargs) for p in prompts]
    model.forward = fast = jit(eager_forward, backend="eager")
    with torch.no_grad():
        for prompt, want in zip(prompts, wants):
            assert torch.equal(model.generate(prompt, **kwargs), want)
    report = fast.explain()
    assert report.captures <= 4 and not report.fallbacks, str(report)
    assert report.graphs[2].hits >= 4 * 3, str(report)  # the decode entry serves every generate
    assert any("layers[0].keys (*, 4, *, 8)" in s for g in report.graphs for s in g.symbolic_sizes)
