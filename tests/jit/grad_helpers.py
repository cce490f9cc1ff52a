"""Differential checks of jitlab.jit that include autograd: outputs, input and parameter gradients,
module state and optimizer steps, call after call, against eager execution of an identical copy."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import torch
from jit_helpers import same

from jitlab.jit import jit


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _loss(out: Any) -> torch.Tensor | None:
    """A scalar that depends on every floating output (weighted so that each output matters)."""
    total = None
    for n, t in enumerate(_tensors(out)):
        if t.is_floating_point() and t.requires_grad:
            term = (t * (n + 1.5)).sin().sum()
            total = term if total is None else total + term
    return total


_PLAIN = (int, float, str, bool, type(None), list, tuple, dict, torch.Tensor)


def _twins(make: Callable[[], Any]) -> tuple[Any, Any]:
    """Two identical programs (built under the same seed; deepcopy fails on weight-normed modules)."""
    torch.manual_seed(0)
    first = make()
    torch.manual_seed(0)
    return first, make()


def assert_same_state(eager: Any, jitted: Any, where: str) -> None:
    if not isinstance(eager, torch.nn.Module):
        return
    for (name, a), (_, b) in zip(eager.state_dict().items(), jitted.state_dict().items()):
        assert same(a, b), f"{where}: state {name} differs"
    for (path, m), (_, n) in zip(eager.named_modules(), jitted.named_modules()):
        for key, value in vars(m).items():
            if not key.startswith("_") and isinstance(value, _PLAIN):
                assert same(value, vars(n).get(key)), f"{where}: attribute {path}.{key} differs"
    for (name, a), (_, b) in zip(eager.named_parameters(), jitted.named_parameters()):
        if a.grad is None or b.grad is None:
            assert a.grad is None and b.grad is None, f"{where}: grad of {name} is {a.grad} vs {b.grad}"
        else:
            assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), f"{where}: grad of {name} differs"


def check_grads(
    make: Callable[[], Any],
    inputs: Callable[[int], tuple],
    calls: int = 3,
    backend: Any = "eager",
    between: Callable[[Any, int], None] | None = None,
    input_grads: bool = True,
) -> Any:
    """Call eager and jitted copies `calls` times on `inputs(i)`; compare outputs, gradients of a
    loss on the outputs w.r.t. the floating inputs and the parameters, and module state. `between`
    (model, i) changes both models before call i (to prove the guards). Returns the jitted callable."""
    eager, other = _twins(make)
    jitted = jit(other, backend=backend)
    for i in range(calls):
        if between is not None:
            between(eager, i)
            between(other, i)
        args_e = inputs(i)
        args_j = tuple(
            a.detach().clone() if isinstance(a, torch.Tensor) else copy.deepcopy(a) for a in args_e
        )
        for a, b in zip(args_e, args_j):
            if isinstance(a, torch.Tensor) and a.is_floating_point() and input_grads:
                a.requires_grad_(True)
                b.requires_grad_(True)
        torch.manual_seed(100 + i)
        random.seed(100 + i)
        out_e = eager(*args_e)
        torch.manual_seed(100 + i)
        random.seed(100 + i)
        out_j = jitted(*args_j)
        assert same(out_e, out_j), f"call {i}: outputs differ: {out_e!r} vs {out_j!r}"
        loss_e, loss_j = _loss(out_e), _loss(out_j)
        assert (loss_e is None) == (loss_j is None), f"call {i}: one output requires grad, not the other"
        if loss_e is not None:
            loss_e.backward()
            loss_j.backward()
            for n, (a, b) in enumerate(zip(args_e, args_j)):
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    if a.grad is None:
                        assert b.grad is None, f"call {i}: input {n} has a gradient only under the JIT"
                    else:
                        assert b.grad is not None, f"call {i}: input {n} has no gradient under the JIT"
                        assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), (
                            f"call {i}: gradient of input {n} differs: {a.grad} vs {b.grad}"
                        )
        assert_same_state(eager, other, f"call {i}")
    return jitted


def train_steps(
    make: Callable[[], torch.nn.Module],
    inputs: Callable[[int], tuple],
    steps: int = 6,
    backend: Any = "eager",
    optimizer: str = "sgd",
) -> Any:
    """Train eager and jitted copies side by side (same seeds): after every step the losses, the
    gradients, the parameters, the buffers and the optimizer state must be equal."""
    eager, other = _twins(make)
    jitted = jit(other, backend=backend)

    def opt(model: torch.nn.Module) -> torch.optim.Optimizer:
        if optimizer == "sgd":
            return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        return torch.optim.Adam(model.parameters(), lr=0.01)

    opt_e, opt_j = opt(eager), opt(other)
    for i in range(steps):
        x, target = inputs(i)
        results = []
        for call, optim in ((eager, opt_e), (jitted, opt_j)):
            torch.manual_seed(1000 + i)
            optim.zero_grad()
            out = call(x)
            loss = torch.nn.functional.mse_loss(out, target)
            loss.backward()
            optim.step()
            results.append(loss.detach())
        assert torch.allclose(results[0], results[1], atol=1e-6), (
            f"step {i}: loss {results[0]} vs {results[1]}"
        )
        for (name, a), (_, b) in zip(eager.state_dict().items(), other.state_dict().items()):
            assert torch.allclose(a.float(), b.float(), atol=1e-5, rtol=1e-4), f"step {i}: {name} differs"
        for (name, a), (_, b) in zip(eager.named_parameters(), other.named_parameters()):
            assert (a.grad is None) == (b.grad is None), f"step {i}: grad of {name}"
            if a.grad is not None:
                assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), (
                    f"step {i}: grad of {name} differs"
                )
    return jitted
