"""Would the busy rounds of `jitlab run NEW --against OLD` support a paired verdict? For every pair
of side-by-side runs in a store (one cell each), over the rounds in which either build ran busy:

- how long each build waited for a CPU (median wait share of its processes);
- the paired change of wall time over those rounds (interval, the spread of a round's log ratio,
  and the verdict `paired_verdict` would give), and of CPU time where the cells have it;
- how much of a round's log ratio is the load: its correlation with log((1 - w_old) / (1 - w_new)),
  what the two processes' different waits alone would make of it;
- over the rounds quiet for both builds that followed a slow drift-canary reading (which the
  pairing keeps: `jitlab.stats.quiet_rounds`), the paired change and its spread
  (`wall_after_slow_canary`), and over the quiet rounds without and with them;
- `would_stop`: replayed round by round through the busy-machine stop rule
  (`jitlab.stats.quiet_rounds`) with a budget of BUDGET rounds, the round at which the pair would
  have stopped, the quiet rounds it had and the quiet rounds it needed (None: it would not stop).

    python benchmarks/busy_rounds.py STORE [BUDGET]

`jitlab` leaves busy rounds out of a pair (`jitlab.engine.pairs`); this prints the evidence for or
against that, one JSON line per pair.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from jitlab.compare.paired import round_medians
from jitlab.engine.load import BUSY_SHARE
from jitlab.stats.comparison import paired_verdict
from jitlab.stats.paired import common_rounds, paired_change
from jitlab.stats.quiet_rounds import forecast
from jitlab.store import CellRecord, Store


def per_round(cell: CellRecord, values: tuple[float, ...]) -> tuple[dict[int, float], dict[int, float]]:
    """({round: median of `values` of its process}, {round: that process's wait share})."""
    index, array = np.asarray(cell.sample_process), np.asarray(values)
    medians, waits = {}, {}
    for k, details in enumerate(cell.process_details):
        picked = array[index == details.get("process", k)]
        if type(details.get("round")) is int and picked.size:
            medians[details["round"]] = float(np.median(picked))
            waits[details["round"]] = float((details.get("load") or {}).get("wait_share") or 0.0)
    return medians, waits


def change_over(a: dict[int, float], b: dict[int, float], rounds: list[int]) -> str | None:
    change = paired_change({k: a[k] for k in rounds}, {k: b[k] for k in rounds})
    if change is None:
        return None
    verdict, *_ = paired_verdict(change, 60, 60)
    spread = float(np.std(change.log_ratios, ddof=1))
    return f"{change.ratio:.4f} [{change.ci_low:.4f}, {change.ci_high:.4f}], round spread {spread:.1%}: {verdict}"


def quiet_medians(cell: CellRecord) -> dict[int, float]:
    """{round: median} of the rounds the busy-machine stop rule counts (those whose process did not
    run busy), as `jitlab.engine.pairs.busy_stop` sees them while the rounds go on."""
    return round_medians(cell, quiet_only=True)


def would_stop(old: CellRecord, new: CellRecord, rounds: int, budget: int) -> list[float] | None:
    """[round, quiet rounds, quiet rounds needed] where the stop rule would have stopped the pair."""
    quiet_a, quiet_b = quiet_medians(old), quiet_medians(new)
    for count in range(3, rounds):
        counted = [k for k in common_rounds(quiet_a, quiet_b) if k < count]
        outlook = forecast([float(np.log(quiet_b[k] / quiet_a[k])) for k in counted], count, budget)
        if outlook.hopeless:
            return [count, len(counted), outlook.needed]
    return None


def pair_figures(store: Store, old_run: int, new_run: int, target: str, budget: int) -> dict[str, Any]:
    (old,) = store.cells(old_run)
    (new,) = store.cells(new_run)
    wall_a, waits_a = per_round(old, old.samples_s)
    wall_b, waits_b = per_round(new, new.samples_s)
    rounds = sorted(set(wall_a) & set(wall_b))
    busy = [k for k in rounds if max(waits_a[k], waits_b[k]) > BUSY_SHARE]
    row: dict[str, Any] = {
        "runs": [old_run, new_run],
        "new": target,
        "rounds": len(rounds),
        "busy": len(busy),
        "wait_old": round(float(np.median([waits_a[k] for k in rounds])), 3),
        "wait_new": round(float(np.median([waits_b[k] for k in rounds])), 3),
        "wall_busy": change_over(wall_a, wall_b, busy),
    }
    if old.cpu_samples_s and new.cpu_samples_s:
        cpu_a, _ = per_round(old, old.cpu_samples_s)
        cpu_b, _ = per_round(new, new.cpu_samples_s)
        row["cpu_busy"] = change_over(cpu_a, cpu_b, busy)
    if len(busy) > 3:
        logs = [np.log(wall_b[k] / wall_a[k]) for k in busy]
        load = [np.log((1 - waits_a[k]) / (1 - waits_b[k])) for k in busy]
        row["load_correlation"] = round(float(np.corrcoef(logs, load)[0, 1]), 2)
    row["would_stop"] = would_stop(old, new, len(rounds), budget)
    # rounds quiet for both builds but after a slow canary reading: what the pairing keeps of them
    quiet = set(rounds) - set(busy)
    after_slow = sorted(k for k in quiet if _canary_slow(old, k) or _canary_slow(new, k))
    row["quiet_after_slow_canary"] = len(after_slow)
    row["wall_after_slow_canary"] = change_over(wall_a, wall_b, after_slow)
    row["wall_quiet_without_them"] = change_over(wall_a, wall_b, sorted(quiet - set(after_slow)))
    row["wall_quiet"] = change_over(wall_a, wall_b, sorted(quiet))
    return row


def _canary_slow(cell: CellRecord, round_index: int) -> bool:
    """The process of this round followed a slow drift-canary reading (`jitlab.engine.slow_spells`)."""
    return any(
        d.get("round") == round_index and "drift canary" in (d.get("slow_spell") or "")
        for d in cell.process_details
    )


def main(path: str, budget: int) -> None:
    store = Store(path)
    pairs: dict[str, list[Any]] = {}
    for run in store.runs():
        if run.pair_id:
            pairs.setdefault(run.pair_id, []).append(run)
    for runs in pairs.values():
        old, new = sorted(runs, key=lambda r: r.run_id)
        print(json.dumps(pair_figures(store, old.run_id, new.run_id, new.target.rsplit("/", 1)[-1], budget)))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 80)
