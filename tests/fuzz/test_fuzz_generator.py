"""The program generator: deterministic per seed, valid Python, and programs that run eagerly."""

from __future__ import annotations

import subprocess
import sys

from jitlab.fuzz.generator import FEATURE_CLASSES, generate
from jitlab.fuzz.oracle import eager_method, run_program
from jitlab.fuzz.program import Program, render


def test_same_seed_same_program_in_another_process():
    here = [render(generate(11, i)) for i in range(5)]
    code = "from jitlab.fuzz.generator import generate; from jitlab.fuzz.program import render\n"
    code += "import sys; sys.stdout.write('\\x00'.join(render(generate(11, i)) for i in range(5)))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert there.split("\x00") == here
    assert render(generate(12, 0)) != here[0]
    assert len(set(here)) == 5


def test_programs_compile_and_cover_every_feature_class():
    seen: set[str] = set()
    for index in range(300):
        program = generate(3, index)
        compile(render(program), f"program{index}.py", "exec")
        seen |= program.features
    assert seen == set(FEATURE_CLASSES)


def test_programs_run_eagerly_raising_only_their_planted_exceptions(tmp_path):
    raised = 0
    for index in range(60):
        run = run_program(render(generate(5, index)), eager_method, tmp_path)
        for call in run.calls:
            if call.error:
                raised += 1
                assert call.error[0] == "RuntimeError" and "failing on purpose" in call.error[1], call.error
    assert len(run.calls) >= 2


def test_excluded_features_are_left_out_and_json_round_trips():
    for index in range(50):
        program = generate(9, index, exclude=["print", "random", "autograd"])
        assert not program.features & {"print", "random", "autograd"}
        assert Program.from_json(program.to_json()) == program
