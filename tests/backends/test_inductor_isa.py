"""A torch-compile cell's fresh Inductor cache starts with the machine's probe of the CPU's vector
instructions, and Inductor really uses it: it builds no probe program of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jitlab.backends import get_backend
from jitlab.backends.inductor_isa import ensure_probe, probe_folder

_LIST_ISAS = "from torch._inductor import cpu_vec_isa; print(len(cpu_vec_isa.valid_vec_isa_list()))"


def _builds(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*.so")}


def _isas_with_cache(cache: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _LIST_ISAS],
        env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return int(done.stdout.strip())


def test_a_cell_scratch_is_seeded_with_the_probe_and_inductor_builds_nothing(tmp_path):
    probe = ensure_probe()
    assert probe is not None and probe.parent == probe_folder()
    assert (probe_folder() / "done").exists()
    probe_builds = _builds(probe)
    assert probe_builds, "the probe made no builds"

    scratch = tmp_path / "cell"
    scratch.mkdir()
    get_backend("torch-compile").seed_scratch(str(scratch))
    cache = scratch / "inductor"
    assert _builds(cache) == probe_builds
    assert not (cache / "locks").exists() or not any((cache / "locks").iterdir())

    # Inductor finds its answer in the seeded cache: no build of its own is added to it
    seeded_isas = _isas_with_cache(cache)
    assert _builds(cache) == probe_builds
    # and the answer is the one an empty cache gives
    assert seeded_isas == _isas_with_cache(tmp_path / "empty")
    assert _builds(tmp_path / "empty") == probe_builds  # same builds, same keys


def test_other_backends_leave_the_scratch_empty(tmp_path):
    get_backend("numpy").seed_scratch(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
