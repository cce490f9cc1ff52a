"""A shrunk failing program as a pytest file: the program's source and one test comparing eager
with `jitlab.jit` on it through the oracle.

The file is meant for tests/fuzz/regressions/: it passes once the bug is fixed. A bug that is not
fixed yet is marked `pytest.mark.xfail(strict=True, reason=...)` by hand, so the test flips to a
failure (and the mark must go) on the day the fix lands.
"""

from __future__ import annotations

import re
from pathlib import Path

from jitlab.fuzz.program import Program, render


def test_name(program: Program, method: str) -> str:
    """A file name from the program's seed and index, e.g. test_fuzz_jit_seed7_12.py."""
    slug = re.sub(r"[^0-9a-z]+", "_", program.label.lower()).strip("_") or f"seed_{program.seed}"
    slug = slug.replace("seed_", "seed").replace("_program_", "_")
    return f"test_fuzz_{method}_{slug}.py"


def reproducer_source(program: Program, backend: str, detail: str | None, original: str) -> str:
    """The text of the regression test for `program` (shrunk from `original`, a size)."""
    source = render(program)
    assert "'''" not in source
    summary = (detail or "a difference").replace('"""', "'''")
    name = test_name(program, "jit")[:-3]
    return (
        f'"""Found by `jitlab fuzz` ({program.label}, backend "{backend}"): jitlab.jit differed from\n'
        f"eager execution: {summary} (in the program as generated; call numbers may differ below).\n\n"
        f"Shrunk from {original}. The program is below as `PROGRAM`; the test runs it eagerly and\n"
        f'under jitlab.jit from identical starting states and compares what a user could see."""\n\n'
        "from __future__ import annotations\n\n"
        "from jitlab.fuzz.oracle import check_source\n\n"
        f"PROGRAM = '''\\\n{source}'''\n\n\n"
        f"def {name}(tmp_path):\n"
        f'    verdict = check_source(PROGRAM, backend="{backend}", workdir=tmp_path)\n'
        '    assert verdict.status in ("equal", "tolerance"), verdict.detail\n'
    )


def write_reproducer(
    directory: Path, program: Program, backend: str, detail: str | None, original: str
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / test_name(program, "jit")
    path.write_text(reproducer_source(program, backend, detail, original))
    return path
