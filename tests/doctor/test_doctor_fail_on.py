"""`jitlab doctor --fail-on LEVEL`: a CI gate on the doctor's findings (exit 1), by level or kind."""

from __future__ import annotations

import json

import pytest
from doctor_helpers import program

from jitlab.cli import main
from jitlab.doctor.severity import LEVELS, SEVERITY, at_least

MISC = program("misc.py")
# print_in_loop synchronises inside a loop: one finding, a `blocking-in-loop` (warning) whose cause is
# the print (a `sync`, info)
TARGET = [f"{MISC}:print_in_loop", "--inputs", "vector", "--checks", "sync,loops"]


def test_every_finding_kind_has_a_level():
    from jitlab.doctor.findings import KINDS

    assert set(SEVERITY) == set(KINDS) and set(SEVERITY.values()) <= set(LEVELS)
    assert at_least("compile-error", "warning") and not at_least("sync", "warning")


@pytest.mark.parametrize(
    "fail_on, expected",
    [
        ("error", 0),
        ("warning", 1),
        ("info", 1),
        ("blocking-in-loop", 1),
        ("sync", 1),  # the kind of a view counts too
        ("graph-break,recompile", 0),
    ],
)
def test_fail_on_exit_code(capsys, fail_on, expected):
    code = main(["doctor", *TARGET, "--fail-on", fail_on, "--json"])
    captured = capsys.readouterr()
    assert code == expected, captured.err
    data = json.loads(captured.out)
    assert data["schema"] == "jitlab.doctor/1" and data["machine"]["fingerprint"]
    assert [(f["kind"], f["severity"]) for f in data["findings"]] == [("blocking-in-loop", "warning")]
    assert data["findings"][0]["cause"] == "sync"
    assert [v["kind"] for v in data["findings"][0]["views"]] == ["blocking-in-loop"]
    assert data["gate"]["passed"] is (expected == 0)
    if expected:
        assert f"--fail-on {fail_on}" in captured.err


def test_without_fail_on_findings_exit_0_and_unknown_level_is_bad_input(capsys):
    assert main(["doctor", *TARGET]) == 0
    capsys.readouterr()
    assert main(["doctor", *TARGET, "--fail-on", "severe"]) == 2
    err = capsys.readouterr().err
    assert (
        "--fail-on 'severe'" in err and "info, warning, error" in err and len(err.strip().splitlines()) == 1
    )
