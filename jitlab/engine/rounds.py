"""Measuring a run's cells in interleaved rounds, as asv does: round k runs process k of every cell.

A shared machine changes speed over minutes. Measured one cell after another, a slow spell lands on
whole cells (every process of a few cells is slow, and they look slower than they are, or their
processes disagree). In rounds, the spell is spread over every backend and size: round 0 runs the
first process of every cell (in the plan's order), round 1 the second, and so on, each later round
in its own shuffled order (seeded by the run, so a resumed run shuffles the same way), so no backend
always runs first or last in a round.

What does not change: a cell's processes share one scratch folder (kept from round to round), so
only its first process (round 0) is cold and its first call is the reported compile time; process 0
plans how many processes the cell gets (its budget pays for their start-ups) and later processes
stop once they turn out dearer than planned (`runner.extra_processes_limit`); a cell whose process
0 failed is finished after round 0.

Every process's result is merged into its cell and stored as soon as it exists (`save`): after
round 0 the whole table exists, later rounds narrow it. A cell still waiting for rounds carries a
`partial: ` warning; an interrupted run keeps such cells and `--resume` measures them again. On a
Ray cluster each node runs its own rounds over its cells (every process of a cell stays on the node
that ran its process 0); a round ends when every node has finished it. Before every process the
drift canary (`jitlab.engine.canary`) is read, on the machine that runs it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from jitlab.engine.jobs import Dispatcher, Job, Node, Outcome
from jitlab.engine.pairs import decide_pair, pair_units
from jitlab.engine.processes import merge_process_results, pooled
from jitlab.engine.runner import (
    extra_processes_limit,
    later_spec,
    measure_process,
    planned_count,
    scratch_root,
)
from jitlab.engine.slow_spells import AGAIN_SHARE, SpellWatch, measure_again, needs_again
from jitlab.engine.spec import WALL, CellSpec
from jitlab.process_result import CellResult, ProcessResult
from jitlab.stats.summary import summarize


@dataclass
class CellState:
    """One cell on one machine while its rounds go on."""

    spec: CellSpec
    #: the node that measures it: fixed on a cluster where every node measures every cell, the node
    #: that ran process 0 when spread, None on this machine
    node: Node | None
    #: the folder name of the cell's scratch folder under the session's root (on its machine)
    scratch_key: str
    results: list[ProcessResult] = field(default_factory=list)
    planned: int = 1
    #: wall seconds of its extra processes (after process 0) so far, and of the last of them
    spent_s: float = 0.0
    last_extra_s: float = 0.0
    #: wall seconds of its last process, process 0 included (for the estimate of the time left)
    last_s: float = 0.0
    done: bool = False
    #: the same cell of the other build (`jitlab run --against`): both are measured side by side in
    #: every round and get as many processes (`jitlab.engine.pairs`)
    partner: CellState | None = None
    #: why its pair stopped before the budget: the machine stayed busy (`jitlab.engine.pairs`)
    stopped: str | None = None

    def __post_init__(self) -> None:
        self.planned = max(1, self.spec.policy.processes)  # until process 0 plans

    @property
    def pending(self) -> int:
        """Processes still planned for this cell."""
        return 0 if self.done else max(self.planned - len(self.results), 0) if self.results else self.planned

    def estimate_s(self) -> float:
        """Wall seconds its pending processes will take: as its last process took (0 before any)."""
        return self.pending * self.last_s if self.results else 0.0


@dataclass
class RoundsProgress:
    """What `on_progress` hears: processes done and still planned, the round, the time left."""

    round: int = 0
    rounds: int = 1
    done: int = 0
    planned: int = 0
    started_at: float = field(default_factory=time.monotonic)
    #: wall seconds the pending processes should take, from what the same cells' processes took
    left_s: float | None = None

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started_at


#: the job of process `index` of a cell, with this spec; its key must be the cell's state
MakeJob = Callable[[CellState, int, CellSpec], Job]
Save = Callable[[CellState, CellResult, bool], None]


def round_order(
    states: Sequence[CellState], round_index: int, seed: str, shuffle: bool = True
) -> list[CellState]:
    """The cells measured in a round: round 0 in the plan's order (the table fills by rows, cheap
    backends first), every later round shuffled with a seed of the run and the round (or, without
    `shuffle`, in the plan's order too: cells planned side by side stay side by side in every round,
    as the selfcheck's pairs A0, B0, A1, B1, ... want). The two builds of a cell (`partner`) stay
    next to each other in every round, in a random order from round 1 on."""
    if round_index == 0:
        return list(states)
    rng = random.Random(f"{seed}:{round_index}")
    units = pair_units(states)
    if shuffle:
        rng.shuffle(units)
    order: list[CellState] = []
    for unit in units:
        order.extend(rng.sample(unit, len(unit)) if len(unit) == 2 else unit)
    return order


def run_rounds(
    states: Sequence[CellState],
    dispatcher: Dispatcher,
    make_job: MakeJob,
    save: Save,
    seed: str,
    on_start: Callable[[CellState, Node, int], None] = lambda state, node, index: None,
    on_progress: Callable[[RoundsProgress], None] = lambda progress: None,
    shuffle: bool = True,
) -> None:
    """Measure every cell's processes in rounds; `save(state, result, final)` gets the cell's
    merged result after each of its processes (`final`: no more will come). `shuffle`: see
    `round_order`."""
    progress = RoundsProgress(
        rounds=max((s.spec.policy.processes for s in states), default=1),
        planned=sum(s.spec.policy.processes for s in states),
    )
    watch = SpellWatch()
    #: cells whose last process came in with a process measured in a slow spell: final only after
    #: those are measured again (`jitlab.engine.slow_spells`)
    held: list[CellState] = []
    index = 0
    while True:
        active = [s for s in states if not s.done]
        for state in active:
            if index > 0 and state.spent_s + state.last_extra_s > extra_processes_limit(state.spec):
                finish(state, save)  # the extra processes turned out dearer than planned
                if state.partner is not None and not state.partner.done:
                    finish(state.partner, save)  # a build measured alone pairs with nothing
        active = [s for s in active if not s.done]
        if not active:
            break
        progress.round = index
        jobs = [
            make_job(state, index, state.spec if index == 0 else later_spec(state.spec, state.results[0]))
            for state in round_order(active, index, seed, shuffle)
        ]

        def started(job: Job, node: Node, index: int = index) -> None:
            on_start(job.key, node, index)

        def finished(outcome: Outcome, index: int = index) -> None:
            state: CellState = outcome.job.key
            if outcome.error is not None:  # the dispatcher's failure (a lost node): the cell's
                state.results = [ProcessResult(status="failed", reason=outcome.error)]
                state.done = True
                save(state, CellResult.of_process(state.results[0]), True)
            else:
                result = watch.mark(
                    ProcessResult.received(outcome.value), state.node.node_id if state.node else ""
                )
                if result.slow_spell and state.node is not None:
                    result = replace(
                        result, again="it ran on a cluster node, whose quiet spells this machine cannot see"
                    )
                settled = record(state, result, index, outcome.node)
                for side in [state] + ([settled] if settled else []):
                    hold = side.done and needs_again(side)
                    if hold:
                        held.append(side)
                    save(side, merged(side), side.done and not hold)
            progress.done += 1
            progress.planned = progress.done + sum(s.pending for s in states)
            progress.left_s = time_left(states)
            on_progress(progress)

        dispatcher.run(jobs, started, finished)
        index += 1
    if held:

        def again_job(state: CellState, index: int) -> Job:
            return make_job(state, index, later_spec(state.spec, state.results[0]))

        measure_again(held, dispatcher, again_job, watch, AGAIN_SHARE * progress.elapsed_s, on_start)
        for state in held:
            save(state, merged(state), True)


def time_left(states: Sequence[CellState]) -> float:
    """Wall seconds the pending processes should take: each cell's as its last process took; a cell
    not started yet as long as the average first process took."""
    firsts = [float(s.results[0].wall_s or 0.0) for s in states if s.results]
    first = sum(firsts) / len(firsts) if firsts else 0.0
    return sum(s.estimate_s() if s.results else first * s.pending for s in states)


def record(state: CellState, result: ProcessResult, index: int, node: Node | None) -> CellState | None:
    """Add process `index`'s result to the cell and decide what is left of it. Returns the cell's
    partner when this process settled it as done too (it measured the round first and waited)."""
    result = replace(result, round=index)
    state.results.append(result)
    wall = float(result.wall_s or 0.0)
    state.last_s = wall
    if index == 0:
        state.planned = planned_count(result)
        if node is not None and not node.local and state.node is None:
            state.node = node  # spread: the later processes go where process 0 ran
    else:
        state.spent_s += wall
        state.last_extra_s = wall
    partner = state.partner
    if partner is None or partner.done:
        decide_alone(state)
    elif len(partner.results) == len(state.results):
        decide_pair(state, partner)
        return partner if partner.done else None
    # else: the other build has not measured this round yet; it decides for both
    return None


def decide_alone(state: CellState) -> None:
    """A cell that measured its planned processes gets another, or is done."""
    if len(state.results) >= state.planned:
        if wants_another(state):
            state.planned += 1
        else:
            state.done = True


def wants_another(state: CellState) -> bool:
    """Whether a cell that measured its planned processes gets one more (`TimingPolicy.max_processes`):
    every process so far succeeded on wall time, and the 95% interval of its figure, which counts
    the spread between processes (so it needs two of them), is still wider than the target."""
    policy = state.spec.policy
    if policy.measure != WALL or len(state.results) >= policy.max_processes:
        return False
    if any(not r.ok for r in state.results):
        return False
    counted = pooled(state.results)
    samples = [s for _, r in counted for s in r.samples_s]
    owners = [k for k, r in counted for _ in r.samples_s]
    if len(counted) < 2 or not samples:
        return True
    return summarize(samples, sample_process=owners).ci_half_width > policy.target_ci


def finish(state: CellState, save: Save) -> None:
    """Stop a cell before its planned processes ran, and store it as final."""
    state.done = True
    save(state, merged(state), True)


def merged(state: CellState) -> CellResult:
    """The cell's result from the processes measured so far (see `merge_process_results`), and why
    its pair stopped early, when it did."""
    policy = state.spec.policy
    result = merge_process_results(state.results, policy.target_ci, policy.processes, state.pending)
    if state.stopped and result.ok:
        result = replace(result, warnings=(*result.warnings, state.stopped))
    return result


def local_job(timeout_s: float, token: str) -> MakeJob:
    """Jobs for this machine: each process in the cell's folder under the session's scratch root."""

    def make(state: CellState, index: int, spec: CellSpec) -> Job:
        scratch = scratch_root(token) / state.scratch_key
        return Job(state, measure_local_process, (spec, index, timeout_s, scratch))

    return make


def measure_local_process(spec: CellSpec, index: int, timeout_s: float, scratch: Path) -> ProcessResult:
    """One process of a cell on this machine, the canary read before it."""
    return measure_process(spec, index, timeout_s, scratch, canary=True)
