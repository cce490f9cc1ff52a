"""Graph breaks: a call that cannot be captured whole is split into several graphs with the
uncapturable part between them, never a different result.

Every test runs the program eagerly and through `jitlab.jit` on inputs that change between calls
(outputs, printed text, arguments, module state and outside objects compared after every call,
see jit_helpers.check_program), and asserts each break's reason and source line."""

from __future__ import annotations

import heapq
import inspect

import pytest
import torch
import torch.nn as nn
from jit_helpers import check_program
from torch.utils.checkpoint import checkpoint_sequential

from jitlab.jit import jit

EVENTS: list = []


def line_of(fn, marker: str) -> int:
    """The line number of the source line of `fn` that contains `marker`."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not in {fn.__qualname__}")


def inputs(*shapes, calls=4, scale=None):
    out = []
    for n in range(calls):
        gen = torch.Generator().manual_seed(n)
        factor = scale[n % len(scale)] if scale else 1.0
        out.append(((*(torch.randn(*s, generator=gen) * factor for s in shapes),), {}))
    return out


def the_break(jitted, kind: str | None = None):
    report = jitted.explain()
    breaks = report.graph_breaks
    assert breaks, str(report)
    if kind is not None:
        assert all(b.kind == kind for b in breaks), str(report)
    return breaks[0]


# --------------------------------------------------------------------------- helpers that run eagerly: bytecode jitlab.jit
# does not interpret, or marked torch.compiler.disable
def with_class_pattern(t):
    match t:
        case torch.Tensor():  # a class pattern: opcode MATCH_CLASS, which the interpreter does not run
            factor = 2.0
    EVENTS.append(("helper", tuple(t.shape)))
    print("helper sees", tuple(t.shape))
    return t * factor + 1


@torch.compiler.disable  # runs eagerly: a graph break
def shape_changing(t):
    if t.sum() > 0:  # decided natively: the result's shape depends on data
        return t[:1] * 3
    return t * 2


@torch.compiler.disable  # runs eagerly: a graph break
def raises_on_negative(t):
    if t.sum() < 0:
        raise ValueError("negative input")
    return t + 1


@torch.compiler.disable  # runs eagerly: a graph break
def returns_pair(t):
    return t * 2, bool(t.mean() > 0)


@torch.compiler.disable  # runs eagerly: a graph break
def appends_to(log, t):
    log.append(t.sum())
    return len(log)


# --------------------------------------------------------------------------- programs
class LocalClassBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 4)
        self.fc2 = nn.Linear(4, 3)

    def forward(self, x):
        y = torch.relu(self.fc1(x))
        print("before", y.shape)
        z = with_class_pattern(y)  # BREAK
        print("after")
        return self.fc2(z).sigmoid()


def test_a_function_the_interpreter_cannot_run_is_a_break_between_two_graphs():
    EVENTS.clear()
    jitted = check_program(LocalClassBetween, inputs((2, 4)), observe=lambda m: list(EVENTS))
    report = jitted.explain()
    assert report.captures == 1 and report.graph_count == 1 and report.graphs_per_call == 2
    assert report.graphs[0].hits == 3 and report.deopts == 0
    brk = the_break(jitted, "call")
    assert "user function with_class_pattern cannot be interpreted" in brk.reason
    assert "MATCH_CLASS" in brk.reason
    assert brk.filename == __file__ and brk.function == "LocalClassBetween.forward"
    assert brk.lineno == line_of(LocalClassBetween.forward, "# BREAK")
    assert f"graph break at {__file__}:{brk.lineno} (LocalClassBetween.forward)" in str(report)
    assert any("graph break" in b for b in report.breaks)


class ShapeFromData(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        z = shape_changing(y)  # BREAK
        rows = []
        for i in range(z.shape[0]):  # Python reads the break's result shape
            rows.append(z[i].sum() * (i + 1))
        return torch.stack(rows), z.shape[0]


def test_a_failed_check_after_a_break_resumes_the_program_from_the_break():
    jitted = check_program(ShapeFromData, inputs((2, 4), calls=8, scale=[1.0, -1.0, 3.0]))
    report = jitted.explain()
    brk = the_break(jitted, "call")
    assert brk.lineno == line_of(ShapeFromData.forward, "# BREAK")
    assert report.captures == 1
    assert report.deopts >= 1 and report.graphs[0].hits >= 1  # both paths were taken
    assert report.deopts + report.graphs[0].hits == 7


class CatchesTheBreak(nn.Module):
    def forward(self, x):
        y = x * 2
        try:
            z = raises_on_negative(y)  # BREAK
        except ValueError as e:
            print("caught", e)
            z = -y
        return z + 1


def test_an_exception_raised_by_a_break_reaches_the_programs_own_handler():
    # the first call captures the path without exception; later calls raise inside the break
    calls = [((torch.ones(2, 3) * s,), {}) for s in (1.0, -1.0, 2.0, -3.0)]
    jitted = check_program(CatchesTheBreak, calls)
    assert the_break(jitted, "call").lineno == line_of(CatchesTheBreak.forward, "# BREAK")
    assert jitted.explain().deopts == 2


class RaisesThrough(nn.Module):
    def forward(self, x):
        return raises_on_negative(x * 3) - 1  # BREAK


def test_an_exception_from_a_break_reaches_the_caller_unchanged():
    model = RaisesThrough()
    jitted = jit(model, backend="eager")
    assert torch.equal(jitted(torch.ones(2)), model(torch.ones(2)))
    with pytest.raises(ValueError, match="negative input"):
        jitted(-torch.ones(2))
    assert torch.equal(jitted(torch.ones(2)), model(torch.ones(2)))
    assert the_break(jitted, "call").lineno == line_of(RaisesThrough.forward, "# BREAK")


class PairAfterBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        y, positive = returns_pair(self.fc(x))  # BREAK
        if positive:  # a Python value made by the break decides: guarded after it
            return y.relu()
        return y.tanh() - 1


def test_a_python_value_returned_by_a_break_is_guarded_after_it():
    jitted = check_program(PairAfterBreak, inputs((2, 3), calls=8, scale=[1.0, -2.0]))
    report = jitted.explain()
    assert the_break(jitted, "call").lineno == line_of(PairAfterBreak.forward, "# BREAK")
    assert any("b0[1]" in g for g in report.graphs[0].guards)


LOG: list = []


class FreshListIntoBreak(nn.Module):
    def forward(self, x):
        log = [x.mean()]
        n = appends_to(log, x * 2)  # BREAK
        log.append(x.max())  # the list was handed to code jitlab.jit cannot see: replayed on it
        LOG.append(n)
        return torch.stack(log) * n, len(log)


def test_objects_handed_to_a_break_are_outside_objects_afterwards():
    LOG.clear()
    jitted = check_program(FreshListIntoBreak, inputs((3,)), observe=lambda m: list(LOG))
    assert the_break(jitted, "call").lineno == line_of(FreshListIntoBreak.forward, "# BREAK")
    assert jitted.explain().graphs[0].hits == 3


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return shape_changing(self.fc(x)).tanh()  # BREAK


class LoopOverBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block(4) for _ in range(3))
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        outs = []
        with torch.no_grad():
            self.steps += 1
        for i, block in enumerate(self.blocks):
            x = block(x) + i
            outs.append(x.sum())
        return x, torch.stack(outs)


def test_breaks_inside_nested_modules_in_a_loop_resume_every_frame():
    jitted = check_program(LoopOverBlocks, inputs((3, 4), calls=10, scale=[1.0, -1.0, 0.5]))
    report = jitted.explain()
    assert report.graphs_per_call == 4 and len(report.graph_breaks) == 3
    line = line_of(Block.forward, "# BREAK")
    assert all(b.lineno == line and b.function == "Block.forward" for b in report.graph_breaks)
    assert report.deopts >= 1 and report.graphs[0].hits >= 1


class BreakUnderNoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            y = with_class_pattern(self.fc(x))  # BREAK
            frozen = y.requires_grad
        return self.fc(y) * 2, frozen


def test_a_break_inside_no_grad_runs_without_grad_and_the_mode_is_restored():
    jitted = check_program(BreakUnderNoGrad, inputs((2, 3)))
    assert the_break(jitted, "call").lineno == line_of(BreakUnderNoGrad.forward, "# BREAK")
    out, frozen = jitted(torch.randn(2, 3))
    assert frozen is False and out.requires_grad and torch.is_grad_enabled()


def importance(t):
    return float(t.abs().sum())


class LargestByUserKey(nn.Module):
    def forward(self, x, y):
        parts = heapq.nlargest(2, [x, y, x - y], key=importance)  # BREAK
        return parts[0] * 2 + parts[1]


def test_a_library_function_calling_user_code_back_is_a_break():
    calls = [
        ((torch.randn(3, generator=torch.Generator().manual_seed(n)), torch.randn(3) * 0), {})
        for n in range(4)
    ]
    jitted = check_program(LargestByUserKey, calls)
    brk = the_break(jitted, "call")
    assert brk.reason == "library function nlargest calls user code back"
    assert brk.lineno == line_of(LargestByUserKey.forward, "# BREAK")


class Stage(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class SequentialCheckpoint(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.Sequential(Stage(), Stage(), Stage())
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        h = checkpoint_sequential(self.stages, 2, x * 2, use_reentrant=False)  # BREAK
        return self.head(h).sum()


def test_a_library_function_given_user_modules_is_a_break_and_trains_as_eager():
    jitted = check_program(SequentialCheckpoint, inputs((3, 4)))
    brk = the_break(jitted, "call")
    assert brk.reason == "library function checkpoint_sequential calls user code back"
    assert brk.lineno == line_of(SequentialCheckpoint.forward, "# BREAK")
    torch.manual_seed(0)
    model = SequentialCheckpoint()
    twin = SequentialCheckpoint()
    twin.load_state_dict(model.state_dict())
    fast = jit(twin, backend="eager")
    for n in range(3):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(n))
        model(x).backward()
        fast(x).backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6)


# --------------------------------------------------------------------------- data breaks
class NoisyGate(nn.Module):
    """A decision on a value that depends on random numbers drawn by a graph that also updates a
    buffer: it cannot be checked before the graph runs, so the graph is split right after it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, x):
        self.seen.add_(1)
        noisy = x + torch.rand_like(x)
        if noisy.sum() > 0:  # BREAK
            return noisy * 2
        return noisy - 1


def test_a_decision_on_random_values_after_a_mutation_is_a_data_break():
    calls = [((torch.full((4,), v),), {}) for v in (1.0, 2.0, -3.0, 1.5, -2.0, -4.0, 3.0, 0.5)]
    jitted = check_program(NoisyGate, calls)
    report = jitted.explain()
    brk = the_break(jitted, "data")
    assert brk.reason == "Python decides on tensor data: __bool__(...) == True"
    assert brk.lineno == line_of(NoisyGate.forward, "# BREAK")
    assert report.captures == 1 and report.graphs_per_call == 2
    assert report.deopts == 3 and report.graphs[0].hits == 4  # the negative calls resumed from the break


class PrintThenItem(nn.Module):
    def forward(self, x):
        print("start", x.shape)
        s = x.sum().item()
        if s > 0:
            print("positive")
            return x * 2
        print("not positive")
        return x - s


def test_a_comparison_of_an_item_is_re_checked_on_its_outcome():
    calls = [((torch.full((2, 2), v),), {}) for v in (1.0, 2.0, -1.0, 3.0, 0.5, -2.0, 4.0, 1.5)]
    jitted = check_program(PrintThenItem, calls)
    report = jitted.explain()
    assert report.captures == 2 and report.graphs[0].hits == 5 and report.graphs[1].hits == 1
    assert report.graphs[0].speculations == ("item(...) > 0 is True",)  # the outcome, not the value


def test_a_break_that_keeps_failing_its_checks_falls_back_to_eager():
    calls = [((torch.full((4,), 3.0 if n % 2 else -3.0),), {}) for n in range(24)]
    jitted = check_program(NoisyGate, calls)
    report = jitted.explain()
    assert report.disabled and "kept failing" in report.disabled
    assert report.deopts >= 8


# --------------------------------------------------------------------------- backends
def test_breaks_with_a_compiling_backend():
    jitted = check_program(ShapeFromData, inputs((2, 4), calls=5, scale=[1.0, -1.0]), backend="aot_eager")
    report = jitted.explain()
    assert report.graphs_per_call == 2 and report.deopts >= 1


# --------------------------------------------------------------------------- more call breaks
@torch.compiler.disable  # runs eagerly: a graph break
def scaled(t, *, factor, offset=0.0):
    print("scaled", factor)
    return t * factor + offset


class KeywordsIntoBreak(nn.Module):
    def forward(self, x):
        y = scaled(x.relu(), factor=3.0, offset=x.mean())  # BREAK
        print("then")
        return y.tanh()


def test_a_break_called_with_keywords_and_printing_keeps_the_order_of_output():
    jitted = check_program(KeywordsIntoBreak, inputs((2, 3)))
    brk = the_break(jitted, "call")
    assert brk.lineno == line_of(KeywordsIntoBreak.forward, "# BREAK")
    assert "scaled is marked torch.compiler.disable" in brk.reason


class Trainable(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc2(with_class_pattern(torch.tanh(self.fc1(x))))  # BREAK


def test_gradients_flow_through_a_break_as_in_eager():
    EVENTS.clear()
    torch.manual_seed(0)
    model = Trainable()
    twin = Trainable()
    twin.load_state_dict(model.state_dict())
    jitted = jit(twin, backend="eager")
    optimizer_a = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer_b = torch.optim.SGD(twin.parameters(), lr=0.1)
    for step in range(4):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(step))
        for net, opt in ((model, optimizer_a), (jitted, optimizer_b)):
            opt.zero_grad()
            net(x).square().sum().backward()
            opt.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    assert the_break(jitted, "call").lineno == line_of(Trainable.forward, "# BREAK")
    assert jitted.explain().graphs[0].hits == 3


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)
        self.inner.register_forward_hook(lambda module, args, out: out * 2)
        self.after = nn.Linear(3, 1)

    def forward(self, x):
        return self.after(self.inner(x).relu())  # HOOKED


def test_a_module_with_hooks_is_run_with_its_hooks():
    jitted = check_program(Hooked, inputs((2, 3)))
    report = jitted.explain()
    assert not report.fallbacks
    for brk in report.graph_breaks:  # a graph break where the hooked module is not captured
        assert "has hooks" in brk.reason and brk.lineno == line_of(Hooked.forward, "# HOOKED")


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class UsesFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return Double.apply(self.fc(x)).sum(-1)  # APPLY


def test_an_autograd_function_applied_in_forward_keeps_results_and_gradients():
    torch.manual_seed(0)
    model = UsesFunction()
    twin = UsesFunction()
    twin.load_state_dict(model.state_dict())
    jitted = jit(twin, backend="eager")
    for step in range(3):
        x = torch.randn(2, 3, generator=torch.Generator().manual_seed(step))
        model(x).sum().backward()
        jitted(x).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad)
    report = jitted.explain()
    assert not report.fallbacks
    for brk in report.graph_breaks:  # a graph break where the Function is not captured
        assert brk.reason == "autograd Function Double is applied natively"
        assert brk.lineno == line_of(UsesFunction.forward, "# APPLY")


@torch.compiler.disable  # runs eagerly: a graph break
def inner_raises(t):
    if t.sum() < 0:
        raise KeyError("negative")
    return t


def middle(t):
    try:
        return inner_raises(t) * 2  # BREAK
    finally:
        print("middle done")


class NestedRaise(nn.Module):
    def forward(self, x):
        try:
            return middle(x + 1)
        except KeyError:
            return x - 100


def test_an_exception_from_a_break_unwinds_through_resumed_frames():
    calls = [((torch.ones(3) * s,), {}) for s in (1.0, -5.0, 2.0, -4.0)]
    jitted = check_program(NestedRaise, calls)
    brk = the_break(jitted, "call")
    assert brk.function == "middle" and brk.lineno == line_of(middle, "# BREAK")
    assert jitted.explain().deopts == 2
