"""`jitlab capture --combine` of `--shapes`, `--generate` and `--train` reports: the zoo run in parts
(and models re-run after a fix) reported as one, the latest result of every model and method, with
the totals computed afresh. Reports of another mode or another experiment (backend, device,
optimizer, steps) are refused. The reports are written here, as a run saves them; the runs
themselves are tested in test_capture_zoo_modes.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jitlab_testing import one_line_error, run_jitlab

TOKENS = 160


def _generate_results(captures: int, per_token_s: float) -> dict:
    timed = {"error": None, "equal": True, "median_s": per_token_s * TOKENS, "per_token_s": per_token_s}
    return {
        "eager": {**timed, "tokens": TOKENS, "calls": ["prompt 8"], "per_token_s": 2 * per_token_s},
        "jitlab": {**timed, "captures": captures, "hits": 150, "fallback": False, "served": ["capture"]},
        "compile": {
            **timed,
            "graphs": 4,
            "per_token_s": 1.5 * per_token_s,
            "median_s": 1.5 * per_token_s * TOKENS,
        },
    }


def _write(tmp: Path, name: str, mode: str, models: dict[str, dict], **settings) -> Path:
    report = {
        "schema": f"jitlab.capture-{mode}/1",
        "mode": mode,
        "corpora": ["zoo/transformers_zoo.py"],
        "backend": "eager",
        "budget_s": 0.05,
        "torch": "2.13.0",
        **settings,
        "cases": [{"name": n, "tags": ["text"], "results": r} for n, r in models.items()],
        "totals": {},
    }
    path = tmp / name
    path.write_text(json.dumps(report))
    return path


def _combine(*args: str) -> dict:
    result = run_jitlab("capture", "--combine", *args, "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_parts_and_a_rerun_give_one_generate_report_with_fresh_totals(tmp_path):
    first = _write(
        tmp_path, "a.json", "generate", {"GPT2": _generate_results(4, 1e-3), "T5": _generate_results(8, 2e-3)}
    )
    rerun = _write(tmp_path, "b.json", "generate", {"T5": _generate_results(6, 2e-3), "OPT": _generate_results(4, 1e-3)}, budget_s=0.2)  # fmt: skip
    data = _combine(str(first), str(rerun))
    assert data["schema"].startswith("jitlab.capture-generate/") and data["mode"] == "generate"
    by_name = {c["name"]: c for c in data["cases"]}
    assert list(by_name) == ["GPT2", "T5", "OPT"]
    assert by_name["T5"]["results"]["jitlab"]["captures"] == 6  # the later report wins
    assert [s["budget_s"] for s in data["combined_from"]] == [0.05, 0.2]
    totals = data["totals"]
    assert totals["models"] == 3 and totals["jitlab"]["equal"] == 3 and totals["jitlab"]["max_graphs"] == 6
    assert totals["compile_over_jitlab"]["models"] == 3
    assert totals["compile_over_jitlab"]["geomean"] == pytest.approx(1.5)
    narrowed = _combine(str(first), str(rerun), "--cases", "T5")
    assert [c["name"] for c in narrowed["cases"]] == ["T5"] and narrowed["totals"]["models"] == 1


def test_a_model_missing_a_method_is_not_run_there(tmp_path):
    partial = _generate_results(4, 1e-3)
    del partial["compile"]
    data = _combine(str(_write(tmp_path, "a.json", "generate", {"GPT2": partial})))
    compile_result = data["cases"][0]["results"]["compile"]
    assert compile_result["not_run"] is True and compile_result["error"] == "not in the combined reports"


def test_the_tables_name_each_report(tmp_path):
    path = _write(tmp_path, "a.json", "generate", {"GPT2": _generate_results(4, 1e-3)}, device="cuda:0 (GPU)")
    result = run_jitlab("capture", "--combine", str(path), timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"{path}: 1 models" in result.stdout and "models on cuda:0 (GPU)" in result.stdout
    assert "GPT2" in result.stdout


def test_reports_of_other_modes_or_experiments_are_refused(tmp_path):
    models = {"GPT2": _generate_results(4, 1e-3)}
    generate = _write(tmp_path, "g.json", "generate", models)
    shapes = _write(tmp_path, "s.json", "shapes", models)
    inductor = _write(tmp_path, "i.json", "generate", models, backend="inductor")
    gpu = _write(tmp_path, "d.json", "generate", models, device="cuda:0 (NVIDIA H200)")
    train3 = _write(tmp_path, "t3.json", "train", {}, optimizer="adamw", steps=3)
    train5 = _write(tmp_path, "t5.json", "train", {}, optimizer="adamw", steps=5)
    speed = tmp_path / "speed.json"
    speed.write_text(json.dumps({"schema": "jitlab.capture-speed/1", "cases": []}))
    coverage = tmp_path / "coverage.json"
    coverage.write_text(json.dumps({"schema": "jitlab.capture/1", "cases": [], "methods": ["fx"]}))
    cases = [
        ((generate, shapes), "is a --shapes report"),
        ((generate, inductor), "ran with backend 'inductor'"),
        ((generate, gpu), "ran with device 'cuda:0 (NVIDIA H200)'"),
        ((train3, train5), "ran with steps 5"),
        ((generate, coverage), "not a --shapes, --generate or --train report"),
        ((coverage, generate), "combine the reports of one kind"),
        ((speed,), "is a speed report"),
        ((generate, "--methods", "jitlab"), "--methods does not apply"),
    ]
    for args, message in cases:
        result = run_jitlab("capture", "--combine", *map(str, args), timeout=120)
        assert message in one_line_error(result), (args, result.stderr)
