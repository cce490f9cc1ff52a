"""What jitlab.jit and TorchDynamo did, counted the same way for every mode that compares them.

- TorchDynamo's graphs are counted by the backend itself: `CountingBackend` wraps the chosen
  backend (`eager`, `aot_eager`, `inductor`, looked up in TorchDynamo's registry as
  `torch.compile(backend=NAME)` does) and counts every graph it receives, so each `torch.compile`
  arrangement has its own count even when several run in one process. Its graph breaks are read
  from TorchDynamo's counters before and after (`BreakCounter`), and the frames it gave up on
  after its recompile limit from its log (`RecompileLimits`).
- jitlab.jit's come from `.explain()` (`jit_counts`): captures, cache entries, hits, graph breaks
  and its fallbacks to eager with their reasons.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

#: characters of a reason kept in a report (TorchDynamo's messages run to paragraphs)
REASON_CHARS = 200
#: jitlab.jit's fallbacks are kept longer: one capture's problems are joined in one message
FALLBACK_CHARS = 800


def short(text: str, limit: int = REASON_CHARS) -> str:
    """The first line of a reason, shortened to `limit` characters."""
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


class CountingBackend:
    """A torch.compile backend that counts the graphs TorchDynamo hands it, then compiles each with
    the backend named (`torch.compile(fn, backend=CountingBackend("inductor"))`)."""

    def __init__(self, name: str) -> None:
        from torch._dynamo.backends.registry import lookup_backend

        self.name = name
        self.graphs = 0
        self.ops = 0
        self._inner = lookup_backend(name)

    def __call__(self, graph_module: Any, example_inputs: list[Any]) -> Any:
        self.graphs += 1
        self.ops += sum(node.op.startswith("call_") for node in graph_module.graph.nodes)
        return self._inner(graph_module, example_inputs)


class BreakCounter:
    """TorchDynamo's graph breaks since `start()`: how many, and their reasons (first lines)."""

    def __init__(self) -> None:
        self._before: Counter[str] = Counter()

    @staticmethod
    def _now() -> Counter[str]:
        from torch._dynamo.utils import counters

        return Counter(dict(counters["graph_break"]))

    def start(self) -> None:
        self._before = self._now()

    def since(self) -> tuple[int, list[str]]:
        grown = self._now() - self._before
        return sum(grown.values()), sorted({short(reason) for reason in grown})


class RecompileLimits(logging.Handler):
    """TorchDynamo's warnings that a frame reached its recompile limit (it then runs that frame
    eagerly for good): what a fallback of TorchDynamo looks like."""

    LOGGER = "torch._dynamo.convert_frame"

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "recompile_limit" in message or "cache_size_limit" in message:  # the limit, and the function
            self.messages.append(short(" ".join(line.strip() for line in message.splitlines()[:2]), 400))

    def __enter__(self) -> RecompileLimits:
        logging.getLogger(self.LOGGER).addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger(self.LOGGER).removeHandler(self)


def jit_counts(compiled: Any) -> dict[str, Any]:
    """Captures, cache entries, hits, graphs per call, graph breaks and fallbacks of a jitlab.jit
    callable, from its `.explain()`."""
    report = compiled.explain()
    reasons = []
    for reason in report.fallback_reasons:  # whole: one capture's problems come joined by "; "
        at = f" @ {reason.where}" if reason.where else ""
        reasons.append(short(f"[{reason.kind.value}] {reason.message}{at}", FALLBACK_CHARS))
    if report.disabled and not reasons:
        reasons.append(short(report.disabled))
    if report.eager_misses:  # the cache is full: the calls that miss it run eagerly, its entries kept
        failed = f": {report.miss_reasons[0]}" if report.miss_reasons else ""
        reasons.append(
            short(
                f"[cache-limit] {report.eager_misses} call(s) missed the full cache "
                f"({len(report.graphs)} entries) and ran eagerly{failed}",
                FALLBACK_CHARS,
            )
        )
    return {
        "captures": report.captures,
        "entries": len(report.graphs),
        "graphs": sum(graph.graphs for graph in report.graphs),
        "hits": sum(graph.hits for graph in report.graphs),
        "graphs_per_call": report.graphs_per_call,
        "breaks": len(report.graph_breaks),
        "break_reasons": sorted({short(str(b)) for b in report.graph_breaks}),
        "fallback": bool(report.fallback_reasons or report.disabled or report.eager_misses),
        "fallback_for_good": report.disabled is not None,
        "fallback_reasons": list(dict.fromkeys(reasons)),
        "miss_reasons": list(report.miss_reasons),  # the guard that failed at the misses, grouped
        # a graph the backend failed on, or a training step's part left uncompiled (host_split.py):
        # served by graphs all the same, but slower, so said beside the counts
        "backend_notes": sorted({g.backend_note for g in report.graphs if g.backend_note}),
    }


def reason_lines(model: str, label: str, result: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    """`--details` lines of one method on one model: the result's `keys` (its error, its first
    difference), then each fallback and graph-break reason and backend note."""
    lines = [f"{model} · {label}: {result[key]}" for key in keys if result.get(key)]
    lines += [f"{model} · {label} falls back: {reason}" for reason in result.get("fallback_reasons", [])]
    lines += [f"{model} · {label} graph break: {reason}" for reason in result.get("break_reasons", [])]
    lines += [f"{model} · {label} backend: {note}" for note in result.get("backend_notes", [])]
    return lines
