"""What the graph stage needs of the tracer above it (jitlab/jit/tracing/tracer.py), as a `Protocol`:
the graph recorder is made with the tracer of its capture, and it and the graph helpers it calls
(shapes, training_nodes, dynamic_scalars, state_reads) reach it only through these members. The
tracer is a higher stage, so it is never imported here; tests/jit/test_jit_owned_state.py checks that
the real tracer has every member."""

from __future__ import annotations

from typing import Protocol

import torch
import torch.fx as fx

from jitlab.jit.graph.argument_generators import GeneratorSlot
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Source
from jitlab.jit.reasons import ReasonKind


class RecordingTracer(Protocol):
    """The tracer as the graph stage sees it: the guards of the current segment, the notes shown by
    `.explain()`, where a value came from, and noting a problem at the line the program runs."""

    builder: GuardBuilder
    notes: list[str]

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def running_line(self) -> str | None: ...

    def resolve_tensor(self, tensor: torch.Tensor) -> fx.Node: ...

    def source_of(self, value: object) -> Source | None: ...

    def is_outside(self, obj: object) -> bool: ...

    def generator_slot(self, generator: torch.Generator) -> GeneratorSlot | None: ...

    def generator_kept(self, generator: torch.Generator) -> None: ...
