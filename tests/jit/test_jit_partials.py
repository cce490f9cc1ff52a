"""`functools.partial` objects from outside the call: what calling one reads is guarded.

The interpreter calls a partial as its function with the partial's arguments and keywords; it read
them without guards, so an outside partial's arguments were baked into the entry: after
`config.scale = 5.0` for `partial(scale, config)`, or a changed keyword of `partial(F.gelu,
approximate="tanh")`, the JIT returned the old result. A partial handed to native code (`max(...,
key=partial(operator.getitem, TABLE))`) was guarded by its instance dict only. Each program runs
eagerly and through `jitlab.jit` over calls that change what the partial holds between them."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from jitlab.jit import jit


class Config:
    def __init__(self) -> None:
        self.scale = 2.0


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


CHANGES: dict[Callable, Callable[[], None]] = {
    calls_user_partial: lambda: setattr(CONFIG, "scale", 5.0),
    calls_builtin_partial: lambda: VALUES.__setitem__(0, 5.0),
    calls_partial_with_keywords: lambda: (
        ADD.keywords.__setitem__("alpha", 3.0),
        GELU.keywords.__setitem__("approximate", "none"),
    ),
    hands_partial_to_max: lambda: TABLE.__setitem__(1, 9.0),
    maps_partial: lambda: ROUND.keywords.__setitem__("ndigits", 2),
}


@pytest.mark.parametrize("program", list(CHANGES), ids=lambda p: p.__name__)
def test_what_an_outside_partial_holds_is_guarded(program: Callable) -> None:
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
