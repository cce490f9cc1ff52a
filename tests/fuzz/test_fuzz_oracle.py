"""The oracle: eager against eager is exact (the generator is deterministic), and a planted difference
in what a "jit" stand-in does (a printed line, an outside list, an output, an exception) is found.

The stand-ins below are deliberately wrong callables around the real program; they test the oracle,
they do not replace any framework."""

from __future__ import annotations

import builtins

import torch

from jitlab.fuzz.generator import generate
from jitlab.fuzz.oracle import check_source, compare, eager_method, jit_method, run_program
from jitlab.fuzz.program import render

SOURCE = """
import torch

W = 3
LOG = []


def target(x, n=2):
    h = x * 2.0
    print("rows", h.shape[0])
    LOG.append(h.shape[0])
    if n > 5:
        raise ValueError("n too big")
    return h


def make():
    return target


def setup_0(model):
    return (torch.ones(2, W),), {}


def setup_1(model):
    return (torch.ones(3, W), 7), {}


CALLS = [setup_0, setup_1]
"""


def test_eager_against_eager_is_exact(tmp_path):
    for index in range(40):
        source = render(generate(21, index))
        first = run_program(source, eager_method, tmp_path)
        second = run_program(source, eager_method, tmp_path)
        assert compare(first, second).status == "equal", index


def _wrong(change):
    def method(model):
        def call(*args, **kwargs):
            return change(model, *args, **kwargs)

        return call, None

    return method


def test_planted_differences_are_found(tmp_path):
    reference = run_program(SOURCE, eager_method, tmp_path)
    assert [c.error for c in reference.calls] == [None, ("ValueError", "n too big")]

    def silent(model, *args, **kwargs):  # drops the printed line
        real_print = builtins.print
        builtins.print = lambda *a, **k: None
        try:
            return model(*args, **kwargs)
        finally:
            builtins.print = real_print

    def extra_append(model, *args, **kwargs):  # one append too many to an outside list
        out = model(*args, **kwargs)
        model.__globals__["LOG"].append(0)
        return out

    def off_output(model, *args, **kwargs):
        return model(*args, **kwargs) + 1e-3

    def near_output(model, *args, **kwargs):
        return model(*args, **kwargs) * (1 + 1e-7)

    def never_raises(model, x, n=2):
        return model(x)

    def raises(model, *args, **kwargs):
        raise RuntimeError("internal error")

    verdicts = {
        name: compare(reference, run_program(SOURCE, _wrong(change), tmp_path))
        for name, change in [
            ("silent", silent),
            ("extra_append", extra_append),
            ("off_output", off_output),
            ("near_output", near_output),
            ("never_raises", never_raises),
            ("raises", raises),
        ]
    }
    assert (verdicts["silent"].status, verdicts["silent"].aspect) == ("wrong", "printed")
    assert (verdicts["extra_append"].status, verdicts["extra_append"].aspect) == ("wrong", "state")
    assert "LOG" in verdicts["extra_append"].detail
    assert (verdicts["off_output"].status, verdicts["off_output"].aspect) == ("wrong", "output")
    assert verdicts["near_output"].status == "tolerance"
    assert (verdicts["never_raises"].status, verdicts["never_raises"].aspect) == ("wrong", "exception")
    assert verdicts["raises"].status == "crashed"


def test_jitlab_jit_matches_eager_on_the_sample_program(tmp_path):
    assert check_source(SOURCE, backend="eager", workdir=tmp_path).status == "equal"
    run = run_program(SOURCE, jit_method("eager"), tmp_path)
    assert run.stats is not None and run.stats["captures"] >= 1


def test_module_state_and_gradients_are_compared(tmp_path):
    source = render(next(p for i in range(200) if (p := generate(2, i)).kind == "module" and p.train))
    reference = run_program(source, eager_method, tmp_path)
    assert any(key.endswith(".grad") for key in reference.calls[-1].state)

    def nudged(model):  # changes a parameter after each call: a state difference
        def call(*args, **kwargs):
            out = model(*args, **kwargs)
            with torch.no_grad():
                next(model.parameters()).add_(1.0)
            return out

        return call, None

    verdict = compare(reference, run_program(source, nudged, tmp_path))
    assert verdict.status == "wrong" and verdict.aspect == "state"


HOOKED_SOURCE = """
import torch

W = 3
PW = torch.nn.Parameter(torch.ones(W, W))
HOOKS = [PW.register_hook(lambda g: g * 0.5)]


def target(x):
    loss = (x @ PW).sum()
    loss.backward()
    return loss.detach()


def make():
    return target


def setup_0(model):
    return (torch.ones(2, W),), {}


def setup_1(model):
    return (torch.ones(2, W),), {}


CALLS = [setup_0, setup_1]
"""


def test_hook_handles_are_compared_by_whether_their_hook_is_registered(tmp_path):
    # a program's list of hook handles is outside state; the handles hold weak references that are
    # dead by the time the runs are compared, so they are compared by what a user could see
    reference = run_program(HOOKED_SOURCE, eager_method, tmp_path)
    assert reference.calls[-1].state["HOOKS"] == [{"<hook handle>": True}]
    assert compare(reference, run_program(HOOKED_SOURCE, eager_method, tmp_path)).status == "equal"

    def unhooking(model):  # removes the hook after the first call: a state and gradient difference
        def call(*args, **kwargs):
            out = model(*args, **kwargs)
            model.__globals__["HOOKS"][0].remove()
            return out

        return call, None

    verdict = compare(reference, run_program(HOOKED_SOURCE, unhooking, tmp_path))
    assert verdict.status == "wrong" and verdict.aspect == "state"
    assert "HOOKS" in verdict.detail or "PW" in verdict.detail


GENERATOR_SOURCE = """
import torch

W = 3
GEN = torch.Generator().manual_seed(1)


def target(x, **options):
    return x + torch.rand(x.shape, generator=options["gen"])


def make():
    return target


def setup_0(model):
    return (torch.ones(2, W),), {"gen": GEN}


CALLS = [setup_0, setup_0]
"""


def test_generators_are_compared_by_their_state(tmp_path):
    # each run makes its own generators (the objects always differ), and where a call leaves one
    # is what a user could see: a stand-in that draws once more is wrong
    reference = run_program(GENERATOR_SOURCE, eager_method, tmp_path)
    assert reference.calls[0].state["GEN"]["<generator>"] == "cpu"
    assert compare(reference, run_program(GENERATOR_SOURCE, eager_method, tmp_path)).status == "equal"

    def draws_more(model, *args, **kwargs):
        out = model(*args, **kwargs)
        torch.rand(1, generator=kwargs["gen"])
        return out

    verdict = compare(reference, run_program(GENERATOR_SOURCE, _wrong(draws_more), tmp_path))
    assert verdict.status == "wrong" and verdict.aspect in ("inputs", "state"), verdict
    assert "['state']" in verdict.detail  # the generator passed in (and GEN, the same object)
