"""Every example of the README and docs/*.md marked runnable runs as written.

A fenced block is runnable when the line before it (blank lines aside) is an HTML comment, invisible
on rendered pages:

    <!-- runnable -->                      run the block: sh/bash/console with bash, python with Python
    <!-- runnable: exit=0,1 -->            exit codes the block may end with (a gate that may trip)
    <!-- runnable: file=NAME -->           write the block to NAME for later blocks, run nothing
    <!-- runnable: file=NAME; then=CMD --> write it, then run the shell command CMD

The blocks of one document run in order in one scratch folder, whose default store
($JITLAB_STORE) already holds three small runs of `pi` (numpy at n = 10^3, 10^5 and 10^6), so
examples that name runs 1, 2 and 3 find them, and whose peaks cache holds this machine's peaks
measured in the quick mode (as `jitlab machine` would leave them). `jitlab` is the real command line on a small configuration
(tests/docs/small_jitlab.py: tiny budgets and sizes, fast backends); `python` and `pytest` are this
environment's. The README's quick start (`make demo`, `make test`) is not marked: it installs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from jitlab_testing import REPO

HERE = Path(__file__).resolve().parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!--\s*runnable(?::\s*(?P<options>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^```\s*(?P<lang>[\w-]*)\s*$")
SHELLS = {"sh", "bash", "shell", "console"}


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    lang: str
    code: str
    options: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPO)}:{self.line}"


def parse_options(text: str | None) -> dict[str, str]:
    options = {}
    for part in (text or "").split(";"):
        if part.strip():
            key, _, value = part.strip().partition("=")
            options[key.strip()] = value.strip()
    unknown = set(options) - {"exit", "file", "then"}
    if unknown:
        raise ValueError(f"unknown runnable option(s) {sorted(unknown)}")
    return options


def examples(document: Path) -> list[Example]:
    lines = document.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j].strip()) if j < len(lines) else None
        if fence is None:
            raise ValueError(f"{document}:{i + 1}: a runnable marker must stand before a fenced block")
        end = next(k for k in range(j + 1, len(lines)) if lines[k].strip() == "```")
        found.append(
            Example(
                document,
                j + 1,
                fence["lang"],
                "\n".join(lines[j + 1 : end]) + "\n",
                parse_options(marker["options"]),
            )
        )
    return found


ALL = [example for document in DOCUMENTS for example in examples(document)]


def test_the_documents_mark_examples_runnable():
    marked = {e.document.name for e in ALL}
    assert {"README.md", "automation.md", "compare-and-report.md", "doctor.md"} <= marked
    assert all(e.lang in SHELLS | {"python"} for e in ALL), [
        e.where for e in ALL if e.lang not in SHELLS | {"python"}
    ]


@pytest.fixture(scope="session")
def populated_store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs-store")
    store = folder / "results.sqlite"
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-m", "jitlab", "run", "pi", "--backends", "numpy", "--sizes", "1e3,1e5,1e6",
             "--budget", "0.05", "--no-plot", "--store", str(store)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    peaks = subprocess.run(
        [sys.executable, "-m", "jitlab", "machine", "--quick", "--cache", str(folder / "machine.json")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert peaks.returncode == 0, peaks.stderr
    return store


def environment(scratch: Path, store: Path) -> dict[str, str]:
    bin_dir = scratch / ".bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "jitlab"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "small_jitlab.py"}" "$@"\n')
    wrapper.chmod(0o755)
    (scratch / ".jitlab").mkdir()
    shutil.copy(store, scratch / ".jitlab" / "results.sqlite")
    shutil.copy(store.parent / "machine.json", scratch / ".jitlab" / "machine.json")
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {
        **os.environ,
        "PATH": path,
        "JITLAB_STORE": str(scratch / ".jitlab" / "results.sqlite"),
        "MPLBACKEND": "Agg",
        "PYTHONPATH": "",
    }


def run_example(example: Example, scratch: Path, env: dict[str, str]) -> None:
    options = example.options
    if "file" in options:
        (scratch / options["file"]).write_text(example.code)
        commands = [options["then"]] if "then" in options else []
        lang = "sh"
    else:
        commands, lang = [example.code], example.lang
    allowed = {int(code) for code in options.get("exit", "0").split(",")}
    for command in commands:
        if lang == "python":
            script = scratch / ".example.py"
            script.write_text(command)
            argv = [sys.executable, str(script)]
        else:
            argv = ["bash", "-e", "-o", "pipefail", "-c", command]
        done = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode in allowed, (
            f"{example.where} exited {done.returncode}\n--- code\n{command}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-3000:]}"
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    "document", [d for d in DOCUMENTS if any(e.document == d for e in ALL)], ids=lambda d: d.name
)
def test_runnable_examples_run(document, populated_store, tmp_path):
    env = environment(tmp_path, populated_store)
    for example in (e for e in ALL if e.document == document):
        run_example(example, tmp_path, env)
