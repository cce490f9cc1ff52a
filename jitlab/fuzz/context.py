"""What the statements of one fuzzed program share while the generator makes it (grammar.py and
grammar_effects.py write into it)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from jitlab.fuzz.program import Change

#: a change the schedule may make between calls, drawn afresh each time it is used
ChangeMaker = Callable[[random.Random], Change]


@dataclass
class Context:
    """What the statements of one program share while it is generated."""

    rng: random.Random
    kind: str  # "function" or "module"
    width: int
    defs: dict[str, str] = field(default_factory=dict)
    changes: list[ChangeMaker] = field(default_factory=list)
    counter: int = 0
    # keyword arguments every call passes: (name, Python expression), e.g. a cache object (grammar_sizes);
    # the expression must not fail once the statements using it are shrunk away
    call_options: list[tuple[str, str]] = field(default_factory=list)

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    def define(self, key: str, text: str) -> str:
        self.defs.setdefault(key, text)
        return key

    def const(self) -> float:
        return self.rng.choice([0.25, 0.5, 0.75, 1.5, -0.5, 2.0])


def rebind(
    rng: random.Random, name: str, features: tuple[str, ...], values: tuple = (0.25, 2.0, -1.0)
) -> Change:
    """A change that binds the global number `name` to one of `values` (drawn with `rng`)."""
    return Change(f"{name} = {rng.choice(values)}", features, (name,), (name,))
