"""Bad input: one line naming the problem and what to do, exit code 2, no traceback, store untouched."""

import hashlib
import os
import sqlite3

import pytest
from jitlab_testing import DATA


def assert_clean_error(result, *needles):
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.parametrize(
    "args, needles",
    [
        (["run", "nosuchworkload"], ["unknown workload 'nosuchworkload'", "pi"]),
        (["run", "pi", "--backends", "numpy,fortran"], ["unknown backend 'fortran'", "numba-parallel"]),
        (["run", "missing_file.py"], ["does not exist"]),
        (["run", str(DATA / "broken_workload.py")], ["failed to load at line 3", "SyntaxError"]),
        (["run", str(DATA / "no_workload.py")], ["defines no jitlab.Workload"]),
        (["run", "pi", "--sizes", "1e3,abc"], ["'abc' is not a positive integer"]),
        (["run", "pi", "--sizes", "0"], ["'0' is not a positive integer"]),
        (["run", "pi", "--sizes", "2.5"], ["not a positive integer"]),
        (["run", "pi", "--threads", "0"], ["--threads"]),
    ],
)
def test_bad_run_arguments(jitlab_cli, tmp_path, args, needles):
    store = tmp_path / "s.sqlite"
    result = jitlab_cli(*args, "--store", str(store))
    assert_clean_error(result, *needles)
    assert not store.exists()


def test_debug_shows_the_traceback(jitlab_cli, tmp_path):
    result = jitlab_cli("run", "nosuchworkload", "--debug", "--store", str(tmp_path / "s.sqlite"))
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_corrupt_store_is_rejected_and_left_untouched(jitlab_cli, tmp_path):
    store = tmp_path / "corrupt.sqlite"
    store.write_bytes(b"this is not a database, it is a text file\n" * 100)
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    result = jitlab_cli("run", "pi", "--backends", "numpy", "--sizes", "1e3", "--store", str(store))
    assert_clean_error(result, str(store), "--store")
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


def test_foreign_sqlite_file_is_rejected_and_left_untouched(jitlab_cli, tmp_path):
    store = tmp_path / "other.sqlite"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE customers (name TEXT)")
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    result = jitlab_cli("runs", "--store", str(store))
    assert_clean_error(result, "not a jitlab results store")
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_store_folder(jitlab_cli, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    result = jitlab_cli("run", "pi", "--backends", "numpy", "--store", str(folder / "s.sqlite"))
    assert_clean_error(result, "--store")


def test_store_path_under_a_file_is_unwritable(jitlab_cli, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = jitlab_cli("run", "pi", "--backends", "numpy", "--store", str(blocker / "s.sqlite"))
    assert_clean_error(result, "store folder", "is not a folder", "--store")


def test_unknown_run_id(jitlab_cli, tmp_path):
    store = tmp_path / "s.sqlite"
    assert (
        jitlab_cli(
            "run",
            "pi",
            "--backends",
            "numpy",
            "--sizes",
            "1e3",
            "--budget",
            "0.05",
            "--store",
            str(store),
            "--no-plot",
        ).returncode
        == 0
    )
    assert_clean_error(jitlab_cli("show", "42", "--store", str(store)), "no run 42")
    assert_clean_error(jitlab_cli("export", "1", "--format", "xml", "--store", str(store)), "xml")


def test_missing_store_for_reading(jitlab_cli, tmp_path):
    assert_clean_error(jitlab_cli("runs", "--store", str(tmp_path / "none.sqlite")), "no results store")
