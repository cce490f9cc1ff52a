"""Finding ParityBench's generated files and listing their cases without running them.

Listing reads only the `TESTCASES = [...]` literal at the end of each file (with `ast`): the parent
process of `jitlab capture` must know every case's name to plan batches, and importing 1,500 files
there would take minutes and run their module-level code outside a worker.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from jitlab.capture.corpus import Case
from jitlab.capture.paritybench.loading import make_inputs, make_model
from jitlab.errors import UserError

#: the line every generated file starts its imports with (it names the helper module)
MARKER = "from _paritybench_helpers import"
CLONE_HINT = "git clone https://github.com/jansel/pytorch-jit-paritybench"
_TESTCASES = "\nTESTCASES = ["
_ENTRY_LINE = re.compile(r"^    \((\w+),$", re.MULTILINE)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def is_paritybench_file(path: str | Path) -> bool:
    """Whether `path` is one of ParityBench's generated files (it imports the helper module, after
    a header that can be hundreds of lines long), rather than a corpus file defining CORPUS."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return MARKER in f.read()
    except OSError:
        return False


def paritybench_files(folder: str) -> list[str]:
    """The generated files under a `--paritybench` folder: a clone of the repository (its
    `generated/` folder) or the generated folder itself, sorted by name."""
    if "://" in folder or folder.startswith("git@"):
        raise UserError(
            f"--paritybench {folder} looks like a URL: give the folder of a local clone ({CLONE_HINT})"
        )
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise UserError(f"--paritybench {folder} is not a folder: give a clone of ParityBench ({CLONE_HINT})")
    generated = root / "generated" if (root / "generated").is_dir() else root
    files = sorted(str(p) for p in generated.glob("test_*.py") if is_paritybench_file(p))
    if not files:
        raise UserError(
            f"--paritybench {folder} holds no generated ParityBench files (generated/test_*.py): "
            f"give a clone of ParityBench ({CLONE_HINT})"
        )
    return files


def project_name(path: str | Path) -> str:
    """`pb.<project>`: the file's name without `test_` and `.py`, safe as a case name."""
    stem = Path(path).stem
    stem = stem[len("test_") :] if stem.startswith("test_") else stem
    return "pb." + _UNSAFE.sub("_", stem)


def entry_classes(text: str) -> list[str]:
    """The module class named by each TESTCASES entry, in order ('?' where it is not a plain name)."""
    start = text.rfind(_TESTCASES)  # the generated list comes last (a project may use the name too)
    if start < 0:
        return []
    node = None
    end = text.find("\n]", start)
    while end >= 0 and node is None:  # the first "]" at the start of a line that closes the list
        try:
            tree = ast.parse(text[start + 1 : end + 2])
        except SyntaxError:
            end = text.find("\n]", end + 2)
            continue
        node = tree.body[0] if tree.body else None
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.List)):
        # not Python (a few generated files are not): one name per entry line; importing the file
        # fails, so its cases are reported as failing eagerly instead of disappearing
        return _ENTRY_LINE.findall(text, start)
    names = []
    for entry in node.value.elts:
        first = entry.elts[0] if isinstance(entry, ast.Tuple) and entry.elts else None
        names.append(ast.unparse(first) if isinstance(first, (ast.Name, ast.Attribute)) else "?")
    return names


def list_cases(path: str | Path) -> list[Case]:
    """One case per TESTCASES entry of a generated file. Building a case's model or inputs imports
    the file (in the process that runs the case)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    project = project_name(path)
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for index, cls in enumerate(entry_classes(text)):
        base = f"{project}.{_UNSAFE.sub('_', cls)}"
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}.{seen[base]}"
        cases.append(
            Case(
                name,
                _bind(make_model, str(path), index),
                _bind(make_inputs, str(path), index),
                tags=("paritybench",),
                source=str(path),
            )
        )
    return cases


def _bind(fn: Any, path: str, index: int) -> Any:
    """`fn(path, index)` as a no-argument factory (a closure per case, not a shared loop variable)."""
    return lambda: fn(path, index)
