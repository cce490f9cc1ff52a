"""jitlab installed from its wheel with any single extra, or none: every command ends with exit 0, or
with exit 2 and one line naming what to install; never with exit 3 (a crash).

Every other test runs where everything is installed, so a module-level `import torch` in a command
every user runs goes unnoticed there. Here each venv is new (`python -m venv`, no system
site-packages) and gets the wheel through pip and constraints.txt, so it holds the base
dependencies and that extra's, nothing else; the test checks that too.

The extras come from pyproject.toml, so a new extra is tested without editing this file. The
suite installs the base alone and with numba (the case of the original crash: a backend listed
while torch is missing); `JITLAB_EXTRAS_TESTED=all` installs every extra (64 minutes on a 2-core
machine under a load of 10-25, the torch, triton and tensorflow venvs the longest), or
`JITLAB_EXTRAS_TESTED=,torch` names some ("" is the base). `JITLAB_EXTRAS_PYTHON=PATH` builds the
venvs from another interpreter; `make test-extras` runs every extra on 3.11, 3.12 and 3.13.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from jitlab_testing import REPO, build_wheel

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: extras that bundle others, or tools for jitlab's own tests: not a subset a user picks for a backend
BUNDLES = {"all", "test"}
EXTRAS = [e for e in PYPROJECT["project"]["optional-dependencies"] if e not in BUNDLES]
#: what each extra makes importable (checked in its venv), and what must then not be importable
MODULES = {
    "numba": ["numba"],
    "jax": ["jax", "jaxlib"],
    "tensorflow": ["tensorflow"],
    "torch": ["torch"],
    "triton": ["triton", "torch"],
    "notebook": ["pandas"],
    "cluster": ["ray"],
    "postgres": ["psycopg"],
    "bench": ["pyperf", "torch"],
    # timm and torchvision too on Python 3.12+ (pyproject.toml says why they are left out on 3.11)
    "zoo": ["torch", "transformers"],
}
OPTIONAL = sorted({m for modules in MODULES.values() for m in modules})

PROGRAM = """\
import torch


def double(x):
    return x * 2


def make_inputs(scale=1):
    return (torch.ones(8 * scale),), {}
"""

CORPUS = """\
import torch

from jitlab.capture import Corpus

CORPUS = Corpus()


@CORPUS.case("add_one", inputs=lambda: ((torch.ones(3),), {}))
def add_one():
    return lambda x: x + 1
"""


def chosen_extras() -> list[str]:
    names = os.environ.get("JITLAB_EXTRAS_TESTED")
    if names is None:
        return ["", "numba"]
    if names.strip() == "all":
        return ["", *EXTRAS]
    picked = [n.strip() for n in names.split(",")]
    unknown = [n for n in picked if n and n not in EXTRAS]
    if unknown:
        raise ValueError(f"JITLAB_EXTRAS_TESTED names unknown extras {unknown}: choose from {EXTRAS}")
    return picked


def test_every_extra_of_pyproject_is_known_here():
    assert sorted(EXTRAS) == sorted(MODULES), "a new extra: say in MODULES what it makes importable"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def interpreter() -> str:
    return os.environ.get("JITLAB_EXTRAS_PYTHON") or sys.executable


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a user's shell: nothing pointing back at this checkout or its venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("JITLAB_")
    }
    env["JITLAB_STORE"] = str(home / "results.sqlite")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return env


def make_venv(where: Path, wheel: Path, extra: str, env: dict[str, str]) -> Path:
    subprocess.run([interpreter(), "-m", "venv", str(where)], check=True, env=env, timeout=300)
    python = where / "bin" / "python"
    target = f"{wheel}[{extra}]" if extra else str(wheel)
    # --no-compile: bytecode is written on first import instead (pip compiles one file at a time)
    done = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            "-c",
            str(REPO / "constraints.txt"),
            target,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, f"pip install {target} failed:\n{done.stderr[-3000:]}"
    return python


def importable(python: Path, env: dict[str, str]) -> set[str]:
    code = (
        "import importlib.util, json, sys; "
        f"print(json.dumps([m for m in {OPTIONAL!r} if importlib.util.find_spec(m)]))"
    )
    done = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def jitlab(python: Path, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python.parent / "jitlab"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def assert_ok_or_install_line(done: subprocess.CompletedProcess, command: str, needs: str | None) -> None:
    """Exit 0, or (when `needs` names a missing extra) exit 2 with one line naming its install."""
    shown = f"`jitlab {command}` exit {done.returncode}\nstdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert done.returncode != 3, f"crash: {shown}"
    if needs is None:
        assert done.returncode == 0, shown
        return
    assert done.returncode == 2, shown
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"not one line: {shown}"
    assert "pip install" in lines[0] and f"jitlab[{needs}]" in lines[0], shown


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("extra", chosen_extras(), ids=lambda e: e or "base")
def test_every_command_works_with_only_this_extra(extra, wheel, tmp_path):
    home = tmp_path / "work"
    home.mkdir()
    env = clean_env(home)
    python = make_venv(tmp_path / "venv", wheel, extra, env)
    try:
        present = importable(python, env)
        assert present >= set(MODULES.get(extra, [])), f"jitlab[{extra}] did not install {MODULES[extra]}"
        if not extra:
            assert present == set(), f"the base install brought optional frameworks: {present}"
        has_torch = "torch" in present

        # backends: every one listed; installed ones probed, the rest with their install command
        done = jitlab(python, "backends", "--json", cwd=home, env=env)
        assert_ok_or_install_line(done, "backends --json", None)
        rows = {row["backend"]: row for row in json.loads(done.stdout)["backends"]}
        frameworks = {"numba": "numba", "numba-parallel": "numba", "jax": "jax", "tensorflow": "tensorflow"}
        frameworks |= {"torch": "torch", "torch-compile": "torch", "triton": "triton"}
        for name, row in rows.items():
            module = frameworks.get(name)
            expected = module is None or (module in present and (name != "triton" or has_torch))
            assert row["available"] is expected, (name, row)
            if not expected:
                assert "pip install" in row["reason"] and "jitlab[" in row["reason"], row
        assert jitlab(python, "backends", cwd=home, env=env).returncode == 0

        # run pi: every installed backend measured at small sizes, the others unavailable
        done = jitlab(
            python,
            *("run", "pi", "--sizes", "1e3", "--processes", "1", "--budget", "0.05", "--no-plot", "--json"),
            cwd=home,
            env=env,
        )
        assert_ok_or_install_line(done, "run pi", None)
        for cell in json.loads(done.stdout)["cells"]:
            if rows[cell["backend"]]["available"]:
                assert cell["status"] == "ok", cell
            else:
                assert cell["status"] == "unavailable" and "pip install" in cell["reason"], cell

        done = jitlab(python, "machine", "--quick", cwd=home, env=env)
        assert_ok_or_install_line(done, "machine --quick", None)
        done = jitlab(python, "runs", cwd=home, env=env)
        assert_ok_or_install_line(done, "runs", None)

        (home / "program.py").write_text(PROGRAM)
        done = jitlab(
            python,
            *("doctor", "program.py:double", "--inputs", "make_inputs", "--checks", "sync,loops,graph"),
            cwd=home,
            env=env,
        )
        assert_ok_or_install_line(done, "doctor", None if has_torch else "torch")
        (home / "tiny_corpus.py").write_text(CORPUS)
        done = jitlab(python, *("capture", "tiny_corpus.py", "--methods", "jitlab,fx"), cwd=home, env=env)
        assert_ok_or_install_line(done, "capture", None if has_torch else "torch")
        done = jitlab(python, *("fuzz", "--programs", "2", "--no-shrink"), cwd=home, env=env)
        assert_ok_or_install_line(done, "fuzz", None if has_torch else "torch")
    finally:
        shutil.rmtree(tmp_path / "venv", ignore_errors=True)  # a few GB for the heavy extras
