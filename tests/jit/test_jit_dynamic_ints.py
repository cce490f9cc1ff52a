"""Automatic dynamic ints (graph/dynamic_ints.py): an int read from the call's inputs that changed
between captures becomes a symbolic graph input, as the token count of transformers' sliding-window
caches must for one decode entry to serve every step. Every call is compared with eager."""

from __future__ import annotations

import re

import pytest
import torch

from jitlab.jit import jit


class Counter:
    """A per-call object holding an int, as `DynamicSlidingWindowLayer.cumulative_length`."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.weights = [0.5, 1.5, 2.5, 3.5]


def sliced(x: torch.Tensor, c: Counter) -> torch.Tensor:
    n = c.n
    b = x.shape[0]
    y = x[:, -n:] * n  # (b, n, 4)
    z = y.reshape(b, n, -1) + torch.arange(n, dtype=x.dtype)[None, :, None]
    return z.sum(1) + n / 2


def counted(x: torch.Tensor, c: Counter) -> torch.Tensor:
    c.n += x.shape[1]  # the count grows by the call, as the cache's update does
    return x.sum(1) * c.n


def branch(x: torch.Tensor, c: Counter) -> torch.Tensor:
    n = c.n
    if n > 8:
        return x[:, :n].sum(1) * 2
    return x[:, -n:].sum(1) - 1


def indexed(x: torch.Tensor, c: Counter) -> torch.Tensor:
    return x * c.weights[c.n % 4] + c.n


def looped(x: torch.Tensor, c: Counter) -> torch.Tensor:
    out = x[:, 0]
    for i in range(c.n):
        out = out + x[:, i] * i
    return out


def _run(fn, lengths, shape=(2, 32, 4)):
    fast = jit(fn, backend="eager")
    for n in lengths:
        x = torch.randn(*shape)
        mine, theirs = Counter(n), Counter(n)
        expected = fn(x, theirs)
        got = fast(x, mine)
        assert torch.equal(got, expected), n
        assert mine.n == theirs.n and type(mine.n) is int, (mine.n, theirs.n)
    return fast.explain()


def test_an_int_that_grows_every_call_is_one_symbolic_entry_after_one_miss():
    report = _run(sliced, [3 + i for i in range(20)])
    assert report.captures == 2, str(report)
    assert report.graphs[1].hits == 18
    assert report.graphs[1].symbolic_sizes == ("args[1].n (int *)",)
    assert "EXPR: type(args[1].n) is int" in report.graphs[1].guards


def test_an_int_the_call_counts_up_is_replayed_from_the_graph():
    report = _run(counted, [5, 9, 2, 12, 7, 3, 15, 8, 9, 11, 4, 13, 6, 10, 14, 5, 7, 12, 2, 16], shape=(2, 3))
    assert report.captures == 2, str(report)


def test_an_int_that_picks_a_branch_is_guarded_on_its_range_on_both_sides():
    lengths = [3, 4, 5, 6, 7, 9, 10, 11, 12, 2, 13, 20, 8, 30, 5]
    report = _run(branch, lengths)
    # the first value, then one entry per side of `n > 8`, each serving every value on its side
    assert report.captures == 3, str(report)
    guards = sorted(re.sub(r"v\d+", "n", g) for e in report.graphs for g in e.guards if g.startswith("SHAPE"))
    assert guards == ["SHAPE: n > 8", "SHAPE: not (n > 8)"], guards  # the range, not the value


def test_an_int_used_as_a_list_index_stays_correct():
    report = _run(indexed, [5, 9, 2, 12, 7, 3, 15, 8, 9, 11, 4, 13, 6, 10, 14, 5, 7, 12, 2, 16])
    pins = [p for entry in report.graphs for p in entry.size_pins]
    assert any("used as a key or index" in p for p in pins), pins


def test_an_int_handed_to_range_stays_static_with_the_reason():
    report = _run(looped, [3, 4, 5, 6, 4, 3])
    assert report.captures == 4, str(report)
    pins = report.graphs[1].size_pins
    assert len(pins) == 1 and pins[0].startswith("args[1].n == 4: handed to range() at "), pins


def test_an_int_in_a_graph_whose_sizes_stay_static_is_guarded_by_value():
    def data(x, c):
        total = torch.arange(c.n).sum().item()  # an int read from tensor data: sizes stay static
        if c.n > 8:
            return x * total
        return x - total

    report = _run(data, [3, 4, 12, 5, 9, 4, 10, 3], shape=(2, 3))
    entry = report.graphs[1]
    assert entry.symbolic_sizes == () and "EQUALS_MATCH: args[1].n == 4" in entry.guards, str(report)


def test_bools_zero_and_one_stay_constants():
    def flagged(x, flag, k):
        return x * 2 if flag else x - k

    fast = jit(flagged, backend="eager")
    for flag, k in [(True, 0), (False, 1), (True, 0), (False, 1)]:
        x = torch.randn(3)
        assert torch.equal(fast(x, flag, k), flagged(x, flag, k))
    report = fast.explain()
    assert report.captures == 2 and all(e.symbolic_sizes == () for e in report.graphs), str(report)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize(
    ("fn", "lengths"),
    [(sliced, [3, 4, 5, 9, 17, 6]), (counted, [3, 4, 5, 9]), (branch, [3, 4, 12, 5, 9, 4, 10, 3])],
    ids=["sliced", "counted", "branch"],
)
def test_compiled_graphs_keep_the_int_symbolic(backend, fn, lengths):
    """A named compiling backend gets the int as a SymInt input (Mistral's sliding-window cache with
    Inductor): as many captures as with the eager backend, every result equal to eager's
    (Inductor's up to rounding), and the count written back a plain int."""
    graphs_kept = _run(fn, lengths).captures
    compiled = jit(fn, backend=backend)
    for n in lengths:
        x = torch.randn(2, 32, 4)
        mine, theirs = Counter(n), Counter(n)
        expected, got = fn(x, theirs), compiled(x, mine)
        if backend == "aot_eager":
            assert torch.equal(got, expected), n
        else:
            torch.testing.assert_close(got, expected)
        assert mine.n == theirs.n and type(mine.n) is int, (mine.n, theirs.n)
    report = compiled.explain()
    assert report.captures == graphs_kept and report.captures < len(lengths), str(report)
    assert any(entry.symbolic_sizes for entry in report.graphs), str(report)


WEIGHT = torch.nn.Parameter(torch.randn(4, 4))
LENGTHS = [3, 4, 5, 7, 9, 6, 11, 4, 8, 3]


def weighted(x, c):
    n = c.n
    return (x[:, -n:] @ WEIGHT).sum(1) * n


def trained(x, c):
    """A step with host operations: a backward pass inside the call, and an int read beside it."""
    WEIGHT.grad = None
    with torch.no_grad():
        n = c.n
    loss = ((x[:, -n:] @ WEIGHT).sum(1) * n).pow(2).mean()
    loss.backward()
    return loss.detach(), WEIGHT.grad.clone()


def test_a_compiled_forward_keeps_the_int_symbolic_through_the_callers_backward():
    compiled = jit(weighted, backend="aot_eager")
    for n in LENGTHS:
        x = torch.randn(2, 16, 4)
        grads = []
        for fn in (weighted, compiled):
            out = fn(x, Counter(n))
            out.pow(2).mean().backward()
            grads.append((out.detach(), WEIGHT.grad.clone()))
            WEIGHT.grad = None
        assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1]), n
    report = compiled.explain()
    assert report.captures == 2 and report.graphs[1].symbolic_sizes == ("args[1].n (int *)",), str(report)


def test_a_compiled_step_with_a_backward_inside_captures_again_with_the_int_constant():
    """Host operations (the backward pass) make the compiled graph parts compiled one by one, which
    take no symbolic int: the first capture with the int symbolic is not kept, the next ones keep
    it constant, and explain() says why. Every loss and gradient equal to eager's."""
    compiled = jit(trained, backend="aot_eager")
    for n in LENGTHS:
        x = torch.randn(2, 16, 4)
        (loss, grad), (loss_jit, grad_jit) = trained(x, Counter(n)), compiled(x, Counter(n))
        assert torch.equal(loss, loss_jit) and torch.equal(grad, grad_jit), n
    report = compiled.explain()
    assert all(entry.symbolic_sizes == () for entry in report.graphs), str(report)
    assert "args[1].n stays a constant: the compiled graph has host operations" in str(report), str(report)


def test_a_callable_backend_keeps_the_int_constant():
    """A callable backend gets real values and could bake the int in."""
    compiled = jit(sliced, backend=lambda gm, inputs: gm.forward)
    for n in (3, 4, 5):
        x = torch.randn(2, 8, 4)
        assert torch.equal(compiled(x, Counter(n)), sliced(x, Counter(n)))
    assert compiled.explain().captures == 3


SCALE = {"alpha": -0.5}


def scaled(x, c):
    """An int and a global float that both change between calls: the int becomes a symbolic input,
    the float an input that the run on fake tensors takes as a constant."""
    n = c.n
    c.n += 1
    return x[:, -n:].sum(1) * SCALE["alpha"] + n


def test_a_float_input_beside_a_symbolic_int_is_compiled():
    # the fakes handed to the compiler left the float out, one fewer than the graph's inputs: the
    # compile raised IndexError and the graph ran eagerly ("backend failed", fuzz seed 102)
    compiled = jit(scaled, backend="aot_eager")
    for n, alpha in ((3, -0.5), (4, 1.1), (5, 0.25), (6, 2.0)):
        SCALE["alpha"] = alpha
        x = torch.randn(2, 8, 4)
        mine, theirs = Counter(n), Counter(n)
        assert torch.equal(compiled(x, mine), scaled(x, theirs)) and mine.n == theirs.n
    report = compiled.explain()
    assert report.captures == 2 and any(entry.symbolic_sizes for entry in report.graphs), str(report)
    assert not any(entry.backend_note for entry in report.graphs), str(report)
    assert "backend failed" not in str(report)
