"""Test modules import their helpers as pytest's rootdir-relative import mode finds them (`from
test_module import ...`, as the jit tests do), never through a `tests` package: `from tests.x import`
works only with the repository on PYTHONPATH, as it is in a helper's checkout, and fails at
collection in CI's clean clone (it did, twice)."""

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_test_module_imports_through_a_tests_package():
    offenders = []
    modules = [*TESTS.rglob("test_*.py"), *TESTS.rglob("conftest.py"), *TESTS.glob("*_testing.py")]
    for path in sorted(modules):  # not tests/data: workload files, some broken on purpose
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            offenders += [
                f"{path.relative_to(TESTS)}:{node.lineno}" for n in names if n.split(".")[0] == "tests"
            ]
    assert offenders == []
