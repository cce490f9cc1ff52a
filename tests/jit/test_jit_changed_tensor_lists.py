"""A list or dict of tensors read after the call changed it (ParityBench's Hawkeye `RegularLoss`
normalises the tensors of its list argument in place, `x[i] = x[i] / x[i].norm(...)`, then reads
them): the tensors it held before the call are graph inputs, guarded where they were, and the
call's writes are replayed on the caller's container. jitlab.jit ran such calls eagerly ("reads a
list after changing it in the same call"); TorchDynamo makes one graph."""

from __future__ import annotations

import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program

from jitlab.jit import jit


class RegularLoss(nn.Module):
    def __init__(self, num_parts: int = 3):
        super().__init__()
        self.num_parts = num_parts

    def forward(self, x):
        corr = torch.zeros(self.num_parts, self.num_parts)
        for i in range(self.num_parts):
            x[i] = x[i].squeeze()
            x[i] = torch.div(x[i], x[i].norm(dim=1, keepdim=True))
        for i in range(self.num_parts):
            for j in range(self.num_parts):
                corr[i, j] = torch.mean(torch.mm(x[i], x[j].t()))
        return torch.sum(torch.triu(corr))


def _parts(n: int = 3) -> list[torch.Tensor]:
    return [torch.rand(4, 1, 4) for _ in range(n)]


def test_a_list_argument_normalised_in_place_is_one_graph_and_the_caller_sees_the_writes():
    # check_program compares the caller's list after each call with eager's
    jitted = check_program(RegularLoss, [(([*_parts()],), {}) for _ in range(4)])
    assert_one_graph(jitted)


def test_the_list_written_holds_the_graphs_tensors_and_keeps_the_others():
    model = RegularLoss(num_parts=2)
    jitted = jit(model)
    for _ in range(3):
        parts = _parts(3)
        kept = parts[2]
        jitted(parts)
        assert parts[2] is kept  # not written: the caller's own tensor
        for p in parts[:2]:
            assert p.shape == (4, 4) and torch.allclose(p.norm(dim=1), torch.ones(4))
    assert_one_graph(jitted)


def swap_then_read(x):
    x[0], x[1] = x[1], x[0]
    return x[0] * 2 + x[1]


def test_items_swapped_then_read_equal_eager():
    jitted = check_program(
        lambda: swap_then_read, [(([torch.randn(3), torch.randn(3)],), {}) for _ in range(3)]
    )
    assert_one_graph(jitted)
    a, b = torch.randn(3), torch.randn(3)
    items = [a, b]
    assert torch.equal(jitted(items), b * 2 + a)
    assert items[0] is b and items[1] is a


def double_first(x):
    x[0] = x[0] * 2
    return x[0] + x[1]


def test_one_tensor_in_two_places_is_told_from_two_tensors():
    """`[a, a]`: the item written is the one read back at index 1 in eager code only when both are
    the same tensor; the guards tell the two cases apart."""
    jitted = jit(double_first)
    a = torch.ones(2)
    for _ in range(2):
        assert torch.equal(jitted([a, a]), torch.full((2,), 3.0))
    b, c = torch.ones(2), torch.full((2,), 5.0)
    assert torch.equal(jitted([b, c]), torch.full((2,), 7.0))
    assert torch.equal(jitted([a, a]), torch.full((2,), 3.0))
    assert jitted.explain().fallbacks == ()


def write_then_iterate(x):
    x[1] = -x[1]
    total = torch.zeros(())
    for t in x:
        total = total + t.sum()
    return total, len(x)


def test_a_loop_and_len_after_a_write_follow_the_list_before_the_call():
    inputs = [(([torch.randn(2) for _ in range(n)],), {}) for n in (3, 3, 4, 3)]
    jitted = check_program(lambda: write_then_iterate, inputs)
    assert jitted.explain().fallbacks == ()
    assert jitted.explain().captures == 2  # a length of 3 and one of 4


def write_a_dict_then_read(d):
    d["a"] = d["a"] * 2
    return d["a"] + d["b"], sorted(d)


def test_a_dict_of_tensors_written_then_read_equals_eager():
    inputs = [(({"a": torch.randn(2), "b": torch.randn(2)},), {}) for _ in range(3)]
    jitted = check_program(lambda: write_a_dict_then_read, inputs)
    assert_one_graph(jitted)


OUTSIDE: list = []


def accumulate(x):
    OUTSIDE[0] = OUTSIDE[0] + x
    return OUTSIDE[0] * 2


def test_an_outside_list_of_tensors_carries_its_value_from_call_to_call():
    jitted = jit(accumulate)
    OUTSIDE[:] = [torch.zeros(3)]
    total = torch.zeros(3)
    for _ in range(4):
        x = torch.randn(3)
        total = total + x
        assert torch.allclose(jitted(x), total * 2)
        assert torch.allclose(OUTSIDE[0], total)
    assert_one_graph(jitted)


def remove_a_tensor(x):
    x.remove(x[0])
    return x[0] + 1


def test_methods_that_compare_tensors_still_run_eagerly_with_the_reason():
    """`list.remove` compares the items, tensor by tensor: not replayed on a list of tensors."""
    jitted = check_program(
        lambda: remove_a_tensor, [(([torch.randn(2), torch.randn(2)],), {}) for _ in range(2)]
    )
    assert any("list.remove on an outside list" in r for r in jitted.explain().fallbacks)
