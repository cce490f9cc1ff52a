"""Users' files and folders: importing their Python files (workload files, doctor targets, corpora)
the way `python FILE` would, and checking folders jitlab must write into.

One place for what every such loader must get right: a clear one-line error for a missing or
broken file naming the line that failed, the file's folder importable (for helper modules beside
it), and a module that is executed once per process however often it is asked for.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from jitlab.errors import UserError


def failing_line(file: Path, exc: BaseException) -> int | str:
    """The line of `file` where `exc` was raised (the innermost frame in it), or '?'."""
    if isinstance(exc, SyntaxError) and exc.lineno and exc.filename and Path(exc.filename).resolve() == file:
        return exc.lineno
    line: int | str = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file:
            line = frame.lineno or "?"
    return line


def import_file(path: str | Path, what: str, prefix: str = "_jitlab_user") -> ModuleType:
    """Import `path` as a module; `what` names it in errors ("workload file", "target file"...)."""
    file = Path(path).resolve()
    if not file.is_file():
        raise UserError(f"{what} {path} does not exist: check the path")
    name = f"{prefix}_{file.stem}_{abs(hash(str(file)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot load {what} {path} as Python: give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if str(file.parent) not in sys.path:
        sys.path.insert(0, str(file.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file is broken: say where, in one line
        del sys.modules[name]
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise UserError(
            f"{what} {path} failed to load at line {failing_line(file, exc)}: {type(exc).__name__}: {message}"
        ) from exc
    return module


def writable_folder(folder: Path, what: str, fix: str) -> Path:
    """Create `folder` if needed and check it can be written; `fix` says what to pass instead."""
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{what} {folder} exists and is not a folder: {fix}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the {what} {folder}: {exc.strerror}; {fix}") from exc
    if not os.access(folder, os.W_OK):
        raise UserError(f"cannot write in the {what} {folder}: permission denied; {fix}")
    return folder
