"""`Any` annotations in jitlab/jit stay at the few that are left (issue 48): values of the program are
`object`, what a lower stage needs of a higher one is a Protocol (tests/jit/test_jit_owned_state.py
checks each against the real object), and the rest have concrete types. The count is the one
`grep -ro ": Any" jitlab/jit --include=*.py | wc -l` prints."""

from __future__ import annotations

from pathlib import Path

JIT = Path(__file__).resolve().parents[2] / "jitlab" / "jit"

#: the `: Any` left: `_Part.forward(*inputs)` (frontend/host_split.py, a submodule of a GraphModule)
#: and the size-input wrapper's `call(*inputs)` (frontend/size_inputs.py, reads `.size()` of some)
BUDGET = 2


def any_annotations(folder: Path) -> dict[str, int]:
    """`path: count` of the `: Any` annotations in each module under `folder` that has any."""
    counts = {}
    for path in sorted(folder.rglob("*.py")):
        n = path.read_text(encoding="utf-8").count(": Any")
        if n:
            counts[str(path.relative_to(folder.parent.parent))] = n
    return counts


def test_any_annotations_in_jit_stay_within_budget() -> None:
    counts = any_annotations(JIT)
    total = sum(counts.values())
    assert total <= BUDGET, (
        f"{total} `: Any` annotations in jitlab/jit, at most {BUDGET} allowed: {counts}. Give the new ones "
        "a real type: `object` for a value of the program that is only passed on, compared or checked "
        "with isinstance; the concrete class (torch.Tensor, fx.Node, types.FunctionType, a union); or, "
        "where a lower stage needs something of a higher one, a small Protocol next to its user, checked "
        "against the real object in tests/jit/test_jit_owned_state.py. Never import a higher stage."
    )


def test_the_count_is_what_grep_counts(tmp_path: Path) -> None:
    """Annotations only: `-> Any` and `list[Any]` do not count, two on one line count twice."""
    package = tmp_path / "jitlab" / "jit"
    package.mkdir(parents=True)
    (package / "a.py").write_text("def f(x: Any, y: Any) -> Any:\n    z: Any = x\n")
    (package / "b.py").write_text("def g(x: object, y: list[Any]) -> dict[str, Any]: ...\n")
    assert any_annotations(package) == {"jitlab/jit/a.py": 3}
