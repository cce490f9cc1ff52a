"""Found by the fuzzer's oracle (its sample program, tests/fuzz/test_fuzz_oracle.py), then shrunk by
hand: a call captured with symbolic sizes that raised left a `DataInt` (jitlab.jit's int subclass for
sizes kept in the graph) in the outside list it had appended `x.shape[0]` to, where eager code leaves
a plain int. Fixed in jitlab/jit/frontend/driver.py: outside writes become plain ints on the exception path
too, as after a call that returns."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = """\
import torch

LOG = []


def target(x, n=2):
    LOG.append(x.shape[0])
    if n > 5:
        raise ValueError("n too big")
    return x * 2.0


def make():
    return target


def setup_0(model):
    return (torch.ones(2, 3),), {}


def setup_1(model):
    return (torch.ones(3, 3), 7), {}


CALLS = [setup_0, setup_1]
"""


def test_fuzz_jit_dataint_left_in_outside_list_after_raise(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status == "equal", verdict.detail
