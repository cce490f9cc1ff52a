"""`jitlab` as the documentation examples run it in the tests: the real command line on a small
configuration, so every example can run in seconds.

For `jitlab run`: the sampling budget is 0.05 s per cell, every size is capped at 10^5 (10^3 when the
example gives none), and only fast backends run (python, numpy, torch: no compiler warm-up of
minutes, no Triton interpreter), keeping the example's own backends where any of them is fast.
`jitlab machine` measures in its quick mode. Everything else runs exactly as written.
"""

from __future__ import annotations

import sys

from jitlab.cli import main

FAST_BACKENDS = ("python", "numpy", "torch")
MAX_SIZE = 10**5


def _take(args: list[str], name: str) -> tuple[list[str], str | None]:
    """Remove `--name VALUE` / `--name=VALUE` from args; return the rest and the (last) value."""
    rest, value, i = [], None, 0
    while i < len(args):
        arg = args[i]
        if arg == name and i + 1 < len(args):
            value, i = args[i + 1], i + 2
            continue
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return rest, value


def small(argv: list[str]) -> list[str]:
    if not argv:
        return argv
    command = argv[0]
    if command == "machine" and "--quick" not in argv:
        return [*argv, "--quick"]
    if command != "run" or "--resume" in argv:
        return argv
    from jitlab.engine.plan import parse_sizes

    args, sizes = _take(argv, "--sizes")
    args, backends = _take(args, "--backends")
    args, _ = _take(args, "--budget")
    capped = sorted({min(n, MAX_SIZE) for n in parse_sizes(sizes)}) if sizes else [1000]
    named = [b for b in (backends or "").split(",") if b]
    chosen = [b for b in named if b in FAST_BACKENDS] or named or list(FAST_BACKENDS)
    if not named:  # the workload's own fast backends: the ones it implements among FAST_BACKENDS
        from jitlab.workloads.registry import load_workloads

        target = next(a for a in args[1:] if not a.startswith("-"))
        implemented = {b for w in load_workloads(target) for b in w.implementations}
        chosen = [b for b in FAST_BACKENDS if b in implemented] or sorted(implemented)
    return [*args, "--sizes", ",".join(map(str, capped)), "--backends", ",".join(chosen), "--budget", "0.05"]


if __name__ == "__main__":
    sys.exit(main(small(sys.argv[1:])))
