"""The oracle: run a program eagerly and under a method from identical starting states, and compare.

Each run loads the program's source as a fresh module (its own globals, lists and dicts), builds the
target, and makes the scheduled calls with torch's and Python's generators seeded alike before each
setup and each call. For every call it records the output, the printed text, the exception (type
and message), the inputs afterwards (in-place changes), the gradients after the training step, and
the outside state: the program's upper-case globals (lists, dicts, scalars, tensors and their
gradients, dataclass objects), the cells of its closures, and for a module its parameters,
buffers, gradients and plain attributes. Any difference is a wrong result; a difference within
floating-point tolerance is reported apart ("tolerance"), and so is, for compiling backends, one in
a program drawing torch random numbers ("random": Inductor generates its own), and one whose
results eager code with rounding noise also changes beyond tolerance ("unstable", fuzz/rounding.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import itertools
import math
import random
import re
import sys
import tempfile
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.hooks import RemovableHandle

from jitlab.capture.compare import difference, read_state, state_paths
from jitlab.fuzz.rounding import RoundingNoise

CALL_SEED = 4321
LOOSE_RTOL, LOOSE_ATOL = 1e-4, 1e-5
#: how much further than eager code with rounding noise a compiled result may be off in an unstable
#: program (compilers reorder more than one rounding step per operation), and the tolerances tried
UNSTABLE_FACTOR = 10.0
_REACH_STEPS = tuple(m * 10.0**e for e in range(-4, 3) for m in (1.0, 3.0))
_NAMES = itertools.count()
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")
_SKIP_GLOBALS = {"W", "CALLS", "OPT"}

#: a method: the target -> (the callable to call, a function returning what it did, or None)
Method = Callable[[Any], tuple[Callable[..., Any], Callable[[], dict[str, Any]] | None]]


@dataclass
class CallRecord:
    """What one call did, as a user could see it."""

    output: Any = None
    printed: str = ""
    error: tuple[str, str] | None = None
    inputs: Any = None
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    calls: list[CallRecord]
    stats: dict[str, Any] | None = None


@dataclass(frozen=True)
class Verdict:
    """`status`: "equal", "tolerance", "random", "unstable", "wrong" or "crashed" (the method raised
    where eager did not); `aspect`: what differed first (output, printed, exception, inputs, state)."""

    status: str
    detail: str | None = None
    aspect: str | None = None

    @property
    def failed(self) -> bool:
        return self.status in ("wrong", "crashed")


def load_program(source: str, workdir: Path) -> types.ModuleType:
    """The program as a fresh module (a real file, so that tracebacks and reports name its lines)."""
    name = f"jitlab_fuzz_program_{next(_NAMES)}"
    path = workdir / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and the JIT's guards look modules up by name
    spec.loader.exec_module(module)
    return module


def seed_all(value: int) -> None:
    torch.manual_seed(value)
    random.seed(value)


def freeze(value: Any) -> Any:
    """A copy of `value` that later calls cannot change (tensors detached and cloned)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if type(value) in (list, tuple):
        return type(value)(freeze(v) for v in value)
    if type(value) is dict:
        return {k: freeze(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):  # by dtype and values: later calls may write it in place
        return {"<ndarray>": str(value.dtype), "values": value.tolist()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # by name and fields: each run loads the program anew, so its classes are other objects
        fields = {f.name: freeze(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"<dataclass>": type(value).__qualname__, **fields}
    if isinstance(value, torch.Generator):
        # by device and state: each run makes its own, and where a call leaves it is observable
        return {"<generator>": str(value.device), "state": value.get_state()}
    if isinstance(value, RemovableHandle):
        # by whether its hook is still registered: the handle holds weak references, which are dead
        # by the time the runs are compared (each run's program is dropped after it)
        hooks = value.hooks_dict_ref()
        return {"<hook handle>": hooks is not None and value.id in hooks}
    return value


def _observable(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, type(None), torch.Tensor, np.ndarray, torch.Generator)):
        return True
    if type(value) in (list, tuple, dict):
        return True
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def observe(program: types.ModuleType, model: Any) -> dict[str, Any]:
    """The outside state a user could look at after a call."""
    state: dict[str, Any] = {}
    for name, value in vars(program).items():
        if not name.isupper() or name in _SKIP_GLOBALS:
            continue
        if isinstance(value, types.FunctionType) and value.__closure__:
            for i, cell in enumerate(value.__closure__):
                contents = cell.cell_contents
                if _observable(contents) and not callable(contents):
                    state[f"{name}.<cell {i}>"] = freeze(contents)
        elif _observable(value):
            state[name] = freeze(value)
            if isinstance(value, torch.Tensor) and value.grad is not None:
                state[f"{name}.grad"] = freeze(value.grad)
    if isinstance(model, torch.nn.Module):
        state.update({f"model.{k}": v for k, v in read_state(model, state_paths(model)).items()})
        for name, param in model.named_parameters():
            state[f"model.{name}.grad"] = freeze(param.grad)
    return state


def run_program(source: str, method: Method, workdir: Path) -> Run:
    """Run the program's schedule through `method` (see `Method`); never raises for the program's
    own exceptions, which are part of the record."""
    program = load_program(source, workdir)
    try:
        seed_all(CALL_SEED)
        model = program.make()
        call, report = method(model)
        finish = getattr(program, "finish", None)
        records = []
        for index, setup in enumerate(program.CALLS):
            seed_all(CALL_SEED + 1 + 2 * index)
            args, kwargs = setup(model)
            seed_all(CALL_SEED + 2 + 2 * index)
            record = CallRecord()
            printed = io.StringIO()
            out = None
            with contextlib.redirect_stdout(printed):
                try:
                    out = call(*args, **kwargs)
                except Exception as exc:  # the program's exception is part of what it did
                    record.error = (type(exc).__name__, str(exc))
            record.printed = printed.getvalue()
            record.output = freeze(out)
            if finish is not None and record.error is None:
                try:
                    finish(model, out)
                except Exception as exc:  # e.g. backward through a graph that lost its history
                    record.error = (f"{type(exc).__name__} in the training step", str(exc))
            record.inputs = freeze(
                [(a, a.grad if a.is_leaf else None) if isinstance(a, torch.Tensor) else a for a in args]
                + [kwargs]
            )
            record.state = observe(program, model)
            records.append(record)
        return Run(records, report() if report else None)
    finally:
        sys.modules.pop(program.__name__, None)


def _numbers_close(expected: str, actual: str) -> bool:
    """Printed texts equal but for numbers within tolerance."""
    if _NUMBER.sub("#", expected) != _NUMBER.sub("#", actual):
        return False
    pairs = zip(_NUMBER.findall(expected), _NUMBER.findall(actual))
    return all(math.isclose(float(a), float(b), rel_tol=LOOSE_RTOL, abs_tol=1e-2) for a, b in pairs)


def _first_difference(reference: Run, run: Run, rtol: float, atol: float) -> tuple[str, str, str] | None:
    """(status, aspect, detail) of the first difference, or None."""
    if len(reference.calls) != len(run.calls):
        return "wrong", "calls", f"{len(run.calls)} calls instead of {len(reference.calls)}"
    for i, (expected, actual) in enumerate(zip(reference.calls, run.calls)):
        where = f"call {i + 1}"
        if expected.error != actual.error:
            if expected.error is None:
                kind, message = actual.error  # type: ignore[misc]
                return "crashed", "exception", f"{where}: raised {kind}: {message} (eager did not)"
            return "wrong", "exception", f"{where}: exception {actual.error} instead of {expected.error}"
        if expected.printed != actual.printed and not (
            rtol and _numbers_close(expected.printed, actual.printed)
        ):
            return "wrong", "printed", f"{where}: printed {actual.printed!r} instead of {expected.printed!r}"
        for aspect, e, a in (
            ("output", expected.output, actual.output),
            ("inputs", expected.inputs, actual.inputs),
        ):
            found = difference(e, a, f"{where} {aspect}", rtol=rtol, atol=atol)
            if found:
                return "wrong", aspect, found
        for key in sorted(set(expected.state) | set(actual.state)):
            found = difference(
                expected.state.get(key, "<missing>"), actual.state.get(key, "<missing>"),
                f"{where} state {key}", rtol=rtol, atol=atol,
            )  # fmt: skip
            if found:
                return "wrong", "state", found
    return None


def compare(reference: Run, run: Run, *, compiled: bool = False, random_draws: bool = False) -> Verdict:
    """The verdict on `run` against the eager `reference`: exact equality first, then tolerance."""
    exact = _first_difference(reference, run, 0.0, 0.0)
    if exact is None:
        return Verdict("equal")
    status, aspect, detail = exact
    if status == "crashed":
        return Verdict(status, detail, aspect)
    loose = _first_difference(reference, run, LOOSE_RTOL, LOOSE_ATOL)
    if loose is None:
        return Verdict("tolerance", detail, aspect)
    status, aspect, detail = loose
    if compiled and random_draws and status == "wrong":
        return Verdict("random", detail, aspect)
    return Verdict(status, detail, aspect)


def judge(
    source: str, reference: Run, run: Run, workdir: Path, *, compiled: bool, random_draws: bool
) -> Verdict:
    """`compare`, and for a compiling backend's wrong result, whether the program is unstable: eager
    code run again with rounding noise (fuzz/rounding.py) also differs beyond tolerance, and the
    compiled result is no further off than `UNSTABLE_FACTOR` times that (or, where the noise changes
    something that is not a number, differs in the same aspect). Then the difference proves nothing
    about the JIT, and it is counted apart, with both differences said. A compiled result far
    beyond what the noise does stays wrong: an unstable program does not hide a real error."""
    verdict = compare(reference, run, compiled=compiled, random_draws=random_draws)
    if not compiled or verdict.status != "wrong":
        return verdict
    with RoundingNoise():
        noisy = run_program(source, eager_method, workdir)
    found = _first_difference(reference, noisy, LOOSE_RTOL, LOOSE_ATOL)
    if found is None:
        return verdict
    reach = _reach(reference, noisy)
    if reach is None:
        within = found[1] == verdict.aspect
    else:
        wider = reach * UNSTABLE_FACTOR
        within = _first_difference(reference, run, wider, wider * LOOSE_ATOL / LOOSE_RTOL) is None
    if not within:
        return Verdict(
            "wrong",
            f"{verdict.detail} (eager code with rounding noise differs less: {found[2]})",
            verdict.aspect,
        )
    return Verdict(
        "unstable", f"{verdict.detail}; eager code with rounding noise: {found[2]}", verdict.aspect
    )


def _reach(reference: Run, run: Run) -> float | None:
    """The smallest relative tolerance of `_REACH_STEPS` (absolute tolerance in the loose ratio) at
    which `run` matches `reference`, or None where no tolerance does (a difference not in numbers)."""
    for rtol in _REACH_STEPS:
        if _first_difference(reference, run, rtol, rtol * LOOSE_ATOL / LOOSE_RTOL) is None:
            return rtol
    return None


def eager_method(model: Any) -> tuple[Callable[..., Any], None]:
    return model, None


def jit_method(backend: str) -> Method:
    """`jitlab.jit(target, backend=...)`, reporting what its `explain()` says."""

    def method(model: Any) -> tuple[Callable[..., Any], Callable[[], dict[str, Any]]]:
        import jitlab

        compiled = jitlab.jit(model, backend=backend)
        return compiled, lambda: jit_stats(compiled.explain())

    return method


def jit_stats(report: Any) -> dict[str, Any]:
    """What `explain()` says about a program: captured, served from graphs, fell back."""
    hits = sum(g.hits for g in report.graphs)
    reasons = [report.disabled] if report.disabled else list(report.fallbacks)
    return {
        "captures": report.captures,
        "entries": len(report.graphs),
        "hits": hits,
        "deopts": report.deopts,
        "graph_breaks": len(report.graph_breaks),
        "served": hits + report.deopts > 0,
        "fell_back": bool(report.disabled or report.fallbacks),
        "reason": reasons[0] if reasons else None,
    }


def dynamo_method(model: Any) -> tuple[Callable[..., Any], Callable[[], dict[str, Any]]]:
    """`torch.compile(target, backend="eager")` (graphs counted as they are made and run)."""
    import torch._dynamo

    torch._dynamo.reset()
    counts = {"graphs": 0, "runs": 0}

    def counting_eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        counts["graphs"] += 1

        def run(*args: Any) -> Any:
            counts["runs"] += 1
            return gm.forward(*args)

        return run

    compiled = torch.compile(model, backend=counting_eager)
    return compiled, lambda: {**counts, "served": counts["runs"] > 0}


def check_source(source: str, backend: str = "eager", workdir: Path | None = None) -> Verdict:
    """Eager against `jitlab.jit(backend=...)` on one program's source (the regression tests' check)."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="jitlab-fuzz-")))
        reference = run_program(source, eager_method, workdir)
        run = run_program(source, jit_method(backend), workdir)
        draws = re.search(r"^Features: .*\brandom\b", source, re.MULTILINE) is not None
        return judge(source, reference, run, workdir, compiled=backend != "eager", random_draws=draws)
