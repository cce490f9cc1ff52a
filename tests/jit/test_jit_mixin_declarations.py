"""Every class of jitlab/jit (the tracer's mixins above all) states what it reads of `self`: each
`self.X` it reads is defined in the class (a method, a property, a class-level name, an assignment
`self.X = ...`) or declared by a class-level annotation (`X: Type`), in the class itself or in a
class it names as a base (followed through the real method resolution order, across modules). A
mixin therefore lists what it needs of the class it is mixed into (the tracer, the graph recorder),
where a reader (and a type checker) sees it."""

from __future__ import annotations

import ast
import importlib
import inspect
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED = sorted((ROOT / "jitlab/jit").rglob("*.py"))


def names_defined(cls: ast.ClassDef) -> set[str]:
    """What a class body defines or declares for its instances: methods, class-level names and
    annotations, and every `self.X = ...` / `self.X: T = ...` in its methods."""
    names: set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue  # `self.X += ...` reads X first: a read, not a definition
        while targets:  # `self.a, self.b = ...` defines both; `self.a[k] = ...` and `self.a.b = ...` read a
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets += target.elts
            elif isinstance(target, ast.Starred):
                targets.append(target.value)
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                names.add(target.attr)
    return names


def self_reads(cls: ast.ClassDef) -> set[str]:
    """Every X of a `self.X` read anywhere in the class body (`self.X += 1` reads X too)."""
    reads = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if isinstance(node.ctx, ast.Load):
                reads.add(node.attr)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            target = node.target
            if isinstance(target.value, ast.Name) and target.value.id == "self":
                reads.add(target.attr)
    return reads


@cache
def _class_nodes(path: Path) -> dict[str, ast.ClassDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def provided_by(base: type) -> set[str]:
    """What a base class gives its subclasses: read from its source when it is jitlab's (so that
    attributes set in `__init__` and annotations count), from the class itself otherwise."""
    if base.__module__.startswith("jitlab."):
        node = _class_nodes(Path(inspect.getsourcefile(base) or ""))[base.__qualname__]
        return names_defined(node)
    return set(vars(base)) | set(getattr(base, "__annotations__", {}))


def instance_dict(cls: type) -> set[str]:
    """`__dict__` when instances of `cls` have one (no `__slots__` all the way up)."""
    return {"__dict__"} if "__dict__" in dir(cls) else set()


def undeclared_reads(path: Path, module: str) -> list[str]:
    """`Class.X` for every `self.X` a top-level class of `path` reads that neither it nor a base in its
    method resolution order defines or declares."""
    loaded = importlib.import_module(module)
    wrong = []
    for name, node in _class_nodes(path).items():
        known = names_defined(node) | instance_dict(getattr(loaded, name))
        for base in getattr(loaded, name).__mro__[1:]:
            known |= provided_by(base)
        wrong += [f"{name}.{attr}" for attr in sorted(self_reads(node) - known)]
    return wrong


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_every_jit_class_declares_what_it_reads_of_self() -> None:
    assert len(CHECKED) > 100  # the package is found
    wrong = [read for path in CHECKED for read in undeclared_reads(path, module_of(path))]
    assert not wrong, (
        "these classes read attributes of self that they neither define nor declare (add a class-level "
        f"annotation `name: Type` saying what the class it is mixed into provides): {wrong}"
    )


def test_a_read_nothing_declares_is_found(tmp_path: Path, monkeypatch) -> None:
    """The check can fail: a planted mixin that reads what it does not declare is reported, and the
    same mixin with the annotation, a base's annotation or an `__init__` assignment is not."""
    package = tmp_path / "jitlab_planted"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mixins.py").write_text(
        "from jitlab.jit.guards.sources import Source\n"
        "class Declares:\n"
        "    builder: object\n"
        "class Planted:\n"
        "    def f(self):\n"
        "        self.recipes[1] = self.depth\n"
        "        self.recorder.notes = []\n"
        "        self.in_break += 1\n"
        "        return self.builder, self.source_of(1), self.f\n"
        "class Annotated:\n"
        "    builder: object\n"
        "    source_of: object\n"
        "    def f(self):\n"
        "        return self.builder, self.source_of(1)\n"
        "class Assigned(Declares):\n"
        "    def __init__(self):\n"
        "        self.source_of, self.count = print, 0\n"
        "        self.count += 1\n"
        "    def f(self):\n"
        "        return self.builder, self.source_of(1), self.count, self.__class__\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = undeclared_reads(package / "mixins.py", "jitlab_planted.mixins")
    # `Declares` comes from a module outside jitlab, so it is read from the class: its annotation counts
    assert found == [
        "Planted.builder",
        "Planted.depth",
        "Planted.in_break",
        "Planted.recipes",
        "Planted.recorder",
        "Planted.source_of",
    ]
