"""The install command printed for a backend that is not installed, right for how jitlab itself was
installed.

In a checkout (jitlab imported from a source tree with pyproject.toml and constraints.txt beside
it), extras install from that tree through its constraints file. Installed from an index, a wheel or
a git URL, there is no constraints file at hand: the pins it holds (`PINS`, kept equal to
constraints.txt by a test) are written into the command, for the extras that pull a pinned package
(an unpinned torch downloads several GB of CUDA packages). The command calls the pip of the Python
running jitlab, so it installs where jitlab runs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import shlex
import shutil
import sys
from pathlib import Path

from jitlab.errors import UserError

#: the pins of the repository's constraints.txt, shipped with the package (tests/backends check it)
PINS = {"torch": "2.13.0", "transformers": "5.24.0", "timm": "1.0.31", "torchvision": "0.28.0"}

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def checkout_root() -> Path | None:
    """The source tree jitlab runs from, when it runs from one (editable install or PYTHONPATH)."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        if (root / "constraints.txt").is_file() and 'name = "jitlab"' in pyproject.read_text():
            return root
    except OSError:
        return None
    return None


def pip_command() -> str:
    """`pip` when the `pip` on PATH belongs to this Python's environment, else `PYTHON -m pip`."""
    found = shutil.which("pip")
    if found and Path(found).parent == Path(sys.executable).parent:
        return "pip"
    return f"{shlex.quote(sys.executable)} -m pip"


def extra_packages(extra: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """The distributions an extra of jitlab pulls in (following `jitlab[a,b]` self-references)."""
    try:
        requirements = importlib.metadata.requires("jitlab") or []
    except importlib.metadata.PackageNotFoundError:
        return set()
    found: set[str] = set()
    for line in requirements:
        marker = _EXTRA_MARKER.search(line)
        name = _REQUIREMENT_NAME.match(line)
        if marker is None or marker.group(1) != extra or name is None:
            continue
        if name.group(1).lower() == "jitlab" and name.group(2):
            for inner in name.group(2).strip("[]").split(","):
                if inner.strip() and inner.strip() not in seen:
                    found |= extra_packages(inner.strip(), seen | {extra})
        else:
            found.add(name.group(1).lower())
    return found


def pins_for(extra: str) -> list[str]:
    packages = extra_packages(extra)
    return [f"{name}=={version}" for name, version in PINS.items() if name in packages]


def _direct_url() -> dict | None:
    """PEP 610's record of where the installed jitlab came from (None: from an index)."""
    try:
        text = importlib.metadata.distribution("jitlab").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def install_command(extra: str) -> str:
    """The command that installs `jitlab[extra]` where jitlab runs now."""
    pip = pip_command()
    root = checkout_root()
    if root is not None:
        target = shlex.quote(f"{root}[{extra}]")
        return f"{pip} install -c {shlex.quote(str(root / 'constraints.txt'))} -e {target}"
    origin = _direct_url() or {}
    url = origin.get("url")
    if url and "vcs_info" in origin:
        vcs = origin["vcs_info"]
        commit = vcs.get("commit_id")
        spec = f"jitlab[{extra}] @ {vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
    elif url and ("archive_info" in origin or "dir_info" in origin):
        spec = f"jitlab[{extra}] @ {url}"
    else:
        try:
            spec = f"jitlab[{extra}]=={importlib.metadata.version('jitlab')}"
        except importlib.metadata.PackageNotFoundError:
            spec = f"jitlab[{extra}]"
    return " ".join([pip, "install", shlex.quote(spec), *(shlex.quote(p) for p in pins_for(extra))])


def require(module: str, extra: str, purpose: str) -> None:
    """Raise a one-line `UserError` naming the install command when `module` is not installed.

    `purpose` says what needs it ("jitlab capture runs PyTorch programs"); the command is
    `install_command(extra)`, right for how jitlab was installed. Only whether the module can be
    found is checked (nothing is imported), so the check costs nothing when it passes.
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UserError(f"{purpose}, and {module} is not installed: {install_command(extra)}")
