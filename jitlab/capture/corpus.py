"""The corpus format: programs that graph-capture tools are measured on.

A corpus is a Python file with a module-level `CORPUS = Corpus()` on which cases register with a
decorator on their model factory:

    CORPUS = Corpus()

    @CORPUS.case("mlp", inputs=lambda: ((torch.randn(4, 8),), {}), tags=("module",))
    def mlp():
        return nn.Sequential(nn.Linear(8, 8), nn.ReLU())

`make_model` returns an `nn.Module` or a plain callable; `make_inputs` returns `(args, kwargs)`.
`Case.build_model()` and `Case.build_inputs(seed)` call the factories under a fixed torch seed in a
forked RNG, so every build is identical (parameters and inputs) and the caller's RNG is untouched.
`build_inputs(i)` draws call i's inputs under seed i: same shapes and types, new values, so that a
tool which specialised on the example's values (a traced branch) shows it on later calls. Inputs
of data-dependent cases are chosen so that such branches do flip between seeds 0, 1 and 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitlab.errors import UserError
from jitlab.userfiles import import_file

BUILD_SEED = 0
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Case:
    """One program of the corpus: how to build a fresh model and its inputs.

    `observe(model)` (optional) returns extra visible state to compare between eager and captured
    runs beyond parameters, buffers and plain attributes (e.g. a list a closure appends to).
    """

    name: str
    make_model: Callable[[], Any]
    make_inputs: Callable[[], tuple[tuple, dict]]
    tags: tuple[str, ...] = ()
    observe: Callable[[Any], Any] | None = None
    source: str = field(default="", compare=False)

    def build_model(self) -> Any:
        return seeded(self.make_model)

    def build_inputs(self, seed: int = 0) -> tuple[tuple, dict]:
        """Inputs for call `seed`: same shapes every time, values drawn under that seed."""
        built = seeded(self.make_inputs, BUILD_SEED + seed)
        if not (isinstance(built, tuple) and len(built) == 2 and isinstance(built[1], dict)):
            raise TypeError(f"case {self.name}: make_inputs must return (args_tuple, kwargs_dict)")
        args, kwargs = built
        return tuple(args), dict(kwargs)


def seeded(factory: Callable[[], Any], seed: int = BUILD_SEED) -> Any:
    """`factory()` with torch's, Python's and NumPy's global generators seeded (models and inputs
    drawn with any of them are the same every build), the caller's generators left as they were."""
    import random

    import numpy as np
    import torch

    state, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        try:
            return factory()
        finally:
            random.setstate(state)
            np.random.set_state(np_state)


class Corpus:
    """An ordered collection of cases with unique names, filled by the `case` decorator."""

    def __init__(self) -> None:
        self._cases: dict[str, Case] = {}

    def add(self, case: Case) -> Case:
        if not NAME_PATTERN.match(case.name):
            raise ValueError(f"case name {case.name!r}: use letters, digits, '_', '-', '.' only")
        if case.name in self._cases:
            raise ValueError(f"a case named {case.name!r} is in this corpus already")
        self._cases[case.name] = case
        return case

    def case(
        self,
        name: str,
        *,
        inputs: Callable[[], tuple[tuple, dict]],
        tags: tuple[str, ...] | str = (),
        observe: Callable[[Any], Any] | None = None,
    ) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        """Register the decorated model factory as a case; returns the factory unchanged."""
        tag_tuple = (tags,) if isinstance(tags, str) else tuple(tags)

        def register(make_model: Callable[[], Any]) -> Callable[[], Any]:
            self.add(Case(name, make_model, inputs, tag_tuple, observe))
            return make_model

        return register

    @property
    def cases(self) -> list[Case]:
        return list(self._cases.values())

    def __len__(self) -> int:
        return len(self._cases)


def load_corpus(path: str | Path) -> list[Case]:
    """Every case of the corpus file at `path`, in definition order, with `source` set."""
    file = Path(path)
    if not file.is_file():
        raise UserError(f"corpus file {path} does not exist: check the path")
    if file.suffix != ".py":
        raise UserError(f"corpus file {path} is not a .py file: give a Python file defining CORPUS")
    module = import_file(file, "corpus file", prefix="_jitlab_corpus")
    corpus = getattr(module, "CORPUS", None)
    if not isinstance(corpus, Corpus):
        raise UserError(f"corpus file {path} defines no CORPUS = Corpus(): add one and register cases on it")
    if len(corpus) == 0:
        raise UserError(f"corpus file {path} registers no cases: decorate model factories with @CORPUS.case")
    return [
        Case(c.name, c.make_model, c.make_inputs, c.tags, c.observe, source=str(path)) for c in corpus.cases
    ]
