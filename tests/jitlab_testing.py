"""Helpers shared by the tests: running the `jitlab` command as a user would, in a subprocess.

A module of its own (not conftest.py) so that `from jitlab_testing import ...` is unambiguous even
though several test folders have a conftest.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"


def run_jitlab(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600):
    """Run `python -m jitlab ARGS...`; returns the CompletedProcess (text, both streams captured)."""
    return subprocess.run(
        [sys.executable, "-m", "jitlab", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def process_alive(pid: int) -> bool:
    """Running. On Linux a zombie waiting for its reaper counts as gone; elsewhere (no /proc) a
    killed orphan is reaped by init at once, so whether the pid still exists is the answer."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def still_running(pids: Iterable[int], deadline_s: float) -> list[int]:
    """The processes of `pids` still running after waiting up to `deadline_s` for them all to end
    (a generous deadline: a loaded machine is slow to schedule, never a figure to assert)."""
    pids = list(pids)
    end = time.monotonic() + deadline_s
    while any(process_alive(pid) for pid in pids) and time.monotonic() < end:
        time.sleep(0.05)
    return [pid for pid in pids if process_alive(pid)]


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL each process of `pids` that is still there: a test leaves nothing running."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def build_wheel(work: Path) -> Path:
    """jitlab built as a wheel (`pip wheel --no-deps`) from a copy of its sources in `work`."""
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "jitlab", source / "jitlab", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(work / "dist"), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (work / "dist").glob("jitlab-*.whl")
    return wheel


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The single stderr line of a command that ended as bad input (exit 2, no traceback)."""
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: skip a Chromium test only where Chromium is missing outside CI (CI installs it and never skips)
NO_CHROMIUM = not Path(CHROMIUM).exists() and os.environ.get("CI") != "true"


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium (Debian's package) with a profile of its own, logging to stderr."""
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def console_messages(stderr: str) -> list[str]:
    """The page's console messages and uncaught errors in Chromium's log."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def open_in_chromium(page: str, folder: Path, window: str = "1280,2000") -> str:
    """Open `page` (a file:// URI) in headless Chromium: a screenshot that is a real PNG and no
    console message or uncaught error, then the DOM after the page ran, which is returned."""
    shot = folder / "page.png"
    result = chromium(f"--screenshot={shot}", f"--window-size={window}", page, profile=folder / "p1")
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    assert console_messages(result.stderr) == []
    dom = chromium("--dump-dom", page, profile=folder / "p2")
    assert dom.returncode == 0 and console_messages(dom.stderr) == []
    return dom.stdout
