"""`jitlab doctor` on the command line: JSON shape, the trace, bad input, the user's exceptions."""

from __future__ import annotations

import json

from doctor_helpers import line_of, program

from jitlab.cli import main

SAMPLER = program("sampler.py")
REGIMES = program("regimes.py")
MISC = program("misc.py")


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["doctor", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_shape(capsys, peaks_env):
    code, out, _ = run(capsys, f"{REGIMES}:matrix_product", "--inputs", "matmul_inputs", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["target"] == f"{REGIMES}:matrix_product"
    assert data["graph"]["graph_count"] == 1
    assert isinstance(data["findings"], list)
    for finding in data["findings"]:
        assert set(finding) == {
            "kind",
            "location",
            "detail",
            "suggestion",
            "count",
            "views",
            "cause",
            "severity",
        }
    regime = data["regime"]
    assert regime["verdict"] in ("overhead", "bandwidth", "compute")
    assert set(regime["shares"]) == {"overhead", "bandwidth", "compute"}
    for key in ("flops", "bytes", "time_s", "scaling"):
        assert key in regime
    assert regime["scaling"]["input_scale"] == 2


def test_json_findings_of_the_naive_sampler(capsys):
    code, out, _ = run(
        capsys, f"{SAMPLER}:naive_sample", "--inputs", "make_labels", "--json", "--checks", "sync"
    )
    assert code == 0
    data = json.loads(out)
    assert data["regime"] is None
    line = line_of(SAMPLER, "nonzero-positives")
    (found,) = [f for f in data["findings"] if f["location"].endswith(f"sampler.py:{line}")]
    assert found["kind"] == "data-dependent-shape" and "nonzero" in found["detail"]
    assert [v["kind"] for v in found["views"]] == ["sync"]  # one finding per line, the sync its view


def test_prints_of_the_user_code_stay_off_json_stdout(capsys):
    code, out, err = run(
        capsys, f"{MISC}:print_in_loop", "--inputs", "vector", "--json", "--checks", "sync,loops"
    )
    assert code == 0
    data = json.loads(out)  # the program's prints went to stderr
    assert "step 0" in err
    (found,) = data["findings"]  # the print line, once: a sync in a loop
    assert found["kind"] == "blocking-in-loop" and found["cause"] == "sync"  # the cause: a print
    assert "printing" in found["detail"] or "formatting" in found["detail"]
    assert [v["kind"] for v in found["views"]] == ["blocking-in-loop"]


def test_trace_is_a_chrome_trace(capsys, tmp_path):
    trace = tmp_path / "trace.json"
    code, out, _ = run(
        capsys,
        f"{SAMPLER}:static_sample",
        "--inputs",
        "make_labels",
        "--checks",
        "sync",
        "--trace",
        str(trace),
    )
    assert code == 0
    events = json.loads(trace.read_text())["traceEvents"]
    assert any("topk" in str(event.get("name", "")) for event in events)
    assert str(trace) in out.replace("\n", "")


def test_terminal_report(capsys):
    code, out, _ = run(capsys, f"{SAMPLER}:naive_sample", "--inputs", "make_labels", "--checks", "sync,loops")
    assert code == 0
    assert "data-dependent-shape" in out and "sampler.py:" in out and "topk" in out


def _one_line_error(capsys, *args: str) -> str:
    code, out, err = run(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert "does not exist" in _one_line_error(capsys, program("missing.py") + ":f")
    assert "has no attribute 'nope'" in _one_line_error(capsys, f"{MISC}:nope")
    assert "not callable" in _one_line_error(capsys, f"{MISC}:NOT_A_FUNCTION")
    assert "names no function" in _one_line_error(capsys, MISC)
    assert "not found" in _one_line_error(capsys, "no_such_package_here.module:f")
    message = _one_line_error(capsys, f"{MISC}:vector", "--inputs", "broken_inputs")
    assert "RuntimeError: cannot build the inputs" in message and "misc.py:" in message
    assert "(args, kwargs)" in _one_line_error(capsys, f"{MISC}:vector", "--inputs", "wrong_inputs")
    assert "unknown check" in _one_line_error(capsys, f"{MISC}:vector", "--checks", "bogus")


def test_user_exception_shows_the_users_traceback(capsys):
    code, out, err = run(capsys, f"{MISC}:raises", "--inputs", "vector")
    assert code == 2
    assert "ValueError: the user's own bug" in err
    assert f'misc.py", line {line_of(MISC, "raise")}, in helper_that_fails' in err
    assert "jitlab/doctor" not in err and "jitlab/cli" not in err
