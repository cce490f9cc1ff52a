"""`jitlab fuzz`: a differential fuzzer for `jitlab.jit`.

A seeded generator writes small Python + PyTorch programs (functions and modules, control flow,
containers, side effects, autograd, random draws, exceptions) with a schedule of calls that changes
the outside state between calls; the oracle runs each program eagerly and under `jitlab.jit` (and
TorchDynamo) from identical starting states and compares everything a user could see; a failing
program is shrunk to a minimal reproducer written as a pytest file. See docs/fuzz.md.

The modules, in the order data flows: `program` (the program as data, rendered to source),
`grammar` (the statements), `generator` (seed -> program), `oracle` (run and compare), `worker`
(a subprocess running programs), `runner` (batches of programs through workers), `shrinker`,
`reproducer` (the regression test file) and `summary` (counts per feature class).
"""

from __future__ import annotations

from typing import Any

__all__ = ["generate"]


def __getattr__(name: str) -> Any:  # lazy, so that `import jitlab.fuzz` stays light
    if name == "generate":
        from jitlab.fuzz.generator import generate

        return generate
    raise AttributeError(f"module 'jitlab.fuzz' has no attribute {name!r}")
