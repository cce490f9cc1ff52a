"""Sizes that pass through a 0-d tensor (`torch.div(x.size(1), w, rounding_mode="trunc")` handed to
`view`, Longformer's chunking) and strides read by Python (`as_strided(size, list(x.stride()))`) keep
the sizes symbolic: one capture more serves every later shape, equal to eager on every call; a 0-d
tensor computed from tensor data is not taken for a size (issue 44)."""

from __future__ import annotations

import pytest
import torch
from test_jit_size_flow import assert_same, run_shapes

from jitlab.jit import jit
from jitlab.jit.graph.size_tensors import trunc_div

# lengths with and without a remainder, batches that change: the sizes of every call differ
SHAPES = [(2, 8), (2, 16), (3, 24), (2, 40), (4, 8), (3, 56), (2, 64), (4, 32), (3, 48), (5, 72)]


def chunked(x):
    """Longformer's `_chunk` and `_sliding_chunks_query_key_matmul`: the chunk count as a tensor."""
    w = 4
    chunks = torch.div(x.size(1), w, rounding_mode="trunc") - 1
    view = x.view(x.size(0), torch.div(x.size(1), 2 * w, rounding_mode="trunc"), 2 * w, x.size(2))
    size = list(view.size())
    size[1] = size[1] * 2 - 1
    stride = list(view.stride())
    stride[1] = stride[1] // 2
    overlapping = view.as_strided(size=size, stride=stride)
    scores = overlapping.new_zeros((x.size(0), chunks + 1, w, 2 * w + 1))
    scores[:, :-1, :, :w] = overlapping[:, :, :w, :w]
    return overlapping.sum(-1), scores


def padded(x):
    """Longformer's `_pad_to_window_size`: the length padded to a multiple of the window."""
    w = 8
    pad = (w - x.shape[1] % w) % w
    x = torch.nn.functional.pad(x, (0, 0, 0, pad))
    return chunked(x)[0][:, : x.shape[1] - pad]


def signed(x):
    """`trunc` rounds toward zero, `floor` down: they differ on negative sizes' differences."""
    t = x.size(1)
    toward_zero = torch.div(t - 20, 6, rounding_mode="trunc") + 20
    down = torch.div(t - 20, 6, rounding_mode="floor") + 20
    return x.new_zeros(toward_zero, 2), x.new_ones(down).narrow(0, 0, torch.div(t, 4, rounding_mode="floor"))


def as_operand(x):
    """The 0-d tensor used as a tensor too: its dtype and value stay those eager code gives."""
    n = torch.div(x.size(1), 2, rounding_mode="floor")
    return x.sum(-1) * n, n, x.reshape(-1, n * 2 if x.size(1) % 2 == 0 else 1)


def from_data(x, k):
    """A 0-d tensor computed from data handed to `view`: a data read, never taken for a size."""
    rows = torch.div(k.sum(), 2, rounding_mode="trunc")
    return x.reshape(rows, -1)


def rand(b, t, c=4):
    return (torch.randn(b, t, c),)


@pytest.mark.parametrize("fn", [chunked, padded], ids=lambda f: f.__name__)
def test_chunk_count_as_tensor_keeps_sizes_symbolic(fn):
    report = run_shapes(fn, rand, SHAPES)
    assert report.captures == 2, report
    assert report.misses == 1
    assert report.graphs[1].symbolic_sizes == ("args[0] (*, *, *)",), report
    assert report.graphs[1].hits == len(SHAPES) - 2


def test_chunk_count_without_padding_multiple_of_window():
    shapes = [(2, 5), (2, 9), (3, 12), (2, 17), (4, 20), (3, 26), (2, 31), (4, 37), (3, 44), (4, 50)]
    report = run_shapes(padded, rand, shapes)
    assert report.captures == 2, report
    assert report.graphs[1].hits == len(shapes) - 2


def test_trunc_and_floor_division_of_sizes_on_both_signs():
    shapes = [(1, t) for t in (30, 4, 8, 13, 19, 20, 21, 27, 2, 41, 9, 14)]
    report = run_shapes(signed, lambda b, t: rand(b, t), shapes)
    assert report.captures == 2, report
    assert report.graphs[1].hits == len(shapes) - 2


def test_size_tensor_used_as_a_tensor_stays_a_tensor():
    fast = jit(as_operand, backend="eager")
    for b, t in [(2, 6), (3, 10), (2, 14), (4, 7), (3, 22), (2, 9)]:
        x = torch.randn(b, t, 3)
        expected, got = as_operand(x), fast(x)
        assert_same(got, expected, (b, t))
        assert got[1].dtype == torch.int64 and got[1].dim() == 0


def test_tensor_from_data_handed_to_view_is_rechecked():
    fast = jit(from_data, backend="eager")
    for i, (total, width) in enumerate([(8, 4), (8, 4), (12, 4), (6, 2), (8, 4), (20, 5)]):
        k = torch.tensor([total - 2, 2])
        x = torch.randn(total // 2 * width)
        assert_same(fast(x, k), from_data(x, k), i)
    assert all("trunc_div" not in graph.code for graph in fast.explain().graphs)


@pytest.mark.parametrize("backend", ["aot_eager"])
def test_chunk_count_with_a_compiling_backend(backend):
    # no chunk count of 1: the compiler specialises a computed size 1, as TorchDynamo's does
    report = run_shapes(chunked, rand, [(2, 16), (3, 24), (2, 40), (3, 56), (2, 64)], backend=backend)
    assert report.captures == 2, report


@pytest.mark.parametrize("a", [-9, -8, -7, -1, 0, 1, 7, 8, 9])
@pytest.mark.parametrize("b", [-4, -3, 3, 4])
def test_trunc_div_is_torch_trunc_division(a, b):
    assert trunc_div(a, b) == int(torch.div(a, b, rounding_mode="trunc"))


@pytest.mark.slow
def test_longformer_on_ten_text_shapes_takes_two_captures(monkeypatch):
    """The zoo's Longformer (attention window 8) over `jitlab capture --shapes`'s 10 shapes: it pads
    the length to the window and chunks it with `torch.div(..., rounding_mode="trunc")`. Its run on
    fake tensors with every size symbolic passed the 30 s CPU limit on a slow runner (Python 3.13),
    and the batch stayed static (a third capture): the limit is raised here, since this test is about
    the sizes, not the limit (test_slow_fake_run_keeps_only_the_sizes_that_varied_symbolic is)."""
    pytest.importorskip("transformers")
    from jitlab.jit.graph import fake_run

    monkeypatch.setattr(fake_run, "FAKE_RUN_CPU_S", 600.0)
    from jitlab.capture.zoo import transformers_zoo
    from jitlab.capture.zoo.workloads import TEXT_SHAPES

    torch.manual_seed(0)
    model = transformers_zoo.build(*transformers_zoo.MODELS["AllenaiLongformerBase"][:3])
    fast = jit(model, backend="eager")
    for i, (batch, length) in enumerate(TEXT_SHAPES):
        ids = torch.randint(
            0, transformers_zoo.VOCAB, (batch, length), generator=torch.Generator().manual_seed(i)
        )
        with torch.no_grad():
            expected, got = model(input_ids=ids), fast(input_ids=ids)
        assert_same(got.to_tuple(), expected.to_tuple(), (batch, length))
    report = fast.explain()
    assert report.captures == 2 and report.disabled is None, report.miss_reasons
    assert report.graphs[1].hits == len(TEXT_SHAPES) - 2
    assert report.graphs[1].symbolic_sizes == ("kwargs['input_ids'] (*, *)",)


def test_slow_fake_run_keeps_only_the_sizes_that_varied_symbolic(monkeypatch):
    """When the run on fake tensors with every dimension symbolic takes too long (timm's Swin: sympy
    on its window partitions), the capture keeps only the dimensions that varied symbolic; the
    others are checked by the tensor guards, so a call that changes them misses."""
    from jitlab.jit.graph import shapes
    from jitlab.jit.graph.fake_run import SlowFakeRun
    from jitlab.jit.reasons import ReasonKind

    real = shapes.retrace

    def slow_unless_only_varied(gm, placeholders, dims_of, facts):
        if any(dims - frozenset(n.meta.get("jit_varied", ())) for n, dims in dims_of.items()):
            raise SlowFakeRun("slow (injected)", ReasonKind.DATA_DEPENDENT)
        return real(gm, placeholders, dims_of, facts)

    monkeypatch.setattr(shapes, "retrace", slow_unless_only_varied)

    def halves(x):
        b, t, c = x.shape
        return x.view(b, t // 2, 2, c).sum(2) * t

    calls = [(2, 8, 3), (3, 8, 3), (4, 8, 3), (5, 8, 3), (2, 10, 3), (3, 12, 3), (4, 6, 3), (2, 8, 5)]
    report = run_shapes(halves, lambda b, t, c: (torch.randn(b, t, c),), calls)
    assert report.captures == 4, report.miss_reasons
    assert [g.symbolic_sizes for g in report.graphs] == [
        (),
        ("args[0] (*, 8, 3)",),
        ("args[0] (*, *, 3)",),
        ("args[0] (*, *, *)",),
    ]
    assert [g.hits for g in report.graphs] == [0, 2, 2, 0]
