"""The plugin's tests run pytest sessions with `pytester`, which puts `sys.modules` back as it was
after each test: a module first imported during one of them (SQLAlchemy when a test opens a store,
the built-in backends and workloads when it reports in-process) is imported anew by the next, beside
the first copy, and neither SQLAlchemy ("No inspection system is available for ... Connection") nor
the backend registry ("a backend named 'python' is registered already") survives that. Importing
them once before any of these tests keeps one copy for the whole session."""

from __future__ import annotations

import importlib

import pytest


@pytest.fixture(scope="session", autouse=True)
def modules_imported_once(tmp_path_factory):
    from jitlab.backends import all_backends
    from jitlab.store import Store
    from jitlab.workloads.registry import builtin_workloads

    Store(tmp_path_factory.mktemp("warm-up") / "results.sqlite").close()
    all_backends()
    builtin_workloads()
    for name in ("jitlab.cli", "jitlab.compare.runs", "jitlab.report.html", "jitlab.report.derived"):
        importlib.import_module(name)
