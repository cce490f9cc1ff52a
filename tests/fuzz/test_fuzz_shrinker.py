"""The shrinker cuts a failing program down to what fails, and writes it as a pytest file.

The failure is planted: a stand-in for the JIT that swallows everything the program prints (a test
of the shrinker, run through the real oracle and real PyTorch), so a program fails exactly when
one of its calls prints."""

from __future__ import annotations

import builtins
import subprocess
import sys

from jitlab.fuzz.generator import generate
from jitlab.fuzz.oracle import compare, eager_method, run_program
from jitlab.fuzz.program import render
from jitlab.fuzz.reproducer import write_reproducer
from jitlab.fuzz.shrinker import ddmin, shrink, size


def swallow_prints(model):
    def call(*args, **kwargs):
        real = builtins.print
        builtins.print = lambda *a, **k: None
        try:
            return model(*args, **kwargs)
        finally:
            builtins.print = real

    return call, None


def test_ddmin_finds_a_one_minimal_subset():
    evaluated = []

    def fails(candidates):
        evaluated.append(len(candidates))
        return [{3, 7} <= set(c.body) for c in candidates]

    class Fake:  # ddmin only hands `build`'s result to `fails`
        def __init__(self, body):
            self.body = body

    assert ddmin(list(range(10)), Fake, fails) == [3, 7]
    assert evaluated  # it did judge candidates in rounds


def test_a_program_failing_on_print_shrinks_to_one_print(tmp_path):
    program = next(
        p
        for i in range(400)
        if "print" in (p := generate(4, i)).features and len(p.body) >= 5 and len(p.calls) >= 3
    )

    def fails(candidates):
        verdicts = []
        for candidate in candidates:
            source = render(candidate)
            reference = run_program(source, eager_method, tmp_path)
            verdict = compare(reference, run_program(source, swallow_prints, tmp_path))
            verdicts.append(verdict.status == "wrong" and verdict.aspect == "printed")
        return verdicts

    assert fails([program]) == [True]
    small = shrink(program, fails)
    assert fails([small]) == [True]
    assert len(small.body) == 1 and "print" in small.body[0].text, small.body
    assert len(small.calls) == 1 and not small.calls[0].changes
    assert size(small) == "1 statements, 1 calls, 0 changes"

    path = write_reproducer(tmp_path / "regressions", small, "eager", "call 1: printed ''", size(program))
    text = path.read_text()
    assert path.name.startswith("test_fuzz_jit_seed4_") and "PROGRAM = '''" in text
    # the reproducer is a normal pytest file: jitlab.jit prints as eager does, so it passes
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
