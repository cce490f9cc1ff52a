"""`jitlab fuzz` end to end: the fixed-seed run of CI, bad input, and a crash or a hang that costs
only its own program."""

from __future__ import annotations

import json
from dataclasses import replace

from jitlab.fuzz.generator import generate
from jitlab.fuzz.program import Stmt
from jitlab.fuzz.runner import run_programs

#: feature classes left out of the CI run because of known, unfixed jitlab.jit bugs (see
#: tests/fuzz/regressions/): none at the moment
KNOWN_BUGS: list[str] = []


def test_two_hundred_programs_with_the_eager_backend_are_never_wrong(jitlab_cli, tmp_path):
    args = ["fuzz", "--programs", "200", "--seed", "0", "--json", "--reproducers", str(tmp_path / "repro")]
    if KNOWN_BUGS:
        args += ["--exclude", ",".join(KNOWN_BUGS)]
    done = jitlab_cli(*args, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["schema"] == "jitlab.fuzz/1"
    assert report["programs"] == 200
    assert (report["wrong"], report["crashed"], report["reproducers"]) == (0, 0, [])
    assert report["set_apart"] == {}  # every program ran eagerly and deterministically
    totals = report["totals"]
    assert totals["programs"] == 200 and totals["calls"] > 400
    # a fuzzer whose programs jitlab.jit refuses proves nothing: many run from captured graphs (94 of
    # these 200 since the grammar adds keys to outside dicts and sets; the last 10,000 run: 52%)
    assert totals["served"] == report["served_by_graphs"] > 80
    assert totals["captured"] > 150
    for feature in ("module", "function", "control_data", "print", "append", "closure", "exceptions"):
        assert report["per_feature"][feature]["programs"] > 0


def test_bad_input_is_one_line_and_exit_code_2(jitlab_cli):
    for args, words in [
        (["--programs", "0"], "--programs"),
        (["--exclude", "printing"], "unknown feature class printing"),
        (["--timeout", "-1"], "--timeout"),
    ]:
        done = jitlab_cli("fuzz", *args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], done.stderr
    done = jitlab_cli("fuzz", "--backend", "tvm")
    assert done.returncode == 2 and "tvm" in done.stderr


def test_a_crash_or_a_hang_costs_only_its_own_program():
    base = generate(0, 1)
    crash_def = (
        "CRASH",
        "import builtins, os, signal\n\nbuiltins._fuzz_loads = getattr(builtins, '_fuzz_loads', 0) + 1\n"
        "if builtins._fuzz_loads == 3:  # the two eager runs load the program, then jitlab.jit's\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)",
    )
    crashing = replace(base, defs=(*base.defs, crash_def), body=(Stmt("h = h * 1.0", (), ("CRASH",)),))
    hanging = replace(base, body=(Stmt("while True:\n    pass", ("loop",)),))
    programs = {"crash": crashing, "fine": base, "hang": hanging, "after": base}
    outcomes = run_programs(0, list(programs), ["jit"], "eager", 20.0, programs=programs)
    crash, hang = outcomes[("crash", "jit")], outcomes[("hang", "jit")]
    assert crash.status == "crashed" and "SIGSEGV" in crash.detail, crash
    assert hang.status == "eager_failed" and "no result after 20 s" in hang.detail, hang
    assert outcomes[("fine", "jit")].status == outcomes[("after", "jit")].status == "equal"


def test_the_verdict_line_says_whether_any_program_went_wrong():
    from jitlab.cli.fuzz_cmd import COLUMNS_LEGEND, verdict
    from jitlab.fuzz.oracle import LOOSE_ATOL, LOOSE_RTOL

    totals = dict.fromkeys(
        ("programs", "tolerance", "random", "unstable", "wrong", "crashed", "dynamo_wrong", "dynamo_crashed"),
        0,
    )
    ok = {"totals": {**totals, "programs": 20, "tolerance": 2}, "set_apart": {"nondeterministic": 1}}
    assert verdict(ok, False) == (
        "verdict: passed: jitlab.jit was never wrong and never crashed "
        "(20 program(s) judged, 1 set apart; 2 within tolerance, 0 random, 0 unstable)"
    )
    bad = {"totals": {**totals, "programs": 20, "wrong": 1, "dynamo_crashed": 3}, "set_apart": {}}
    assert verdict(bad, True).startswith("verdict: FAILED: jitlab.jit was wrong on 1 and crashed on 0")
    assert verdict(bad, True).endswith("TorchDynamo: 0 wrong, 3 crashed")
    assert (LOOSE_RTOL, LOOSE_ATOL) == (1e-4, 1e-5) and "rtol 1e-4, atol 1e-5" in COLUMNS_LEGEND
    for column in ("captured", "served", "fell back", "tolerance", "random", "unstable", "wrong", "crashed"):
        assert f"{column} = " in COLUMNS_LEGEND
