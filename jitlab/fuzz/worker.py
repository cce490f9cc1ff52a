"""Worker process of `jitlab fuzz`: runs programs eagerly and under each method, reporting as it goes.

    python -m jitlab.fuzz.worker JOB.json EVENTS.jsonl

It speaks the protocol of the capture workers (`jitlab.capture.harness` drives it): JOB.json holds
{"items": [[name, [methods]], ...], "seed", "backend", "exclude"} and optionally "programs"
({name: program JSON}, for the shrinker's candidates; otherwise item NAME is the index of a program
generated from the seed). For every item the worker emits {"event": "start", "case", "method"}
before each run (the eager reference first, as method "eager") and {"event": "done", ...,
"result"} after each method, so that a program that hangs or kills the process is charged to the
run in flight and the parent goes on with a fresh worker.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from jitlab.capture.worker import one_line, worker_entry
from jitlab.fuzz.generator import generate
from jitlab.fuzz.oracle import compare, dynamo_method, eager_method, jit_method, judge, run_program
from jitlab.fuzz.program import Program, render


def program_of(job: dict[str, Any], name: str) -> Program:
    """The program item `name` of a job stands for."""
    given = job.get("programs") or {}
    if name in given:
        return Program.from_json(given[name])
    return generate(int(job["seed"]), int(name), exclude=job.get("exclude", ()))


def run_item(
    job: dict[str, Any], name: str, methods: list[str], emit: Callable[[dict], None], workdir: Path
) -> None:
    program = program_of(job, name)
    source = render(program)
    base = {"features": sorted(program.features), "calls": len(program.calls), "kind": program.kind}
    emit({"event": "start", "case": name, "method": "eager"})
    try:
        reference = run_program(source, eager_method, workdir)
        again = run_program(source, eager_method, workdir)
    except Exception as exc:  # the harness of the program failed eagerly: a generator bug
        for method in methods:
            result = {**base, "status": "eager_failed", "detail": one_line(exc)}
            emit({"event": "done", "case": name, "method": method, "result": result})
        return
    self_check = compare(reference, again)
    backend = job.get("backend", "eager")
    for method in methods:
        emit({"event": "start", "case": name, "method": method})
        result: dict[str, Any] = dict(base)
        if self_check.status != "equal":  # the program is not deterministic: it proves nothing
            result.update(status="nondeterministic", detail=self_check.detail)
        else:
            run_with = jit_method(backend) if method == "jit" else dynamo_method
            try:
                run = run_program(source, run_with, workdir)
                verdict = judge(
                    source,
                    reference,
                    run,
                    workdir,
                    compiled=method == "jit" and backend != "eager",
                    random_draws="random" in program.features,
                )
                result.update(status=verdict.status, detail=verdict.detail, aspect=verdict.aspect)
                result["stats"] = run.stats
            except Exception as exc:  # the JIT itself failed (not the program): a crash
                result.update(status="crashed", detail=f"internal: {one_line(exc)}", aspect="internal")
        result["eager_raised"] = sum(1 for c in reference.calls if c.error)
        emit({"event": "done", "case": name, "method": method, "result": result})


def main(argv: list[str]) -> int:
    job_path, events_path = argv
    with open(job_path) as f:
        job = json.load(f)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    logging.getLogger("jitlab.jit").setLevel(logging.ERROR)
    with open(events_path, "a") as stream, tempfile.TemporaryDirectory(prefix="jitlab-fuzz-") as scratch:

        def emit(event: dict[str, Any]) -> None:
            stream.write(json.dumps(event) + "\n")
            stream.flush()

        for name, methods in job["items"]:
            run_item(job, name, methods, emit, Path(scratch))
    sys.stdout.flush()
    os._exit(0)  # leave without waiting for torch's and TorchDynamo's shutdown


if __name__ == "__main__":
    worker_entry(main)
