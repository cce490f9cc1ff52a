"""Both outcomes of a Python branch on tensor data in one graph (branches.py).

`if x.mean() > 0:` specialises the first entry on the outcome it saw; once the other outcome was
captured too, the two entries are merged into one graph that decides inside (torch.cond for the
compilers, a select for backend "eager"), when and only when that cannot change a result. Every test
compares with eager code on inputs whose outcome flips, and checks whether the merge happened."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from jit_helpers import check_program

SIGNS = (1.0, -1.0, 2.0, -3.0, 0.5, -0.5)


def flipping(*shape, signs=SIGNS):
    calls = []
    for n, s in enumerate(signs):
        gen = torch.Generator().manual_seed(n)
        calls.append(((torch.rand(*shape, generator=gen) * s,), {}))
    return calls


def merged(jitted) -> bool:
    report = jitted.explain()
    return (
        report.graph_count == 1
        and not report.breaks
        and any("both outcomes of the branch" in n for n in report.graphs[0].notes)
    )


def relu_or_sigmoid(x):
    if x.mean() > 0:
        return torch.relu(x) * 2
    return torch.sigmoid(x) - 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_a_branch_on_tensor_data_runs_both_ways_in_one_graph(backend):
    jitted = check_program(lambda: relu_or_sigmoid, flipping(3, 4), backend=backend)
    assert merged(jitted), str(jitted.explain())
    report = jitted.explain()
    assert report.graphs[0].hits == len(SIGNS) - 2  # calls 0 and 1 captured, the rest ran merged
    assert report.graphs[0].backend_note is None
    how = "an in-graph select" if backend == "eager" else "torch.cond"
    assert how in report.graphs[0].notes[-1]


def item_decides(x):
    scale = x.sum() * 0.5
    if x.sum().item() > 0:
        return x * scale
    return x - scale


def test_a_branch_on_an_item_value_runs_both_ways_in_one_graph():
    jitted = check_program(lambda: item_decides, flipping(4))
    assert merged(jitted), str(jitted.explain())


def nan_guard(x):
    if torch.isnan(x).any():
        x = torch.nan_to_num(x)
    return x.softmax(-1)


def test_a_nan_check_runs_both_ways_in_one_graph():
    calls = []
    for n in range(6):
        x = torch.randn(3, 3, generator=torch.Generator().manual_seed(n))
        if n % 2:
            x[0, 0] = float("nan")
        calls.append(((x,), {}))
    jitted = check_program(lambda: nan_guard, calls, backend="aot_eager")
    assert merged(jitted), str(jitted.explain())


def prints_in_both_arms(x):
    if x.mean() > 0:
        y = x * 2
    else:
        y = x.abs()
    print("y", y)
    return y + 1


def test_the_same_effect_after_both_arms_prints_the_arms_value():
    jitted = check_program(lambda: prints_in_both_arms, flipping(3))
    assert merged(jitted), str(jitted.explain())


def prints_in_one_arm(x):
    if x.mean() > 0:
        print("positive")
        return x * 2
    return x - 1


def returns_its_input_in_one_arm(x):
    if x.mean() > 0:
        return x
    return x - 1


def different_shapes(x):
    if x.mean() > 0:
        return x.sum(0)
    return x.flatten()


def python_result_differs(x):
    if x.mean() > 0:
        return x * 2, "up"
    return x * 3, "down"


@pytest.mark.parametrize(
    "program", [prints_in_one_arm, returns_its_input_in_one_arm, different_shapes, python_result_differs]
)
def test_arms_that_differ_outside_the_graph_or_alias_an_input_stay_two_entries(program):
    jitted = check_program(lambda: program, flipping(3, 3))
    report = jitted.explain()
    assert not merged(jitted) and report.graph_count == 2, str(report)


def nested(x):
    y = x * 2
    if y.mean() > 0:
        y = y - 1
    if y.max() > 1:
        return y.relu()
    return y.tanh()


def test_two_branches_on_tensor_data_merge_pairwise_and_stay_exact():
    calls = []
    for n in range(16):
        x = torch.randn(4, generator=torch.Generator().manual_seed(n)) * (n % 5 - 2)
        calls.append(((x,), {}))
    jitted = check_program(lambda: nested, calls)
    report = jitted.explain()
    assert 1 <= report.graph_count <= 3, str(report)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.other = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            return h.relu()
        return h.sigmoid()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_under_autograd_gradients_equal_eager(backend):
    """backend "eager" runs only the taken arm's operations (a select): merged, gradients exact.
    torch.cond would give zero gradients where eager code leaves None: not merged when compiling."""
    torch.manual_seed(0)
    model = Gate()
    twin = Gate()
    twin.load_state_dict(model.state_dict())
    from jitlab.jit import jit

    jitted = jit(twin, backend=backend)
    for (x,), _ in flipping(2, 4, signs=(30.0, -30.0, 30.0, -30.0)):
        expected = model(x)
        got = jitted(x)
        assert torch.allclose(expected, got) and got.requires_grad == expected.requires_grad
        expected.sum().backward()
        got.sum().backward()
        for a, b in zip(model.parameters(), twin.parameters()):
            assert (a.grad is None) == (b.grad is None)
            assert a.grad is None or torch.allclose(a.grad, b.grad)
    report = jitted.explain()
    assert merged(jitted) == (backend == "eager"), str(report)


def unused_parameter_in_one_arm(x, w):
    if x.sum() > 0:
        return x * w
    return x + w.detach()  # no gradient reaches w through this arm: w.grad stays None


def test_a_parameter_used_in_one_arm_only_keeps_its_grad_none_as_eager():
    w_eager = torch.ones(3, requires_grad=True)
    w_jit = torch.ones(3, requires_grad=True)
    from jitlab.jit import jit

    jitted = jit(unused_parameter_in_one_arm, backend="eager")
    for s in (1.0, -1.0, -1.0, 1.0, -1.0):
        x = torch.full((3,), s)
        w_eager.grad = w_jit.grad = None
        expected, got = unused_parameter_in_one_arm(x, w_eager), jitted(x, w_jit)
        assert torch.equal(expected, got) and expected.requires_grad == got.requires_grad
        if expected.requires_grad:
            expected.sum().backward()
            got.sum().backward()
        assert (w_eager.grad is None) == (w_jit.grad is None)
        assert w_eager.grad is None or torch.equal(w_eager.grad, w_jit.grad)
    assert merged(jitted), str(jitted.explain())


def test_without_grad_a_module_branch_merges():
    torch.manual_seed(0)

    def make():
        torch.manual_seed(0)
        return Gate()

    calls = flipping(2, 4, signs=(30.0, -30.0, 30.0, -30.0))
    with torch.no_grad():
        jitted = check_program(make, calls)
    assert merged(jitted), str(jitted.explain())


def view_or_copy(x):
    h = x * 2
    if h.sum() > 0:
        return h[0]  # a view of a value computed before the decision
    return h[1] + 1


def dtype_differs(x):
    if x.sum() > 0:
        return (x > 0).long()
    return x.round()


def reads_data_in_an_arm(x):
    if x.mean() > 0:
        return x * x.max().item()
    return x - 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("program", [view_or_copy, dtype_differs, reads_data_in_an_arm])
def test_unusual_arms_are_never_wrong(backend, program):
    check_program(lambda: program, flipping(2, 3), backend=backend)


def test_arms_of_different_dtypes_stay_two_entries():
    jitted = check_program(lambda: dtype_differs, flipping(2, 3))
    assert not merged(jitted) and jitted.explain().graph_count == 2
