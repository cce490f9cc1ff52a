"""Kept probe answers: reused while the interpreter, the installed version and the device setup are
the same, asked again as soon as one of them changes."""

from __future__ import annotations

import json

import pytest

from jitlab.backends import get_backend
from jitlab.cli import main
from jitlab.engine.probe_cache import cache_path, cached_probe, keep_probes
from jitlab.engine.runner import probe_backend


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return cache_path()


def test_a_kept_probe_is_reused_only_under_the_same_key(cache, monkeypatch):
    numpy = get_backend("numpy")
    assert cached_probe(numpy) is None
    probe = probe_backend("numpy")
    assert probe["status"] == "ok"
    assert keep_probes({"numpy": (numpy, probe)}) is None and cache.exists()
    kept = cached_probe(numpy)
    assert kept["version"] == probe["version"] == numpy.version() and kept["probed_at"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # another device setup: ask again
    assert cached_probe(numpy) is None
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    data = json.loads(cache.read_text())
    (entry,) = data.values()
    entry["key"]["version"] = "0.0.1"  # kept when another version was installed: ask again
    cache.write_text(json.dumps(data))
    assert cached_probe(numpy) is None


def test_failed_probes_are_not_kept_and_an_unwritable_cache_says_why(cache, tmp_path):
    numpy = get_backend("numpy")
    assert keep_probes({"numpy": (numpy, {"status": "failed", "reason": "x"})}) is None
    assert cached_probe(numpy) is None
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "file" in keep_probes({"numpy": (numpy, {"status": "ok"})}, path=blocker / "backends.json")


@pytest.mark.slow
def test_backends_asks_then_reuses_the_answers(cache, capsys):
    assert main(["backends", "--refresh", "--json"]) == 0  # asks every backend, keeps the answers
    first = {r["backend"]: r for r in json.loads(capsys.readouterr().out)["backends"]}
    assert main(["backends", "--json"]) == 0
    second = {r["backend"]: r for r in json.loads(capsys.readouterr().out)["backends"]}
    for name, row in first.items():
        assert row["probed_at"] is None  # asked now
        assert second[name]["version"] == row["version"] and second[name]["devices"] == row["devices"]
        assert (second[name]["probed_at"] is not None) is row["available"]
