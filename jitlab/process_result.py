"""What one worker process measured (`ProcessResult`), and a cell's result merged from its
processes (`CellResult`): frozen records read by field from the moment the parent reads a worker's
JSON until the store turns them into a `CellRecord`.

The worker (`jitlab.engine.worker`) writes its result as a JSON object; that object stays the format
across the process boundary (`from_dict` reads it, `to_dict` writes the same keys back). It sits at
the package's lowest floor, importing nothing of jitlab, so the worker, the engine and the store
may all use it without the store reaching up into the engine.

Reading is strict where jitlab itself wrote the object (a worker's result: an unknown key is a bug,
a successful result lacking a key the worker always writes is a bug) and tolerant where the store
reads what someone else wrote (an export of an older jitlab, a pytest session's result, a pyperf
import): unknown keys are left out and missing ones take their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

#: the keys every successful worker result has (`jitlab.engine.worker.measure_cell`)
WORKER_OK_KEYS = frozenset(
    {
        "status", "reason", "first_call_s", "loops", "samples_s", "cpu_samples_s", "load", "warmup_s",
        "dispatch_s", "values", "references", "errors", "extras", "expected_error", "warnings",
        "peak_rss_bytes", "peak_device_bytes", "device", "backend_version", "threads", "asynchronous",
        "timing_method", "instructions", "process", "processes_planned", "startup_s", "sampling_share_s",
        "harness_overhead_s",
    }
)  # fmt: skip

#: fields held as tuples (JSON lists on the way in and out)
_SEQUENCES = frozenset(
    {"samples_s", "cpu_samples_s", "dispatch_s", "values", "references", "errors", "warnings",
     "instructions", "sample_process", "process_details", "instruction_process"}
)  # fmt: skip

Result = TypeVar("Result", bound="ProcessResult")


@dataclass(frozen=True)
class ProcessResult:
    """One worker process of a cell, as the worker wrote it plus what its parent added (`log`,
    `wall_s`, `canary`, `round`, and the slow-spell marks of `jitlab.engine.slow_spells`)."""

    status: str  # ok | failed | timeout | unavailable
    reason: str | None = None
    first_call_s: float | None = None
    loops: int | None = None
    samples_s: tuple[float, ...] = ()
    #: CPU seconds per call of each sample (empty where CPU time does not apply)
    cpu_samples_s: tuple[float, ...] = ()
    #: how busy the machine was while it sampled (`jitlab.engine.load.Load.to_json`)
    load: dict[str, Any] | None = None
    warmup_s: float | None = None
    dispatch_s: tuple[float, ...] = ()
    #: the result of each seed (scalars; None where not a number), seed 0 first
    values: tuple[float | None, ...] = ()
    references: tuple[float | None, ...] = ()
    errors: tuple[float, ...] = ()
    extras: dict[str, list[float]] = field(default_factory=dict)
    expected_error: float | None = None
    warnings: tuple[str, ...] = ()
    peak_rss_bytes: int | None = None
    peak_device_bytes: int | None = None
    device: str | None = None
    backend_version: str | None = None
    threads: int | None = None
    asynchronous: bool | None = None
    timing_method: str | None = None
    #: instructions per call of each counted block (`--measure instructions`)
    instructions: tuple[float, ...] = ()
    #: which process of the cell this is (0 made the cold first call)
    process: int = 0
    #: how many processes process 0 planned for the cell, and each later one's share of the budget
    processes_planned: int | None = None
    startup_s: float | None = None
    sampling_share_s: float | None = None
    harness_overhead_s: float | None = None
    result_version: int | None = None
    #: the exception's traceback of a failed worker, and the output kept of it
    traceback: str | None = None
    log: str | None = None
    #: wall seconds the process took, start-up included (its parent's clock)
    wall_s: float | None = None
    #: the drift canary read just before it started (`jitlab.engine.canary.probe`)
    canary: dict[str, Any] | None = None
    #: the round of `jitlab run` it ran in ("again" when measured again on a quiet machine)
    round: int | str | None = None
    #: why it counts as measured in a slow spell; the process that replaced it; why none did
    slow_spell: str | None = None
    replaced_by: int | None = None
    again: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_dict(cls: type[Result], data: Mapping[str, Any], strict: bool = False) -> Result:
        """The record of a JSON object. `strict` (an object jitlab's own worker wrote): an unknown
        key, a missing `status`, or a successful result without a key the worker always writes is
        a `ValueError`; otherwise those keys are left out or take their defaults."""
        names = {f.name for f in fields(cls)}
        if not strict and "status" not in data:
            raise KeyError("status")
        if strict:
            unknown = sorted(set(data) - names)
            wanted = WORKER_OK_KEYS if data.get("status") == "ok" else {"status"}
            missing = sorted(wanted - set(data))
            if unknown or missing:
                raise ValueError(f"not a worker result: unknown keys {unknown}, missing keys {missing}")
        return cls(
            **{
                key: tuple(value) if key in _SEQUENCES else value
                for key, value in data.items()
                if key in names and value is not None  # None: unset, the default
            }
        )

    @classmethod
    def received(cls: type[Result], value: ProcessResult | Mapping[str, Any]) -> Result:
        """A job's value as a record: a Ray task sends its record as `to_dict`'s object."""
        if isinstance(value, cls):
            return value
        return cls.from_worker(value)

    @classmethod
    def from_worker(cls: type[Result], data: Mapping[str, Any]) -> Result:
        """A worker's result read strictly, or, when it is not the object this jitlab's worker
        writes (a cluster node running another jitlab), a failed process saying so: the cell fails
        and the run goes on, rather than a result read wrongly or the run stopped."""
        try:
            return cls.from_dict(data, strict=True)
        except (ValueError, TypeError) as exc:  # TypeError: a field of the wrong kind
            process = data.get("process") if isinstance(data, Mapping) else None
            return cls(
                status="failed",
                reason=f"{exc}: the worker that measured it is not this jitlab's (is the same jitlab "
                "installed where it ran?)",
                process=process if isinstance(process, int) else 0,
                wall_s=data.get("wall_s") if isinstance(data, Mapping) else None,
            )

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON object, every field included (`from_dict(strict=True)` reads it back)."""
        return {
            f.name: list(getattr(self, f.name)) if f.name in _SEQUENCES else getattr(self, f.name)
            for f in fields(self)
        }


@dataclass(frozen=True)
class CellResult(ProcessResult):
    """A cell's result merged from its processes (`jitlab.engine.processes.merge_process_results`):
    process 0's record with the pooled samples and a record per process."""

    #: the process each of `samples_s` came from (empty: all from one process)
    sample_process: tuple[int, ...] = ()
    #: one record per process (what `jitlab.engine.processes.process_record` keeps), as stored
    process_details: tuple[dict[str, Any], ...] = ()
    instruction_process: tuple[int, ...] = ()
    #: processes still planned when this was merged (a run in rounds stores its cells after each)
    pending_processes: int = 0

    @classmethod
    def of_process(cls, result: ProcessResult, **changes: Any) -> CellResult:
        """A cell's result from one process's record, with `changes`."""
        return cls(**{**{f.name: getattr(result, f.name) for f in fields(ProcessResult)}, **changes})
