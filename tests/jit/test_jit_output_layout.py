"""A compiled graph's outputs keep eager's layout: an output eager allocated contiguous comes back
contiguous whatever strides the compiler chose, without copying views of inputs, and Inductor's
transposed `torch.cat` of an empty tensor (transformers' cache on its first update) no longer
multiplies the entries that read it."""

import pytest
import torch
import torch.fx as fx

import jitlab
from jitlab.jit.frontend.output_layout import allocated_contiguous_outputs, keep_eager_layout


def _traced(fn, *examples):
    """`fn` as a graph whose nodes hold eager's values of one call, as a capture records them."""
    gm = fx.symbolic_trace(fn)
    values = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            values[node] = examples[len(values)]
        elif node.op != "output":
            args = fx.node.map_arg(node.args, values.__getitem__)
            kwargs = fx.node.map_arg(node.kwargs, values.__getitem__)
            if node.op == "call_function":
                values[node] = node.target(*args, **kwargs)
            else:  # call_method
                values[node] = getattr(args[0], node.target)(*args[1:], **kwargs)
            node.meta["example_value"] = values[node]
    return gm


def made_and_viewed(x):
    fresh = x * 2  # allocated contiguous by eager
    view = x.transpose(0, 1)  # a view of the input
    return (fresh, view)


def test_only_outputs_eager_allocated_contiguous_are_kept_contiguous():
    x = torch.randn(3, 4)
    gm = _traced(made_and_viewed, x)
    assert allocated_contiguous_outputs(gm) == [0]  # the view is not contiguous in eager


def test_a_compiler_that_transposes_an_output_gets_eager_layout_back_and_views_stay_views():
    x = torch.randn(3, 4)
    gm = _traced(made_and_viewed, x)

    def transposing_compiler(*args):
        fresh, view = gm(*args)
        # the same values, stored transposed: what Inductor may choose for a fresh output
        return (fresh.t().contiguous().t(), view)

    run = keep_eager_layout(gm, transposing_compiler)
    y = torch.randn(3, 4)
    fresh, view = run(y)
    assert fresh.is_contiguous() and torch.equal(fresh, y * 2)
    assert view.data_ptr() == y.data_ptr() and view.stride() == (1, 4)  # still the input's memory


def test_an_output_sharing_memory_with_an_input_is_not_copied_even_when_eager_had_it_contiguous():
    x = torch.randn(4, 4)
    gm = _traced(lambda x: (x.view(4, 4),), x)
    assert allocated_contiguous_outputs(gm) == [0]
    run = keep_eager_layout(gm, lambda x: (x.t(),))  # a compiler returning a transposed alias
    y = torch.randn(4, 4)
    (out,) = run(y)
    assert out.data_ptr() == y.data_ptr()  # aliasing kept: the program may write through it


def test_an_output_contiguous_only_through_a_dimension_of_size_one_is_left_as_the_compiler_gives_it():
    x = torch.randn(1, 5, 2, 16)
    gm = _traced(lambda x: (x.transpose(1, 2) + 1,), x)
    assert allocated_contiguous_outputs(gm) == []  # eager's sum keeps its input's transposed layout
    gm = _traced(lambda x: (x.transpose(1, 2).contiguous() * 2,), x)
    assert allocated_contiguous_outputs(gm) == [0]  # a size-1 batch, strides canonical all the same
    gm = _traced(lambda x: (x[:, :1].transpose(1, 2),), torch.randn(2, 3, 4))
    assert allocated_contiguous_outputs(gm) == []  # a view, contiguous only in its size-1 dims


def cache_first_update(x, w):
    k = (x @ w).view(1, x.shape[1], 2, 16).transpose(1, 2)
    return torch.cat([torch.tensor([], dtype=k.dtype), k], dim=-2)


@pytest.mark.slow
def test_inductor_returns_eager_strides_for_a_cache_first_update_over_changing_lengths():
    jitted = jitlab.jit(cache_first_update, backend="inductor")
    w = torch.randn(32, 32)
    for length in (8, 12, 5, 16, 7):
        x = torch.randn(1, length, 32)
        expected, got = cache_first_update(x, w), jitted(x, w)
        torch.testing.assert_close(got, expected)
        assert got.stride() == expected.stride(), length
    report = jitted.explain()
    assert report.captures == 2 and sum(g.hits for g in report.graphs) == 3
    assert not report.fallback_reasons and report.disabled is None
