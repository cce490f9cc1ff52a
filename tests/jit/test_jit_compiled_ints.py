"""An int read from tensor data (`int((y > 0).sum().item())`) with a compiling backend (issue 45):
kept in the compiled graph as an unbacked SymInt while only arithmetic and number operands of tensor
operations read it, so a new value each call needs no new capture; re-checked by value (a capture per
value, as before) where Python decides on it or it gives a size. Every call compared with eager: in a
training step (forward, backward, optimizer step, zero_grad) and outside one."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn as nn
from training_step_helpers import run_steps

from jitlab.jit import jit

CALLS = 12
KEPT = "kept in the compiled graph (an unbacked SymInt)"
CHECKED = "re-checked by value after the graph"


def scaled_step(
    model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, t: torch.Tensor
) -> torch.Tensor:
    y = model(x)
    n = int((y > 0).sum().item())
    loss = ((y - t) ** 2).mean() * (1 + n)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def crossing_step(
    model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, t: torch.Tensor
) -> torch.Tensor:
    """The count read in the forward part scales the gradients after the backward pass: handed from
    one compiled part to the next (host_split.py) as a 0-d int64 tensor."""
    y = model(x)
    n = int((y > 0).sum().item())
    loss = ((y - t) ** 2).mean()
    loss.backward()
    for p in model.parameters():
        p.grad.mul_(1 + n)
    opt.step()
    opt.zero_grad()
    return loss.detach() * n


def lr_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """A learning rate computed from the count (a float from the int) reaches the optimizer's
    `add_(grad, alpha=-lr)` in a later compiled part: handed over as a number, as eager takes it."""
    y = model(x)
    n = int((y > 0).sum().item())
    loss = ((y - t) ** 2).mean()
    loss.backward()
    for group in opt.param_groups:
        group["lr"] = 0.01 * n
    opt.step()
    opt.zero_grad()
    return loss.detach() * n


def branching_step(
    model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, t: torch.Tensor
) -> torch.Tensor:
    y = model(x)
    n = (y > 0).sum().item()
    loss = ((y - t) ** 2).mean()
    if n > 7:  # Python decides on it: re-checked by value
        loss = loss * 2
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def _training_run(step, backend: str, optimizer: str, exact: bool) -> object:
    """`step(model, opt, x, t)` eagerly and jitted, CALLS times, compared after each (run_steps)."""
    seen: set[int] = set()  # the values of the int, read eagerly before each eager step
    made: list[nn.Module] = []

    def make_step(model: nn.Module, opt: torch.optim.Optimizer, _sched: object):
        eager = not made  # run_steps makes the eager step first
        made.append(model)

        def call(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            if eager:
                with torch.no_grad():
                    seen.add(int((model(x) > 0).sum()))
            return step(model, opt, x, t)

        return call

    def arguments(i: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(i)
        return torch.randn(5, 4, generator=g), torch.randn(5, 3, generator=g)

    def make_model() -> nn.Module:
        return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))

    jitted = run_steps(make_step, optimizer, CALLS, backend, make_model, arguments=arguments, exact=exact)
    assert len(seen) > 3, seen  # the int changes between calls
    return jitted.explain()


def _notes(report: object) -> str:
    return "\n".join(note for g in report.graphs for note in g.notes)


@pytest.mark.parametrize(
    ("step", "backend", "optimizer", "exact"),
    [
        (scaled_step, "aot_eager", "sgd", True),
        (scaled_step, "aot_eager", "adamw", False),
        (scaled_step, "eager", "adamw", True),
        (crossing_step, "aot_eager", "sgd", True),
        (crossing_step, "aot_eager", "adam", False),
        (lr_step, "aot_eager", "sgd", True),
    ],
)
def test_int_scaling_the_loss_is_captured_once(step, backend, optimizer, exact):
    """The count only scales the loss or the gradients: one capture, a hit on every later call, every
    part compiled."""
    report = _training_run(step, backend, optimizer, exact)
    assert not report.fallbacks, report.fallbacks
    assert report.captures == 1, report
    assert sum(g.hits for g in report.graphs) == CALLS - 1
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]
    if backend != "eager":
        assert KEPT in _notes(report) and f"test_jit_compiled_ints.py:{_item_line(step)}" in _notes(report)


def _item_line(fn) -> int:
    """The line of `fn` that reads the int with `.item()`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if ".item()" in line and "n = " in line)


def test_int_deciding_a_branch_is_rechecked():
    """`if n > 7` on the count: a capture per value, as before, with the reason in explain()."""
    report = _training_run(branching_step, "aot_eager", "sgd", exact=True)
    assert not report.fallbacks, report.fallbacks
    assert report.captures > 2, report
    assert CHECKED in _notes(report) and KEPT not in _notes(report)


def operands(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = int(x.argmax())
    k = (x > 0).sum().item() + 2 * n
    y = torch.where(x > 0, x * n, k) - n / 3
    return y.masked_fill(x < -1, k), torch.full_like(x, n)


def sizes(x: torch.Tensor) -> torch.Tensor:
    n = int(x.argmax())
    return x[: n + 1].sum() * n + torch.zeros(n).numel()


def returned(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    n = (x > 0).sum().item()
    return x * n, n


def tensor_of_quotient(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`n / 3`, a float from the int, made a tensor: the compiler would guard on it (the graph ran
    uncompiled on every call); re-checked by value instead, as the int itself would be."""
    n = int(x.argmax())
    return x * n, torch.tensor(n / 3, dtype=torch.float64)


@torch.compiler.disable  # runs eagerly: a graph break
def doubled(t: torch.Tensor) -> torch.Tensor:
    return t * 2


def across_break(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The int is an input of the graph after the break: handed over as a 0-d int64 tensor."""
    n = int((x > 0).sum().item())
    z = doubled(x * n)
    return z + n, n


@pytest.mark.parametrize(
    ("fn", "captures"),
    [(operands, 1), (returned, 1), (across_break, 1), (sizes, None), (tensor_of_quotient, None)],
    ids=["operands", "returned", "across_break", "sizes", "tensor_of_quotient"],
)
def test_ints_outside_a_training_step(fn, captures):
    """Number operands of tensor operations, and the int returned: one capture; as a size: re-checked
    by value (a capture per value). Eager's results every call."""
    jitted = jit(fn, backend="aot_eager")
    values = set()
    for i in range(CALLS):
        x = torch.randn(8, generator=torch.Generator().manual_seed(i))
        expected, got = fn(x), jitted(x)
        for a, b in zip(expected, got) if isinstance(expected, tuple) else [(expected, got)]:
            if isinstance(a, torch.Tensor):
                assert torch.equal(a, b), f"call {i}"
            else:
                assert type(a) is type(b) and a == b, f"call {i}: {a!r} {b!r}"
        values.add(int(x.argmax()))
    assert len(values) > 3
    report = jitted.explain()
    assert not report.fallbacks, report.fallbacks
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]
    if captures is not None:
        assert report.captures == captures, report
        assert sum(g.hits for g in report.graphs) == CALLS - captures
    else:
        assert report.captures > 3 and CHECKED in _notes(report), report


#: values beyond int32 and around 2**53 (where `n / 3` and float32's `x * n` round), 0 and negatives
WIDE = [0, 1, -1, 5, -7, 2**31 + 5, -(2**31) - 9, 2**53 + 1, 2**53 - 1, 2**60 + 3, 0, -(2**53) - 3, 12]


def wide(x: torch.Tensor, t: torch.Tensor) -> tuple:
    n = t.item()
    counts = torch.arange(3, dtype=torch.int32)
    counts.add_(n)  # int32 in place: eager wraps the same way
    return x * n, n * x, x.double() / 3 * n, n / 3, n * 2 - 1, counts, torch.arange(3) - n


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8])
def test_wide_values_and_small_dtypes(dtype):
    """Ints of every size an integer tensor holds, each call a new one: one capture, eager's values
    and dtypes (Python ints returned as ints) on every call."""
    jitted = jit(wide, backend="aot_eager")
    info = torch.iinfo(dtype)
    for i, v in enumerate(WIDE):
        x = torch.randn(3, generator=torch.Generator().manual_seed(i))
        t = torch.tensor([(v - info.min) % (info.max - info.min + 1) + info.min], dtype=dtype)
        for a, b in zip(wide(x, t), jitted(x, t), strict=True):
            if isinstance(a, torch.Tensor):
                assert a.dtype == b.dtype and torch.equal(a, b), f"call {i} ({v}): {a} {b}"
            else:
                assert type(a) is type(b) and a == b, f"call {i} ({v}): {a!r} {b!r}"
    report = jitted.explain()
    assert not report.fallbacks and report.captures == 1, report
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


@pytest.mark.slow
def test_int_scaling_the_loss_inductor():
    """Inductor computes with the symbol inside its kernels: one capture, eager's up to rounding."""
    report = _training_run(scaled_step, "inductor", "sgd", exact=False)
    assert not report.fallbacks, report.fallbacks
    assert report.captures == 1 and sum(g.hits for g in report.graphs) == CALLS - 1, report
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


def test_a_callable_backend_is_not_handed_the_read():
    """A callable backend could take the value as a constant (`torch.jit.trace` does): it gets no
    graph reading the int, which stays a speculation re-checked by value, as before."""
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm.forward

    jitted = jit(operands, backend=backend)
    for i in range(CALLS):
        x = torch.randn(8, generator=torch.Generator().manual_seed(i))
        for a, b in zip(operands(x), jitted(x)):
            assert torch.equal(a, b), f"call {i}"
    assert jitted.explain().captures > 3
    assert not any(n.target == "item" for gm in graphs for n in gm.graph.nodes)
