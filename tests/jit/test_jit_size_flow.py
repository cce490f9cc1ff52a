"""Sizes that stay symbolic through Python's handling of shapes (unpacking, slicing, `torch.Size +
tuple`, `**kwargs`, `split`), and sizes that must be pinned (a dict key, `range`, an f-string, native
code): never a wrong result, each pin named in explain() with its reason and line (issue 44)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from jitlab.jit import jit

SHAPES = [(2, 5), (2, 8), (3, 11), (2, 16), (4, 17), (3, 23), (2, 30), (4, 37), (3, 44), (4, 50)]


def run_shapes(fn, make, shapes=SHAPES, backend="eager"):
    """Call `fn` eagerly and jitted on inputs of every shape; outputs must be equal."""
    fast = jit(fn, backend=backend)
    for shape in shapes:
        args = make(*shape)
        expected, got = fn(*args), fast(*args)
        assert_same(got, expected, shape)
    return fast.explain()


def assert_same(got, expected, where):
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.shape == expected.shape, where
        assert torch.allclose(got, expected, atol=1e-5), where
    elif isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), where
        for g, e in zip(got, expected):
            assert_same(g, e, where)
    else:
        assert type(got) is type(expected) and got == expected, (where, got, expected)


def heads(x):
    """transformers' attention: `(*input_shape, -1, head_dim)`, `(*x.shape[:-1], -1, d)` and
    `x.size()[:-1] + (nf,)` (pytorch_utils.Conv1D)."""
    input_shape = x.shape[:-1]
    hidden_shape = (*input_shape, -1, 4)
    q = x.view(hidden_shape).transpose(1, 2)
    size_out = x.size()[:-1] + (x.shape[-1],)
    back = q.transpose(1, 2).reshape(size_out)
    return back * 2 + x.view(*x.shape[:-1], -1, 2).sum(-1).repeat_interleave(2, -1)


def unpacked(x):
    """`B, T, C = x.shape`, integer and `math` arithmetic, a torch.Size built from a list."""
    B, T, C = x.shape
    half = math.ceil(T / 2)
    scale = 1.0 / math.sqrt(C)
    y = x[:, :half] * scale
    z = y.new_zeros(torch.Size([B, T - half, C]))
    return torch.cat([y, z], dim=1).reshape(B * T, C) + len(x.shape)


class Holder:
    def __init__(self, size):
        self.size = size


def helper(sizes, x):
    """Interpreted library-like code given sizes in a list and a dict."""
    b, t = sizes["shape"][0], sizes["shape"][1]
    return x.reshape(b * t, -1).sum(0)


def stored(x):
    """Sizes stored in a list, a dict and an object made in the call, and given to a function."""
    shape = [x.shape[0], x.shape[1]]
    holder = Holder(shape[1] * 2)
    kwargs = {"shape": shape}
    return helper(kwargs, x) + x.new_ones(holder.size).sum()


def split_heads(x):
    """`split` of the last dimension (fixed) of a tensor whose batch and length vary (GPT-2)."""
    q, k, v = torch.cat([x, x * 2, x * 3], dim=-1).split(x.shape[-1], dim=2)
    return q + k * v


def keyword_sizes(x):
    def inner(*, batch_size, length):
        return x.new_zeros(batch_size, length) + 1

    kw = {"batch_size": x.shape[0], "length": x.shape[1]}
    return inner(**kw) + x.sum(-1)  # a call with **kwargs: DICT_MERGE moves the sizes


@pytest.mark.parametrize("fn", [heads, unpacked, stored, split_heads, keyword_sizes])
def test_sizes_moved_by_python_stay_symbolic(fn):
    report = run_shapes(fn, lambda b, t: (torch.randn(b, t, 8),))
    assert report.captures == 2 and not report.fallbacks and report.eager_misses == 0, str(report)
    assert report.graphs[-1].hits == len(SHAPES) - 2
    assert report.graphs[-1].size_pins == (), str(report)


def chunked(x):
    return [c.sum() for c in x.chunk(3, dim=0)]  # 3 chunks of 6 rows, but 2 of 4 rows


def split_rows(x):
    return [s.mean() for s in x.split(2, dim=1)]  # as many pieces as half the length


def test_a_number_of_results_that_depends_on_a_size_is_a_guard():
    shapes = [(5, 3), (6, 3), (7, 3), (4, 3), (6, 3), (5, 3), (4, 3)]
    report = run_shapes(chunked, lambda b, t: (torch.randn(b, t),), shapes)
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert any("//" in g for g in guards), guards  # the count of chunks, as an expression
    assert report.captures <= 4 and not report.fallbacks, str(report)
    report = run_shapes(
        split_rows, lambda b, t: (torch.randn(b, t),), [(2, 4), (2, 6), (3, 6), (2, 4), (2, 5)]
    )
    assert not report.fallbacks


def dict_key(x, table):
    return x * table[x.shape[1]]  # a size used as a key: its value decides


def loop(x):
    total = x[:, 0]
    for i in range(1, x.shape[1]):  # range: the length is fixed
        total = total + x[:, i] * i
    return total


def formatted(x, log):
    log.append(f"length {x.shape[1]}")  # an f-string: the text holds the value
    return x + 1


def native_read(x):
    return x * math.factorial(x.shape[1] % 5)  # native code reads the size


TABLE = {n: float(n % 3 + 1) for n in range(2, 60)}


@pytest.mark.parametrize(
    "fn, extra, reason",
    [
        (dict_key, lambda: (TABLE,), "used as a key"),
        (loop, lambda: (), "range()"),
        (formatted, lambda: ([],), "format"),
        (native_read, lambda: (), "factorial()"),
    ],
)
def test_a_size_that_must_be_pinned_is_pinned_and_named(fn, extra, reason):
    shapes = [(2, 5), (2, 8), (3, 8), (2, 11), (2, 8), (3, 5), (3, 11)]
    report = run_shapes(fn, lambda b, t: (torch.randn(b, t), *extra()), shapes)
    assert not report.fallbacks and report.captures == 4, str(report)  # one per length, the batch symbolic
    pins = [p for g in report.graphs for p in g.size_pins]
    assert pins and all("args[0].size()[1]" in p for p in pins), pins
    assert all(reason in p and "test_jit_size_flow.py:" in p for p in pins), pins


def test_the_formatted_text_and_the_stored_values_are_the_calls_own():
    log_eager, log_jit = [], []
    fast = jit(formatted, backend="eager")
    for t in (5, 8, 8, 5, 11):
        x = torch.randn(2, t)
        assert torch.equal(fast(x, log_jit), formatted(x, log_eager))
    assert log_jit == log_eager


class Attention(nn.Module):
    """A module in the style of transformers' attention: unpacked shapes, a `**kwargs` mask call."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def mask(self, *, batch_size, q_length, kv_length):
        return torch.ones(batch_size, 1, q_length, kv_length).tril()

    def forward(self, x):
        input_shape = x.shape[:-1]
        q, k, v = self.qkv(x).split(16, dim=2)
        shape = (*input_shape, -1, 4)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        kwargs = {"batch_size": input_shape[0], "q_length": input_shape[1], "kv_length": k.shape[2]}
        mask = self.mask(**kwargs)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(mask == 0, -1e9).softmax(-1)
        return self.out((scores @ v).transpose(1, 2).reshape(*input_shape, -1))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_attention_layer_is_served_by_two_captures(backend):
    torch.manual_seed(0)
    model = Attention().eval()
    report = run_shapes(model, lambda b, t: (torch.randn(b, t, 16),), backend=backend)
    assert report.captures == 2 and not report.fallbacks, str(report)
    assert report.graphs[-1].symbolic_sizes == ("args[0] (*, *, 16)",), str(report)


def remainder_truth(x):
    if x.shape[0] % 4:  # the truth of a size: `B % 4 != 0`, a guard on B
        return x * 2
    return x - 1


def test_the_truth_of_a_size_is_a_guard():
    # main before issue 44 took the branch of batch 5 for batch 8: the fake run decided `bool(B % 4)`
    # and the entry kept no guard for it (a wrong result)
    report = run_shapes(
        remainder_truth, lambda b, t: (torch.randn(b, t),), [(5, 3), (6, 3), (8, 3), (7, 3), (4, 3)]
    )
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert any("% 4" in g for g in guards), guards


def fourier(x):
    return torch.fft.fftn(x, dim=(1, 2)).real * 2  # FNet's token mixing


def test_composite_operations_keep_sizes_symbolic_on_the_fake_run():
    # C++ fft_fftn reads `sizes()`, which fixed the batch and the length until the fake run used
    # torch's Python dispatcher, as TorchDynamo's does
    report = run_shapes(fourier, lambda b, t: (torch.randn(b, t, 8),))
    assert report.captures == 2 and not report.graphs[-1].size_pins, str(report)


def data_branch(x):
    if x.sum() > 0:  # a decision on data, re-checked after the graph on every call
        return x.cumsum(0) * 2
    return x - x.mean(0)


STATE = torch.zeros(3)


def mutating_branch(x):
    STATE.add_(x.sum(0))  # the graph changes an outside tensor: the decision is checked before it
    if x.mean() > 0:
        return x * 2
    return x - 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_decision_on_data_leaves_the_sizes_symbolic(backend):
    for fn in (data_branch, mutating_branch):
        fast = jit(fn, backend=backend)
        STATE.zero_()
        eager_state = torch.zeros(3)
        for b in (3, 4, 5, 6, 7, 8, 9, 4, 11):
            for sign in (1.0, -1.0):
                x = torch.rand(b, 3) * sign
                got = fast(x)
                jit_state = STATE.clone()
                STATE.copy_(eager_state)
                want = fn(x)
                eager_state = STATE.clone()
                STATE.copy_(jit_state)
                assert torch.allclose(got, want), (fn.__name__, b, sign)
                assert torch.allclose(jit_state, eager_state), (fn.__name__, b, sign)
        report = fast.explain()
        assert report.captures <= 4 and not report.fallbacks, str(report)
        assert any(g.symbolic_sizes for g in report.graphs) and report.eager_misses == 0, str(report)


def shape_checked(x):
    b, t, c = x.shape
    weights = torch.bmm(x, x.transpose(1, 2))
    if weights.size() != (b, t, t):  # transformers' attention checks
        raise ValueError("unexpected size")
    if x.shape[:2] == (4, 17):  # one shape takes another path
        return x * 3
    return x * 2 + weights.sum(-1, keepdim=True)


def test_a_comparison_of_whole_sizes_is_a_guard_per_item():
    report = run_shapes(shape_checked, lambda b, t: (torch.randn(b, t, 8),))
    # static, then (batch != 4), (4, 17), (4, not 17): each item compared is a fact
    assert report.captures == 4 and not report.fallbacks, str(report)
    assert all(not g.size_pins for g in report.graphs), str(report)
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert any("== 17" in g for g in guards), guards  # (4, 17) is told apart from the others


class EncoderDecoder(nn.Module):
    """Two inputs whose sizes change at different calls (Whisper: decoder ids, then audio batch)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 8)
        self.dec = nn.Embedding(50, 8)

    def forward(self, features, ids):
        memory = self.enc(features).mean(1, keepdim=True)
        return (self.dec(ids) + memory).sum(-1)


def test_every_tensor_argument_gets_symbolic_sizes_when_one_changed():
    torch.manual_seed(0)
    model = EncoderDecoder().eval()
    fast = jit(model, backend="eager")
    for batch, length in SHAPES:  # the decoder length changes first, the batch of both later
        features, ids = torch.randn(batch, 5, 6), torch.randint(0, 50, (batch, length))
        assert torch.allclose(fast(features, ids), model(features, ids), atol=1e-6)
    report = fast.explain()
    assert report.captures == 2 and report.graphs[-1].symbolic_sizes == (
        "args[0] (*, *, 6)",
        "args[1] (*, *)",
    )


def keyword_checked(x, **kwargs):
    sizes = {"rows": x.shape[0], "cols": x.shape[1]}
    if "rows" in sizes and "deprecated" not in kwargs:  # `in` reads a dict's keys, not its values
        return x.reshape(sizes["rows"] * sizes["cols"]) * 2
    return x


def test_a_key_searched_in_a_dict_of_sizes_leaves_them_symbolic():
    report = run_shapes(keyword_checked, lambda b, t: (torch.randn(b, t),))
    assert report.captures == 2 and not report.graphs[-1].size_pins, str(report)


ROWS = torch.randn(3, 4)


def with_outside_rows(x):
    return x @ ROWS.t() + ROWS.shape[0]  # a global tensor whose number of rows changes between calls


def test_a_tensor_read_from_outside_gets_symbolic_sizes_after_one_miss():
    global ROWS
    fast = jit(with_outside_rows, backend="eager")
    for rows in (3, 5, 6, 2, 7, 4):
        ROWS = torch.randn(rows, 4)
        x = torch.randn(2, 4)
        assert torch.allclose(fast(x), with_outside_rows(x))
    report = fast.explain()
    # its width is matched with x's, which is static: shown as the number
    assert report.captures == 2 and "globals['ROWS'] (*, 4)" in report.graphs[-1].symbolic_sizes[0], str(
        report
    )


def half_resolution(x):  # ViT's interpolate_pos_encoding: sizes from the input handed to F.interpolate
    b, c, h, w = x.shape
    small = nn.functional.interpolate(x, size=(h // 2, w // 2), mode="bilinear", align_corners=False)
    padded = nn.functional.pad(small, (0, w - w // 2))
    return padded.reshape(b, -1).mean(-1)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_sizes_handed_to_a_functional_written_in_python_stay_symbolic(backend):
    sides = [(2, 8), (3, 12), (2, 16), (4, 20), (3, 26)]
    explanation = run_shapes(half_resolution, lambda b, s: (torch.randn(b, 3, s, s),), sides, backend)
    assert explanation.captures == 2 and not explanation.disabled, str(explanation)
    assert not any(g.size_pins for g in explanation.graphs), [g.size_pins for g in explanation.graphs]
