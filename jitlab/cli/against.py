"""`jitlab run NEW --against OLD`: two builds of the same workloads measured side by side.

Two runs of the same code measured minutes apart differ by as much as the machine's speed drifted
between them (up to 3.5% on the 2-core VM with 40 processes a cell), which hides a 5% regression.
asv's answer is to interleave the builds' rounds (`asv continuous`); jitlab's: both builds' cells
go into one plan, each NEW cell next to the same OLD cell in every round (`jitlab.engine.pairs`),
OLD's cells stored as a run of its own, and the comparison paired per round (`jitlab.stats.paired`).
"""

from __future__ import annotations

from collections.abc import Sequence

from jitlab.errors import UserError
from jitlab.workloads.api import Workload
from jitlab.workloads.registry import load_workloads


def check_against_options(resume: str | None, baseline: str | None, cluster: str | None) -> None:
    """What `--against` cannot be combined with, refused before anything is measured."""
    if resume is not None:
        raise UserError(
            "--against cannot resume a run: measure both builds again (`jitlab run NEW --against OLD`)"
        )
    if baseline is not None:
        raise UserError(
            "--against is the baseline of this run (its cells are measured beside this run's): drop --baseline"
        )
    if cluster is not None:
        raise UserError(
            "--against measures both builds side by side on this machine: drop --cluster (on a cluster, "
            "measure each build as a run and `jitlab compare` them)"
        )


def load_against(against: str, target: str, workloads: Sequence[Workload]) -> list[Workload]:
    """OLD's workloads that NEW also defines (by name); a `UserError` when there are none."""
    old = load_workloads(against)
    names = {w.name for w in workloads}
    common = [w for w in old if w.name in names]
    if not common:
        raise UserError(
            f"--against {against} defines no workload named as one of {target}'s "
            f"({', '.join(sorted(names))}; it has {', '.join(sorted(w.name for w in old))}): "
            "give the other build of the same workloads"
        )
    return common
