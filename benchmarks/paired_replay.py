"""Replay the stored rounds of side-by-side pairs through `jitlab run --against`'s stopping rule, with
the per-round mean trimmed by TRIM (0: the plain mean; jitlab uses `jitlab.stats.paired.TRIM`). For
every pair of a `benchmarks/loaded_verdicts.py wall-paired` run: the verdict the pair would have
stopped on, after how many of its quiet rounds, and its change; one JSON line per pair.

    python benchmarks/paired_replay.py DIR/wall-paired.json DIR/verdicts.sqlite [TRIM ...]

The rounds are replayed in the order they were measured, as the run looked at them. A pair whose
stored rounds end before the replayed rule decides is marked "data ended" (the recorded run stopped
earlier, on its own rule).
"""

from __future__ import annotations

import json
import sys

import numpy as np

import jitlab.stats.paired as paired
from jitlab.compare.paired import round_medians
from jitlab.engine.pairs import settled
from jitlab.stats.comparison import paired_verdict
from jitlab.store import Store

#: what `jitlab run --against` takes without --processes: a target of ±2%, up to 80 rounds
TARGET_CI, MAX_ROUNDS = 0.02, 80
#: samples per build (they only shape the verdict's wording)
SAMPLES = (100, 100)


def replay(logs: list[float]) -> tuple[int, str, paired.PairedChange]:
    """(rounds, verdict, change) at which the rule of `jitlab.engine.pairs` stops on these rounds."""
    old = {k: 1.0 for k in range(len(logs))}
    new = {k: float(np.exp(v)) for k, v in enumerate(logs)}
    for n in range(paired.MIN_PAIRED_ROUNDS, len(logs) + 1):
        medians_old = {k: old[k] for k in range(n)}
        medians_new = {k: new[k] for k in range(n)}
        if settled(medians_old, medians_new, SAMPLES, TARGET_CI, MAX_ROUNDS):
            change = paired.paired_change(medians_old, medians_new)
            return n, paired_verdict(change, *SAMPLES)[0], change
    change = paired.paired_change(old, new)
    ended = "" if len(logs) >= MAX_ROUNDS else " (data ended)"
    return len(logs), paired_verdict(change, *SAMPLES)[0] + ended, change


def main() -> None:
    checks = json.load(open(sys.argv[1]))["checks"]
    store = Store(sys.argv[2], create=False)
    trims = [float(t) for t in sys.argv[3:]] or [0.0, paired.TRIM]
    for trim in trims:
        paired.TRIM = trim
        for check in checks:
            for pair in check["details"]:
                old, new = store.cells(pair["a"])[0], store.cells(pair["b"])[0]
                quiet_old, quiet_new = (
                    round_medians(old, quiet_only=True),
                    round_medians(new, quiet_only=True),
                )
                rounds = paired.common_rounds(quiet_old, quiet_new)
                logs = [float(np.log(quiet_new[k] / quiet_old[k])) for k in rounds]
                n, verdict, change = replay(logs)
                print(json.dumps({
                    "trim": trim, "check": check["name"], "recorded": pair["verdict"], "replayed": verdict,
                    "after_rounds": n, "ratio": round(change.ratio, 4),
                    "ci95": [round(change.ci_low, 4), round(change.ci_high, 4)],
                }))  # fmt: skip


if __name__ == "__main__":
    main()
