"""Processes measured in a slow spell, and measuring them again when the machine is quiet.

A round of `jitlab run` can land on a spell when other work competes for the CPUs or the machine
itself runs slower. Each process is marked (`mark`) when

- it waited for a CPU, or lost time to the hypervisor, beyond `jitlab.engine.load.BUSY_SHARE` of
  its sampling (its own `load`, read from /proc by the worker), or
- the drift canary read just before it ran `SLOW_CANARY` times slower than the run's fastest
  reading so far on the same machine.

After the last round, the marked processes of this machine's cells are measured again, one by one,
while the machine is quiet (`quiet_now`: its CPUs idle while jitlab waits, and the canary near its
fastest) and the time spent on it stays within `AGAIN_SHARE` of the rounds' time. A process measured
again replaces the marked one in the cell's figures (`replaced_by`; its samples stay in the
record). A marked process that could not be replaced keeps its samples, and the cell says so and
why (the machine stayed busy, or the time ran out) in a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from jitlab.engine.canary import probe
from jitlab.engine.jobs import Dispatcher, Job, Node
from jitlab.engine.load import Load, machine_idle_share
from jitlab.process_result import ProcessResult


class CellState(Protocol):
    """What this module needs of a cell in its rounds (`jitlab.engine.rounds.CellState`)."""

    node: Node | None
    results: list[ProcessResult]


#: a canary reading this many times the fastest so far marks the process that followed it
SLOW_CANARY = 1.25
#: the machine is quiet when this share of its CPU time went idle while jitlab waited...
QUIET_IDLE_SHARE = 0.85
#: ...and the canary reads within this factor of the run's fastest
QUIET_CANARY = 1.10
#: measuring again may take this share of the time the rounds took
AGAIN_SHARE = 0.25
#: the start of the warning of a cell with a process measured in a slow spell
SLOW_WARNING = "slow spell: "


@dataclass
class SpellWatch:
    """The fastest canary reading per machine so far, to judge the next ones against."""

    fastest: dict[str, float] = field(default_factory=dict)

    def mark(self, result: ProcessResult, machine: str) -> ProcessResult:
        """`result` with `slow_spell` (what made its spell slow) set when it was measured in one."""
        reasons = []
        load = Load.from_json(result.load)
        if load is not None and load.busy:
            reasons.append(f"the process {load.phrase()}")
        reading = (result.canary or {}).get("python_s")
        if isinstance(reading, (int, float)) and reading > 0:
            fastest = self.fastest.get(machine)
            if fastest is not None and reading > SLOW_CANARY * fastest:
                reasons.append(
                    f"the drift canary ran {reading / fastest - 1:.0%} slower than the run's fastest"
                )
            self.fastest[machine] = min(reading, fastest or reading)
        if reasons and result.ok:
            return replace(result, slow_spell="; ".join(reasons))
        return result

    def quiet_now(self, machine: str) -> bool:
        """Nothing else runs on this machine now, and its speed is near the run's fastest."""
        idle = machine_idle_share()
        if idle is not None and idle < QUIET_IDLE_SHARE:
            return False
        fastest = self.fastest.get(machine)
        return fastest is None or probe()["python_s"] <= QUIET_CANARY * fastest


def needs_again(state: CellState) -> bool:
    """A cell on this machine with a process marked slow and not replaced yet."""
    return state.node is None and any(r.slow_spell and r.replaced_by is None for r in state.results)


def measure_again(
    states: Sequence[CellState],
    dispatcher: Dispatcher,
    make_job: Callable[[CellState, int], Job],
    watch: SpellWatch,
    budget_s: float,
    on_start: Callable[[CellState, Node, int], None] = lambda state, node, index: None,
) -> None:
    """Measure the marked processes of `states` again while the machine is quiet and `budget_s`
    lasts; each marked process ends replaced, or with `again` saying why it could not be."""
    spent = 0.0
    stop: str | None = None
    for state in states:
        # each attempt is a new process of the cell, with a folder of its own: an attempt measured
        # in a slow spell again is not kept, so the next one must not reuse its number
        attempt = len(state.results)
        for k, result in enumerate(list(state.results)):
            if not result.slow_spell or result.replaced_by is not None:
                continue
            if stop is None and spent >= budget_s:
                stop = "the time for measuring again was spent"
            if stop is None and not watch.quiet_now(""):
                stop = "the machine stayed busy"
            if stop is not None:
                state.results[k] = replace(result, again=stop)
                continue
            index, attempt = attempt, attempt + 1
            outcomes: list[Any] = []
            dispatcher.run(
                [make_job(state, index)],
                lambda job, node, s=state, i=index: on_start(s, node, i),
                outcomes.append,
            )
            new = (
                ProcessResult.received(outcomes[0].value) if outcomes and outcomes[0].error is None else None
            )
            spent += float(new.wall_s or 0.0) if new else 0.0
            new = watch.mark(new, "") if new else None
            if new is not None and new.ok and not new.slow_spell:
                # its place among the cell's processes (what its samples are pooled under)
                state.results[k] = replace(result, replaced_by=len(state.results))
                state.results.append(replace(new, round="again", process=len(state.results)))
            else:
                state.results[k] = replace(
                    result,
                    again="it was measured again in a slow spell too" if new else "measuring again failed",
                )


def slow_warnings(results: Sequence[ProcessResult]) -> list[str]:
    """One warning per process measured in a slow spell: replaced, or why not."""
    warnings = []
    for k, result in enumerate(results):
        spell = result.slow_spell
        if not spell:
            continue
        if result.replaced_by is not None:
            what = f"measured again on a quiet machine (process {result.replaced_by}), which replaces it"
        elif result.again:
            what = f"not measured again on a quiet machine: {result.again}"
        else:
            continue  # the rounds are not over: measuring again may still come
        warnings.append(f"{SLOW_WARNING}process {k} ran while the machine was busy ({spell}); {what}")
    return warnings
