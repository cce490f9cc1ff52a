"""How `jitlab run`'s rounds decide a cell's processes: `--processes N..MAX` adds one per round while
the cell's interval is wider than its target, and a process measured in a slow spell on this machine
is measured again (a local process is not pinned to a "cluster node" whose quiet spells this machine
cannot see)."""

from dataclasses import replace

import numpy as np

from jitlab.engine.dispatch import LocalDispatcher
from jitlab.engine.jobs import Job
from jitlab.engine.rounds import CellState, record
from jitlab.engine.slow_spells import SpellWatch, measure_again, needs_again
from jitlab.engine.spec import INSTRUCTIONS, CellSpec, TimingPolicy
from jitlab.process_result import ProcessResult

LOCAL = LocalDispatcher().nodes[0]


def process(median: float, rng: np.random.Generator, **extra) -> dict:
    samples = list(median * np.exp(rng.normal(0.0, 0.002, 20)))
    return ProcessResult.from_dict(
        {"status": "ok", "processes_planned": 3, "samples_s": samples, "wall_s": 0.5, **extra}
    )


def state_with(**policy) -> CellState:
    spec = CellSpec("fixed-work", "python", 200_000, policy=TimingPolicy(processes=3, **policy))
    return CellState(spec, None, "cell-0")


def run_processes(state: CellState, medians) -> None:
    rng = np.random.default_rng(0)
    for index, median in enumerate(medians):
        if state.done:
            return
        record(state, process(median, rng), index, LOCAL)


def test_a_cell_whose_processes_disagree_gets_more_processes_up_to_the_most_allowed():
    straying = [1.0, 1.08, 0.93, 1.05, 0.96, 1.07, 0.94, 1.02, 0.99, 1.06, 0.95, 1.01]
    state = state_with(target_ci=0.01, max_processes=8)
    run_processes(state, straying)
    assert state.done and len(state.results) == 8


def test_a_cell_that_meets_its_target_stops_at_its_planned_processes():
    state = state_with(target_ci=0.01, max_processes=8)
    run_processes(state, [1.0, 1.001, 0.999, 1.0, 1.0])
    assert state.done and len(state.results) == 3


def test_without_a_most_allowed_or_when_counting_instructions_no_process_is_added():
    straying = [1.0, 1.08, 0.93, 1.05, 0.96]
    for policy in ({"target_ci": 0.01}, {"target_ci": 0.01, "max_processes": 8, "measure": INSTRUCTIONS}):
        state = state_with(**policy)
        run_processes(state, straying)
        assert state.done and len(state.results) == 3, policy


def test_a_failed_process_stops_the_adding():
    state = state_with(target_ci=0.01, max_processes=8)
    rng = np.random.default_rng(1)
    record(state, process(1.0, rng), 0, LOCAL)
    record(state, process(1.1, rng), 1, LOCAL)
    record(state, ProcessResult(status="failed", reason="killed", wall_s=0.1), 2, LOCAL)
    assert state.done and len(state.results) == 3


def test_a_later_process_in_a_slow_spell_on_this_machine_is_measured_again():
    state = state_with()
    rng = np.random.default_rng(2)
    record(state, process(1.0, rng), 0, LOCAL)
    record(state, process(1.0, rng), 1, LOCAL)
    record(state, process(1.4, rng, slow_spell="the drift canary ran 40% slower"), 2, LOCAL)
    assert state.node is None  # this machine: not pinned like a cluster node
    assert state.done and needs_again(state)
    cluster_node = replace(LOCAL, node_id="node-1", name="node-1", local=False)
    pinned = state_with()
    record(pinned, process(1.0, rng), 0, cluster_node)
    assert pinned.node == cluster_node


class QuietWatch(SpellWatch):
    """A watch that finds the machine quiet whenever asked (the real one probes the machine)."""

    def quiet_now(self, machine: str) -> bool:
        return True


def test_measuring_again_gives_every_attempt_a_process_number_of_its_own(tmp_path):
    """Two processes of a cell ran in slow spells; the first attempt to measure one again ran in a
    slow spell too and is not kept. Each attempt is a new worker process with a folder of its own
    (the second attempt reused the first's number: FileExistsError, `jitlab run pi` exit 3 in
    `make demo`), and the kept one is numbered by its place among the cell's processes."""
    rng = np.random.default_rng(5)
    state = state_with()
    for index, spell in enumerate([None, "busy", "busy"]):
        record(state, process(1.0, rng, **({"slow_spell": spell} if spell else {})), index, LOCAL)
    attempts = iter([process(1.3, rng, slow_spell="busy again"), process(1.0, rng), process(1.0, rng)])
    folders = []

    def attempt(state, index):
        folder = tmp_path / f"process-{index}"
        folder.mkdir()  # as the worker's folder is made: a number used twice raises
        folders.append(index)
        return Job(state, lambda: replace(next(attempts), process=index), ())

    measure_again([state], LocalDispatcher(), attempt, QuietWatch(), budget_s=60.0)
    assert folders == [3, 4]
    first, second = state.results[1], state.results[2]
    assert first.again == "it was measured again in a slow spell too" and first.replaced_by is None
    assert second.replaced_by == 3 and state.results[3].process == 3
    assert state.results[3].round == "again" and len(state.results) == 4
