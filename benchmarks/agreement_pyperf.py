"""The pyperf side of `agreement.py`: the same three functions under `pyperf.Runner.bench_func`.

pyperf re-runs this script in its worker processes; `agreement.py` runs it and reads its JSON output.
"""

import pyperf
import torch
from agreement import FUNCTIONS

torch.set_num_threads(1)
runner = pyperf.Runner()
for label, (fn, build, _, _) in FUNCTIONS.items():
    runner.bench_func(label, fn, *build())
