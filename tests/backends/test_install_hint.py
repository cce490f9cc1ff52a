"""The install hint of a missing backend is a command that works where jitlab runs: through the
checkout's constraints file in a checkout, with the pins written out for an installed package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jitlab_testing import REPO, build_wheel

from jitlab.backends.install import PINS, checkout_root, install_command


def test_the_shipped_pins_are_the_constraints_file():
    lines = [line.split("#")[0].strip() for line in (REPO / "constraints.txt").read_text().splitlines()]
    assert {f"{name}=={version}" for name, version in PINS.items()} == {line for line in lines if line}


def test_in_a_checkout_the_hint_installs_from_it_through_its_constraints():
    assert checkout_root() == REPO
    hint = install_command("tensorflow")
    assert f"install -c {REPO / 'constraints.txt'} -e '{REPO}[tensorflow]'" in hint
    assert hint.split(" install ")[0] in ("pip", f"{sys.executable} -m pip")


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> Path:
    """jitlab built as a wheel and installed (without dependencies) into a folder of its own."""
    work = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(work)
    pip = [sys.executable, "-m", "pip"]
    target = work / "site"
    subprocess.run(
        [*pip, "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    return target


def hint_from(site: Path, extra: str) -> str:
    code = f"from jitlab.backends.install import install_command; print(install_command({extra!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=site.parent,  # not the checkout
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_installed_from_a_wheel_the_hint_names_it_and_writes_the_pins(installed_wheel):
    assert (installed_wheel / "jitlab" / "schemas" / "run.schema.json").is_file()  # package data shipped
    hint = hint_from(installed_wheel, "torch")
    assert "-c " not in hint and "constraints.txt" not in hint
    assert "'jitlab[torch] @ file://" in hint and hint.endswith(".whl' torch==2.13.0")
    assert hint_from(installed_wheel, "numba").endswith(".whl'")  # no torch pin for an extra without torch


def test_installed_from_an_index_the_hint_pins_jitlab_and_torch(installed_wheel, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(installed_wheel, site)
    for record in site.glob("jitlab-*.dist-info/direct_url.json"):
        record.unlink()  # what pip leaves when the wheel came from an index
    assert hint_from(site, "triton").endswith("install 'jitlab[triton]==0.1.0' torch==2.13.0")
    assert hint_from(site, "jax").endswith("install 'jitlab[jax]==0.1.0'")
