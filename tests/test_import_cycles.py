"""No import cycles in jitlab/: every import statement of every module counts, at module level, inside
functions and under `if TYPE_CHECKING:`, relative imports resolved. A cycle is reported as a chain
`a -> b -> c -> a` so that whoever adds one sees which imports close it.

Importing `pkg.mod` also runs `pkg/__init__.py`; that implicit edge is left out (every module would
otherwise sit in a cycle with its package's `__init__`), while an explicit `from pkg import name`
counts as an import of `pkg` unless `pkg.name` is itself a module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Groups of modules among which a cycle is allowed (a cycle is allowed when all its modules are in one
# group). Each entry says why.
_BUILTIN_BACKENDS = ("python", "numpy", "numba", "jax", "tensorflow", "torch", "triton")
ALLOWED: list[frozenset[str]] = [
    # The backends' plugin registry: each built-in backend module registers itself with
    # `register_backend`, and the registry imports them, inside `_load_builtins`, the first time a
    # backend is looked up (the reason is written there). The only plugin registry that needs it.
    frozenset({"jitlab.backends.registry", *(f"jitlab.backends.{n}_backend" for n in _BUILTIN_BACKENDS)}),
]


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under `package_dir` (a package)."""
    base = package_dir.parent
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports anywhere in its source."""
    modules = module_names(package_dir)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                while target and target not in modules:  # `import a.b.c` where c is a name
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One chain per strongly connected component of more than one module (Tarjan), as a list of
    modules whose last element imports the first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:  # iterative, so deep graphs do not hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_chain(graph, component) for component in components]


def _chain(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first inside it)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return path[::-1]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def test_jitlab_has_no_import_cycles() -> None:
    found = cycles(import_graph(ROOT / "jitlab"))
    new = [chain for chain in found if not any(set(chain) <= group for group in ALLOWED)]
    assert not new, "import cycles in jitlab/:\n" + "\n".join(
        " -> ".join([*chain, chain[0]]) for chain in new
    )


def test_a_cycle_through_a_function_level_relative_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..c import thing\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (package / "d.py").write_text("from . import a\nfrom .sub import b\n")  # imports, closes nothing
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.sub.b", "pkg.c"]]


# The stages of jitlab.jit, lowest first: a module may import its own stage and those before it.
# `overhead` (`python -m jitlab.jit.overhead`) measures what the frontend's calls cost, so it comes last.
JIT_STAGES = ["reasons", "errors", "python_support", "interpreter", "guards", "graph", "effects", "entries", "breaks",
              "tracing", "frontend", "overhead"]  # fmt: skip


def test_jit_stages_import_one_way() -> None:
    graph = import_graph(ROOT / "jitlab")
    rank = {stage: n for n, stage in enumerate(JIT_STAGES)}
    upward = []
    for module, imported in graph.items():
        parts = module.split(".")
        if parts[:2] != ["jitlab", "jit"] or len(parts) < 3:
            continue  # the package's own __init__ may reach every stage, lazily, for the public names
        for target in sorted(imported):
            tparts = target.split(".")
            if tparts[:2] == ["jitlab", "jit"] and len(tparts) == 2:
                upward.append(f"{module} -> {target} (the package __init__)")
            elif tparts[:2] == ["jitlab", "jit"] and rank[tparts[2]] > rank[parts[2]]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports against the order of jitlab.jit's stages:\n" + "\n".join(upward)


def test_every_jit_stage_names_itself_and_what_it_may_import() -> None:
    for folder in sorted(p for p in (ROOT / "jitlab" / "jit").iterdir() if (p / "__init__.py").exists()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert folder.name in JIT_STAGES, f"{folder.name}: a stage missing from JIT_STAGES"
        assert "import" in doc and folder.name in doc.split("\n")[0], f"{folder}/__init__.py: {doc[:80]!r}"


def test_no_interpreter_private_name_is_used_outside_it() -> None:
    used = []
    for path in sorted((ROOT / "jitlab").rglob("*.py")):
        if (ROOT / "jitlab" / "jit" / "interpreter") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jitlab.jit.interpreter"):
                used += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not used, "private names of jitlab.jit.interpreter used outside it:\n" + "\n".join(used)


def test_no_module_over_600_lines() -> None:
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sorted((ROOT / "jitlab").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600]  # fmt: skip
    assert not long, "modules over 600 lines:\n" + "\n".join(long)


# A package's `__init__` docstring may say what the package may import, in one paragraph of the form
# `May import: jitlab.a, jitlab.b.c and this folder.` (or `nothing outside this folder`): the dotted
# names before the first `;` or the end of the sentence, text in parentheses left out. A name allows
# that module and everything under it; the package's own modules are always allowed.
_MAY_IMPORT = re.compile(r"^May import:\s*(.*?)(?:;|\.(?=\s|$))", re.MULTILINE | re.DOTALL)
_MAY_IMPORT_WORDS = {"this folder", "this folder only", "nothing outside this folder"}


def may_import(doc: str) -> list[str] | None:
    """The dotted names a `May import:` paragraph allows, or None when the docstring has none."""
    found = _MAY_IMPORT.search(re.sub(r"\([^()]*\)", "", doc))
    if found is None:
        return None
    names = []
    for item in re.split(r",\s*|\s+and\s+", " ".join(found.group(1).split())):
        if item not in _MAY_IMPORT_WORDS:
            assert re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", item), (
                f"not a module name in 'May import:': {item!r}"
            )
            names.append(item)
    return names


def may_import_violations(package_dir: Path) -> list[str]:
    """`package -> module` for every import, anywhere in a package's modules, that its `May import:`
    paragraph does not allow, for every package under `package_dir` that has one."""
    graph = import_graph(package_dir)
    modules = module_names(package_dir)
    wrong = []
    for package, path in sorted(modules.items()):
        if path.name != "__init__.py":
            continue
        allowed = may_import(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
        if allowed is None:
            continue
        allowed.append(package)
        for module, imported in sorted(graph.items()):
            if module != package and not module.startswith(package + "."):
                continue
            for target in sorted(imported):
                if not any(target == name or target.startswith(name + ".") for name in allowed):
                    wrong.append(f"{package}: {module} -> {target}")
    return wrong


def test_every_may_import_docstring_holds() -> None:
    wrong = may_import_violations(ROOT / "jitlab")
    assert not wrong, "imports that a package's 'May import:' docstring does not allow:\n" + "\n".join(wrong)


def test_every_jit_stage_says_what_it_may_import() -> None:
    for folder in sorted(p for p in (ROOT / "jitlab" / "jit").iterdir() if (p / "__init__.py").exists()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert may_import(doc) is not None, f"{folder}/__init__.py has no 'May import:' paragraph"


def test_a_may_import_docstring_is_checked_against_imports_inside_functions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for sub in ("low", "mid", "high"):
        (package / sub).mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text('"""Low.\n\nMay import: nothing outside this folder."""\n')
    (package / "low" / "a.py").write_text("from . import b\n")
    (package / "low" / "b.py").write_text("")
    (package / "mid" / "__init__.py").write_text(
        '"""Mid.\n\nMay import: pkg.low and this folder (only)."""\n'
    )
    (package / "mid" / "c.py").write_text("def f():\n    from ..high import d\n    from ..low import a\n")
    (package / "high" / "__init__.py").write_text('"""High: no paragraph, nothing checked."""\n')
    (package / "high" / "d.py").write_text("from pkg.mid import c\n")
    assert may_import_violations(package) == ["pkg.mid: pkg.mid.c -> pkg.high.d"]


def two_way_folders(package_dir: Path) -> list[str]:
    """Pairs of sibling folders (`jitlab/engine` and `jitlab/store`, `jitlab/jit/graph` and
    `jitlab/jit/effects`) each of which imports the other somewhere, inside functions included, with
    the imports of each way. A folder and a folder inside it are not siblings: the parent's modules
    sit on no floor of their own (`jitlab/errors.py` is imported by every folder)."""
    modules = module_names(package_dir)
    base = package_dir.parent

    def folder(module: str) -> tuple[str, ...]:
        return modules[module].parent.relative_to(base).parts

    ways: dict[tuple[str, str], list[str]] = {}
    for module, imported in import_graph(package_dir).items():
        for target in imported:
            here, there = folder(module), folder(target)
            common = 0
            while common < min(len(here), len(there)) and here[common] == there[common]:
                common += 1
            if common < len(here) and common < len(there):
                pair = ("/".join(here[: common + 1]), "/".join(there[: common + 1]))
                ways.setdefault(pair, []).append(f"{module} -> {target}")
    return [
        f"{a} <-> {b}: " + ", ".join(sorted(ways[a, b]) + sorted(ways[b, a]))
        for a, b in sorted(ways)
        if a < b and (b, a) in ways
    ]


def test_no_two_folders_import_each_other() -> None:
    """The measuring side is layered (cli -> plan -> worker -> backend -> measurement -> store ->
    report): a piece two folders share lives in the lower one, or in a folder below both."""
    found = two_way_folders(ROOT / "jitlab")
    assert not found, "folders that import each other:\n" + "\n".join(found)


def test_a_two_way_import_between_folders_is_found_inside_functions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for sub in ("low", "high", "high/inner"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text("")
    (package / "low" / "a.py").write_text("from pkg import base\ndef f():\n    from ..high.inner import b\n")
    (package / "high" / "inner" / "b.py").write_text("from pkg.low import a\nfrom ... import base\n")
    (package / "high" / "c.py").write_text("from .inner import b\n")  # parent and child: not siblings
    (package / "high" / "inner" / "d.py").write_text("from pkg.high import c\n")
    assert two_way_folders(package) == [
        "pkg/high <-> pkg/low: pkg.high.inner.b -> pkg.low.a, pkg.low.a -> pkg.high.inner.b"
    ]
