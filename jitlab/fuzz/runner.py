"""Running many programs through fuzz workers, a crash or a hang costing only its own program.

This is `jitlab capture`'s machinery (`jitlab.capture.harness.run_batch`: a worker process per
batch in its own process group, a time limit per run, a fresh worker after a crash) with the fuzz
worker plugged in. Programs are sent in chunks, one worker per chunk, so that no process
accumulates the caches of thousands of programs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from jitlab.capture.harness import run_batch
from jitlab.fuzz.generator import generate
from jitlab.fuzz.program import Program

WORKER = "jitlab.fuzz.worker"
CHUNK = 100  # programs per worker process


@dataclass
class Outcome:
    """The result of one program under one method ("jit" or "dynamo")."""

    name: str
    method: str
    status: str  # equal, tolerance, random, wrong, crashed, eager_failed, nondeterministic
    features: tuple[str, ...] = ()
    calls: int = 0
    detail: str | None = None
    aspect: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status in ("wrong", "crashed")


def _outcome(name: str, method: str, result: dict[str, Any], program: Program | None) -> Outcome:
    if "status" not in result:  # the harness's record of a worker that died or hung
        status = "eager_failed" if result.get("broken_case") else "crashed"
        features = tuple(sorted(program.features)) if program else ()
        calls = len(program.calls) if program else 0
        return Outcome(name, method, status, features, calls, result.get("error"), "process")
    return Outcome(
        name,
        method,
        result["status"],
        tuple(result.get("features", ())),
        int(result.get("calls", 0)),
        result.get("detail"),
        result.get("aspect"),
        result.get("stats") or {},
    )


def run_programs(
    seed: int,
    names: list[str],
    methods: list[str],
    backend: str,
    timeout_s: float,
    *,
    exclude: Iterable[str] = (),
    programs: dict[str, Program] | None = None,
    jobs: int = 1,
    on_result: Callable[[Outcome], None] | None = None,
) -> dict[tuple[str, str], Outcome]:
    """Outcomes keyed by (program name, method). A name is the index of a program generated from
    `seed`, or a key of `programs` (the shrinker's candidates)."""
    excluded = sorted(set(exclude))
    given = programs or {}
    options = {
        "seed": seed,
        "backend": backend,
        "exclude": excluded,
        "programs": {name: p.to_json() for name, p in given.items()},
    }

    def program(name: str) -> Program | None:
        if name in given:
            return given[name]
        return generate(seed, int(name), exclude=excluded) if name.isdigit() else None

    outcomes: dict[tuple[str, str], Outcome] = {}

    def record(name: str, method: str, result: dict[str, Any]) -> None:
        outcome = _outcome(name, method, result, None if "status" in result else program(name))
        outcomes[(name, method)] = outcome
        if on_result:
            on_result(outcome)

    chunks = [names[i : i + CHUNK] for i in range(0, len(names), CHUNK)]

    def run_chunk(chunk: list[str]) -> None:
        items = [(name, list(methods)) for name in chunk]
        chunk_options = dict(options)
        chunk_options["programs"] = {n: options["programs"][n] for n in chunk if n in options["programs"]}
        run_batch([], items, timeout_s, on_result=record, worker=WORKER, options=chunk_options)

    if jobs <= 1 or len(chunks) <= 1:
        for chunk in chunks:
            run_chunk(chunk)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(run_chunk, chunks))
    return outcomes
