"""The workload of the cluster benchmark: 100 cells (sizes 1..100) whose measurement is short, so a
cell's length is its worker process plus about 50 ms of timing (run it with --budget 0.05).

    jitlab run benchmarks/cluster_sweep.py --backends python --budget 0.05 --no-plot
"""

import jitlab


def _make_inputs(case):
    return (case.size,)


tick = jitlab.Workload("tick", sizes=list(range(1, 101)), inputs=_make_inputs, reference=None, seeds=1)


@tick.implement("python")
def _python(ctx):
    (n,) = ctx.inputs(0)
    return lambda seed: sum(range(n * 100))
