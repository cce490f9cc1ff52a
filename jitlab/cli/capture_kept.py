"""A capture's cases run with a progress bar, here or on a cluster, and what an interrupted
`jitlab capture` still reports: the cases that finished.

A capture of ParityBench runs for hours; a Ctrl-C in its fifth hour must not throw away four hours
of results. Every result is kept as it arrives (the harness's `on_result`). When the run is
interrupted, the tables and the JSON count only the cases whose every method finished (a case half
run would be counted with a method missing), the JSON says `"interrupted": true` and lists the
cases that did not finish, a line on stderr says how far the run got, and the command exits 130,
as an interrupted `jitlab run` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jitlab.capture.corpus import Case
from jitlab.cli import exit_codes
from jitlab.cli.app import current_machine, err_console, progress_bar, with_envelope

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster

Results = dict[tuple[str, str], dict[str, Any]]


class KeptResults:
    """Every (case, method) result by machine ("" on this one), and whether the run was interrupted."""

    def __init__(self) -> None:
        self.by_machine: dict[str, Results] = {}
        self.was_interrupted = False

    def add(self, machine: str, case: str, method: str, result: dict[str, Any]) -> None:
        self.by_machine.setdefault(machine, {})[(case, method)] = result

    def interrupted(self) -> dict[str, Results]:
        """The results kept so far, in place of those of a whole run (none yet: an empty report)."""
        self.was_interrupted = True
        return self.by_machine or {"": {}}

    def finished(self, cases: list[Case], methods: list[str], results: Results) -> list[Case]:
        """The cases to report: all of them after a whole run, those that finished after Ctrl-C."""
        if not self.was_interrupted:
            return cases
        from jitlab.capture.harness import finished_cases

        return finished_cases(cases, methods, results)

    def report(
        self,
        cases: list[Case],
        methods: list[str],
        build: Callable[[list[Case], Results], dict[str, Any]],
    ) -> Callable[[Results], dict[str, Any]]:
        """One machine's JSON report, `build(cases to report, results)`, marked when interrupted."""

        def make(results: Results) -> dict[str, Any]:
            done = self.finished(cases, methods, results)
            data = build(done, results)
            if self.was_interrupted:
                names = {case.name for case in done}
                data["interrupted"] = True
                data["unfinished"] = [case.name for case in cases if case.name not in names]
            return data

        return make

    def exit_code(self, cases: list[Case], methods: list[str]) -> int:
        """0 after a whole run; after Ctrl-C, 130 and a line on stderr saying what was kept."""
        if not self.was_interrupted:
            return exit_codes.OK
        counts = sorted(len(self.finished(cases, methods, r)) for r in self.by_machine.values()) or [0]
        done = str(counts[0]) if counts[0] == counts[-1] else f"{counts[0]} to {counts[-1]}"
        err_console.print(
            f"interrupted: {done} of {len(cases)} case(s) finished every method, and the results count "
            "those only; --json lists the others under `unfinished` (run them with --cases)",
            highlight=False,
        )
        return exit_codes.INTERRUPTED


def collect_results(
    title: str,
    cases: list[Case],
    methods: list[str],
    setup: Cluster | None,
    run_local: Callable[[Callable], dict],
    run_cluster: Callable[[Callable], dict],
    label: Callable[[str], str | None] = str,
) -> tuple[dict, KeptResults]:
    """Run the cases here (`run_local(on_result)`) or on the cluster (`run_cluster(on_result)`) with
    a progress bar; every result is kept as it arrives, so Ctrl-C still leaves what finished."""
    progress = progress_bar(title)
    machines = 1 if setup is None or setup.spread else len(setup.nodes)
    task = progress.add_task("", total=len(cases) * len(methods) * machines)
    kept = KeptResults()

    def finished(case: str, method: str, result: dict, machine: str = "") -> None:
        kept.add(machine, case, method, result)
        where = f"{machine}: " if machine else ""
        progress.update(task, advance=1, description=f"{where}{case} · {label(method)}")

    with progress:
        try:
            if setup is None:
                by_machine = {"": run_local(finished)}
            else:
                by_machine = run_cluster(
                    lambda machine, case, method, result: finished(case, method, result, machine)
                )
        except KeyboardInterrupt:
            by_machine = kept.interrupted()
    return by_machine, kept


def capture_json(
    kind: str,
    by_machine: dict[str, dict],
    make: Callable[[dict], dict],
    setup: Cluster | None,
) -> dict:
    """The `--json` document of a capture: one report, or on a cluster whose nodes each ran every case
    one report per machine under `by_machine` (keyed like the envelope's `machines`)."""
    if setup is None:
        return with_envelope(kind, make(by_machine[""]), machine=current_machine())
    machines = [setup.machines[node.node_id] for node in setup.nodes]
    if list(by_machine) == [""]:  # --spread: every case once, on whichever node was free
        data = make(by_machine[""])
    else:
        labels = {node.name: setup.label(node) for node in setup.nodes}
        data = {"by_machine": {labels.get(name, name): make(results) for name, results in by_machine.items()}}
    return with_envelope(kind, data, machine=current_machine(), machines=machines)
