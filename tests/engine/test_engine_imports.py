"""The engine's modules import one another without a circle, counting imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import jitlab.engine

ENGINE = Path(next(iter(jitlab.engine.__path__)))


def engine_imports() -> dict[str, set[str]]:
    """{module: engine modules it imports anywhere in its source} for every module of jitlab.engine."""
    names = {p.stem for p in ENGINE.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name in names:
        tree = ast.parse((ENGINE / f"{name}.py").read_text())
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "jitlab.engine":
                found |= {a.name for a in node.names if a.name in names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jitlab.engine."):
                found.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("jitlab.engine.")}
        graph[name] = found & names - {name}
    return graph


def cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path start -> ... -> start, if there is one."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for other in graph[node]:
            if other == start:
                return [*path, start]
            if other not in seen:
                seen.add(other)
                stack.append((other, [*path, other]))
    return None


def test_the_engine_has_no_import_cycle():
    graph = engine_imports()
    # the Ray dispatcher needs the shared types (and how to connect), never the local dispatcher
    assert "jobs" in graph["ray_dispatch"] and "dispatch" not in graph["ray_dispatch"]
    assert "ray_dispatch" in graph["dispatch"]  # the local module still chooses it (a real edge)
    cycles = {name: cycle_through(graph, name) for name in graph}
    assert {name: path for name, path in cycles.items() if path} == {}


def test_the_cycle_finder_finds_a_cycle():
    assert cycle_through({"a": {"b"}, "b": {"c"}, "c": {"a"}}, "a") == ["a", "b", "c", "a"]
    assert cycle_through({"a": {"b"}, "b": set()}, "a") is None
