"""What a workload is: a computation with a size, a reference, an error metric and one
implementation per backend.

A workload file written by a user looks exactly like the built-in ones:

    import jitlab

    dot = jitlab.Workload("dot", sizes=[10**4, 10**6], reference=dot_float64,
                          inputs=lambda case: (case.rng.random(case.size),) * 2)

    @dot.implement("numpy")
    def _(ctx):
        a, b = ctx.inputs(0)
        return lambda: a @ b

An implementation receives a `Context` (backend, size, parameters, host inputs) and returns either
a callable taking a seed, or a `Prepared` (a callable plus a function building its arguments for a
seed, so that argument construction stays outside the timed region).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from jitlab.backends.base import Backend


@dataclass(frozen=True)
class Case:
    """One instance of a workload: size, parameters and seed. Inputs and references are built from it."""

    size: int
    seed: int
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


@dataclass(frozen=True)
class Prepared:
    """A ready-to-time call: `fn(*args(seed))`. `args` is called outside the timed region."""

    fn: Callable[..., Any]
    args: Callable[[int], tuple] = lambda seed: (seed,)


@dataclass
class Context:
    """What an implementation gets to build its callable."""

    workload: Workload
    backend: Backend
    size: int
    params: Mapping[str, Any]

    def prepare(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        """Compile `fn` with this context's backend (numba.njit, jax.jit, tf.function, torch.compile...)."""
        return self.backend.prepare(fn, **options)

    def inputs(self, seed: int = 0) -> tuple:
        """The workload's host (NumPy) inputs for `seed`, cached."""
        return self._inputs(seed)

    @cached_property
    def _cache(self) -> dict[int, tuple]:
        return {}

    def _inputs(self, seed: int) -> tuple:
        if seed not in self._cache:
            if self.workload.inputs is None:
                self._cache[seed] = ()
            else:
                self._cache[seed] = tuple(self.workload.inputs(Case(self.size, seed, self.params)))
        return self._cache[seed]


Implementation = Callable[[Context], "Prepared | Callable[[int], Any]"]
Reference = "float | Callable[[Case, tuple], Any] | None"


def absolute_error(value: Any, reference: Any) -> float:
    return float(
        np.max(np.abs(np.asarray(value, dtype=np.float64) - np.asarray(reference, dtype=np.float64)))
    )


def relative_error(value: Any, reference: Any) -> float:
    """Largest element-wise error relative to the reference's largest magnitude."""
    ref = np.asarray(reference, dtype=np.float64)
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    return absolute_error(value, ref) / (scale if scale > 0 else 1.0)


@dataclass
class Workload:
    """A named computation measured on several backends over a sweep of sizes.

    - `reference`: an exact value, or `reference(case, inputs)` computing it in float64.
    - `error(value, reference)`: the per-seed error; the engine reports its root mean square over seeds.
    - `expected_error(size)`: the error theory predicts (e.g. sampling error), shown beside it.
    - `extra_metrics`: more per-seed columns, e.g. the source document's accuracy score.
    - `inputs(case)`: host inputs built from a seed, handed to implementations and the reference.
    - `sweep`: other parameters measured at every value, as a product with the sizes.
    """

    name: str
    description: str = ""
    sizes: Sequence[int] = (10**4, 10**5, 10**6, 10**7)
    size_name: str = "n"
    params: Mapping[str, Any] = field(default_factory=dict)
    #: parameters swept besides the size: every combination is its own cell (e.g. {"k": [1, 2, 4]})
    sweep: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    reference: Any = None
    error: Callable[[Any, Any], float] = relative_error
    error_name: str = "relative error"
    expected_error: Callable[[int], float] | None = None
    extra_metrics: Mapping[str, Callable[[Any, Any], float]] = field(default_factory=dict)
    inputs: Callable[[Case], Sequence[Any]] | None = None
    seeds: int = 5
    implementations: dict[str, Implementation] = field(default_factory=dict)
    #: the module file that defines it, so a worker process can load it again
    source_file: str | None = None
    #: False when a call is a loop of many framework calls (e.g. 10,000 steps): the time for the
    #: loop to return says nothing about dispatch, so no dispatch time is measured or shown
    dispatch_meaningful: bool = True
    #: False when the work stays on the host even with a GPU present: time blocks with the host
    #: clock, not with CUDA events
    device_timing: bool = True
    #: flush the L2 cache before each timed call on a CUDA device (also `jitlab run --flush-l2`)
    flush_l2: bool = False
    #: the backends run when `--backends` is not given (None: every implemented backend)
    default_backends: Sequence[str] | None = None
    #: default sizes of some backends, when `--sizes` is not given (e.g. slow compiles at one size)
    backend_sizes: Mapping[str, Sequence[int]] | None = None
    #: which (backend, size, swept parameters) combinations are cells at all (None: every
    #: combination), e.g. only the static sampler variants are compiled
    include_cell: Callable[[str, int, Mapping[str, Any]], bool] | None = None
    #: `include_cell` for the full grid (None: every combination)
    full_include_cell: Callable[[str, int, Mapping[str, Any]], bool] | None = None
    #: seconds of sampling per cell when `--budget` is not given (None: the engine's 5 s)
    default_budget_s: float | None = None
    #: the source document's whole grid, run with `jitlab run --full` (None: the default grid)
    full_sizes: Sequence[int] | None = None
    full_sweep: Mapping[str, Sequence[Any]] | None = None

    def implement(self, *backends: str) -> Callable[[Implementation], Implementation]:
        """Decorator registering one implementation for one or more backend names."""

        def register(impl: Implementation) -> Implementation:
            for backend in backends:
                if backend in self.implementations:
                    raise ValueError(f"workload {self.name!r} already has an implementation for {backend!r}")
                self.implementations[backend] = impl
            return impl

        return register

    def full_grid(self) -> Workload:
        """This workload with its full grid: every implemented backend, `full_sizes` and
        `full_sweep` (for `jitlab run --full`). A copy, so attributes set on the workload after it
        was made (`baseline`, `throughput`, `plot_x`) come along."""
        full = copy.copy(self)
        full.sizes = tuple(self.full_sizes or self.sizes)
        full.sweep = dict(self.full_sweep or self.sweep)
        full.default_backends = None
        full.include_cell = self.full_include_cell
        full.backend_sizes = None
        return full

    def sizes_for(self, backend: str) -> Sequence[int]:
        """The default sizes of `backend` in this workload."""
        return (self.backend_sizes or {}).get(backend, self.sizes)

    def includes(self, backend: str, size: int, params: Mapping[str, Any]) -> bool:
        """Whether (backend, size, swept parameters) is a cell of this workload."""
        return self.include_cell is None or bool(self.include_cell(backend, size, params))

    def reference_value(self, case: Case, inputs: tuple) -> Any:
        if callable(self.reference):
            return self.reference(case, inputs)
        return self.reference

    def build(self, backend: Backend, size: int, params: Mapping[str, Any] | None = None) -> Prepared:
        context = Context(self, backend, size, {**self.params, **(params or {})})
        built = self.implementations[backend.name](context)
        return built if isinstance(built, Prepared) else Prepared(built)


def sampling_error_of_pi(n: int) -> float:
    """Standard deviation of the Monte Carlo estimate 4k/n of pi: sqrt(pi (4 - pi) / n)."""
    return math.sqrt(math.pi * (4 - math.pi) / n)
