"""Callables kept outside the call (`functools.partial` objects, bound methods, builtin methods,
weak references): what calling one reads is guarded.

The interpreter calls a partial as its function with the partial's arguments and keywords, and a
bound method as its function with its object first; it read those without guards, so what they
held was baked into the entry: after `config.scale = 5.0` for `partial(scale, config)` or for
`BOUND = config.apply`, or a changed keyword of `partial(F.gelu, approximate="tanh")`, the JIT
returned the old result. A partial handed to native code (`max(..., key=partial(operator.getitem,
TABLE))`) was guarded by its instance dict only, and the object of a builtin method kept outside
(`GET = table.get`) not at all. Each program runs eagerly and through `jitlab.jit` over calls that
change what the callable holds between them."""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from jitlab.jit import jit


class Config:
    def __init__(self) -> None:
        self.scale = 2.0

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def scale(config: Config, x: torch.Tensor) -> torch.Tensor:
    return x * config.scale


CONFIG = Config()
SCALED = functools.partial(scale, CONFIG)
VALUES = [1.0, 2.0, 3.0, 4.0]
TENSOR_OF_VALUES = functools.partial(torch.tensor, VALUES)
ADD = functools.partial(torch.add, alpha=2.0)
GELU = functools.partial(F.gelu, approximate="tanh")
TABLE = [5.0, 1.0, 3.0]
LOOKUP = functools.partial(operator.getitem, TABLE)
ROUND = functools.partial(round, ndigits=1)
BOUND_CONFIG = Config()
BOUND = BOUND_CONFIG.apply
HELD_CONFIG = Config()
HELD = {"apply": HELD_CONFIG.apply}
SCORES = [5.0, 1.0, 3.0]
SCORE_OF = SCORES.__getitem__
WEIGHTS = {"w": 1.0}
WEIGHT_OF = WEIGHTS.get


class Forwarding(torch.nn.Module):
    """Keeps another object's bound method as an attribute, as a module that forwards to it."""

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.fn = config.apply

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


MODULE_CONFIG = Config()
FORWARDING = Forwarding(MODULE_CONFIG)
REFERRED = Config()
REFERENCE = weakref.ref(REFERRED)
VALUED = Config()
BY_NAME = weakref.WeakValueDictionary(config=VALUED)


def calls_user_partial(x: torch.Tensor) -> torch.Tensor:
    return SCALED(x)


def calls_builtin_partial(x: torch.Tensor) -> torch.Tensor:
    return x * TENSOR_OF_VALUES()


def calls_partial_with_keywords(x: torch.Tensor) -> torch.Tensor:
    return ADD(x, x) + GELU(x)


def hands_partial_to_max(x: torch.Tensor) -> torch.Tensor:
    return x * max(range(3), key=LOOKUP)


def maps_partial(x: torch.Tensor) -> torch.Tensor:
    return x * sum(map(ROUND, [1.234, 2.345]))


def calls_bound_method(x: torch.Tensor) -> torch.Tensor:
    return BOUND(x)


def calls_bound_method_in_dict(x: torch.Tensor) -> torch.Tensor:
    return HELD["apply"](x)


def calls_module_keeping_bound_method(x: torch.Tensor) -> torch.Tensor:
    return FORWARDING(x)


def hands_builtin_method_to_max(x: torch.Tensor) -> torch.Tensor:
    return x * max(range(3), key=SCORE_OF)


def calls_builtin_method(x: torch.Tensor) -> torch.Tensor:
    return x * WEIGHT_OF("w", 0.0)


def calls_weak_reference(x: torch.Tensor) -> torch.Tensor:
    return REFERENCE().apply(x)


def reads_weak_value_dictionary(x: torch.Tensor) -> torch.Tensor:
    return x * BY_NAME["config"].scale


CHANGES: dict[Callable, Callable[[], None]] = {
    calls_user_partial: lambda: setattr(CONFIG, "scale", 5.0),
    calls_builtin_partial: lambda: VALUES.__setitem__(0, 5.0),
    calls_partial_with_keywords: lambda: (
        ADD.keywords.__setitem__("alpha", 3.0),
        GELU.keywords.__setitem__("approximate", "none"),
    ),
    hands_partial_to_max: lambda: TABLE.__setitem__(1, 9.0),
    maps_partial: lambda: ROUND.keywords.__setitem__("ndigits", 2),
    calls_bound_method: lambda: setattr(BOUND_CONFIG, "scale", 5.0),
    calls_bound_method_in_dict: lambda: setattr(HELD_CONFIG, "scale", 5.0),
    calls_module_keeping_bound_method: lambda: setattr(MODULE_CONFIG, "scale", 5.0),
    hands_builtin_method_to_max: lambda: SCORES.__setitem__(1, 9.0),
    calls_builtin_method: lambda: WEIGHTS.__setitem__("w", 4.0),
    calls_weak_reference: lambda: setattr(REFERRED, "scale", 5.0),
    reads_weak_value_dictionary: lambda: setattr(VALUED, "scale", 5.0),
}


@pytest.mark.parametrize("program", list(CHANGES), ids=lambda p: p.__name__)
def test_what_an_outside_callable_holds_is_guarded(program: Callable) -> None:
    jitted = jit(program, backend="eager")
    x = torch.linspace(-1.0, 1.0, 4)
    for step in range(6):
        if step == 3:
            CHANGES[program]()
        assert torch.equal(jitted(x), program(x)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    assert report.captures == 2
    assert sum(g.hits for g in report.graphs) == 4
