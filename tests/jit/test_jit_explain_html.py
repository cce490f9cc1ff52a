"""`Explanation.html(path)` and `jitlab explain`: every entry, guard, break, fallback, specialisation
and miss of what jitlab.jit did is on the page, marked at its line; the page opens in headless Chromium."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import torch
from jitlab_testing import NO_CHROMIUM, REPO, open_in_chromium

import jitlab.jit
from jitlab.capture.corpus import load_corpus
from jitlab.cli import main
from jitlab.doctor.jit_view import run_graph_as_is
from jitlab.jit import Explanation

BREAK_CORPUS = sorted((REPO / "corpus" / "breaks").glob("*.py"))
CALLS = 3  # call i draws its inputs under seed i: branches on data go both ways


def explained(case) -> Explanation:
    fast = jitlab.jit.jit(case.build_model(), backend=run_graph_as_is)
    for seed in range(CALLS):
        args, kwargs = case.build_inputs(seed)
        fast(*args, **kwargs)
    return fast.explain()


def page_text(path: Path) -> str:
    """The page as a reader sees it: tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def shown(explanation: Explanation) -> list[str]:
    """Everything the page must show: guards, breaks, specialisations, checks, effects, fallbacks."""
    items = []
    for g in explanation.graphs:
        items += [*g.guards, *g.speculations, *g.checks, *g.effects, *g.notes]
        items += [b.reason for b in g.breaks] + [f"{Path(b.filename).name}:{b.lineno}" for b in g.breaks]
    for reason in explanation.fallback_reasons:
        items += [part.message for part in reason.parts or (reason,)]
    return items


@pytest.mark.slow
def test_every_break_corpus_program_shows_every_entry_guard_break_and_miss(tmp_path, capsys):
    cases = [case for file in BREAK_CORPUS for case in load_corpus(file)]
    assert len(cases) >= 40
    seen = {"breaks": 0, "misses": 0, "specialised": 0}
    for case in cases:
        explanation = explained(case)
        text = page_text(explanation.html(tmp_path / f"{case.name}.html"))
        missing = [item for item in shown(explanation) if item not in text]
        assert not missing, f"{case.name}: not on the page: {missing[:3]}"
        for n, g in enumerate(explanation.graphs):
            assert f"entry {n}: {g.graphs} graph(s)" in text and f"{g.hits} hit(s)" in text
            assert f"guards ({len(g.guards)})" in text
        assert f"{explanation.misses} call(s) missed every entry" in text
        seen["breaks"] += len(explanation.graph_breaks)
        seen["misses"] += explanation.misses
        seen["specialised"] += sum(len(g.speculations) for g in explanation.graphs)
    capsys.readouterr()  # the corpus prints
    assert all(seen.values()), seen  # the corpus has breaks, misses and specialisations to show


def _marks_at(page: str, line_number: int) -> str:
    """The marks shown under source line `line_number` of the jitted function."""
    found = re.search(rf'id="src0-L{line_number}".*?</div>\s*(<div class="marks">.*?</div>)?', page, re.S)
    assert found, f"line {line_number} is not on the page"
    return html.unescape(found.group(1) or "")


def warn_if_large(x):
    peak = x.abs().max()
    if peak > 1.5:  # a data decision: specialised
        x = x * 0.5
    k = int(torch.count_nonzero(x > 0))  # a value read from tensor data
    return x[:k].sum()


def test_breaks_fallbacks_and_specialisations_are_marked_at_their_lines(tmp_path):
    fast = jitlab.jit.jit(warn_if_large, backend=run_graph_as_is)  # specialises as for a compiler
    for scale in (1.0, 3.0, 1.0):
        fast(torch.linspace(-1, 1, 8) * scale)
    explanation = fast.explain()
    page = explanation.html(tmp_path / "page.html").read_text()
    first = warn_if_large.__code__.co_firstlineno
    specialised = {where for g in explanation.graphs for _, where in g.specialised() if where}
    assert specialised, explanation
    for where in specialised:
        line = int(where.rsplit(":", 1)[1])
        assert "specialisation" in _marks_at(page, line)
    assert _marks_at(page, first) == ""  # the def line has nothing
    assert f'href="#entry-{len(explanation.graphs) - 1}"' in page


def test_misses_are_listed_with_the_guard_that_failed(tmp_path):
    fast = jitlab.jit.jit(lambda x, s: x * len(s), backend="eager")  # a string: guarded by value
    for s in ("a", "bb", "ccc"):
        fast(torch.ones(3), s)
    explanation = fast.explain()
    assert explanation.misses == 2
    text = page_text(explanation.html(tmp_path / "misses.html"))
    assert "2 call(s) missed every entry" in text
    assert explanation.miss_reasons and all(reason in text for reason in explanation.miss_reasons)
    assert "EQUALS_MATCH: args[1] == 'a'" in explanation.miss_reasons[0]  # entry 0's value guard failed
    assert len(explanation.last_misses) == 2
    assert all(guard in text for miss in explanation.last_misses for guard in miss)


def test_a_fallback_to_eager_is_shown_with_its_problem_at_its_line(tmp_path):
    def step(x):
        y = x * 2
        names = globals()  # jitlab.jit cannot interpret this: the call runs eagerly, for good
        return y + len(names)

    fast = jitlab.jit.jit(step, backend="eager")
    for _ in range(3):
        assert torch.equal(fast(torch.ones(2, 4)), step(torch.ones(2, 4)))
    page = fast.explain().html(tmp_path / "step.html").read_text()
    first = step.__code__.co_firstlineno
    assert "Falls back to eager for good" in page
    assert "globals() is not supported" in _marks_at(page, first + 2) and "fallback" in _marks_at(
        page, first + 2
    )
    assert "globals()" not in _marks_at(page, first + 1)


def test_html_of_a_path_that_cannot_be_written_is_a_clear_error(tmp_path):
    from jitlab.errors import UserError

    fast = jitlab.jit.jit(lambda x: x + 1, backend="eager")
    fast(torch.ones(2))
    with pytest.raises(UserError, match="does not exist"):
        fast.explain().html(tmp_path / "no" / "page.html")
    with pytest.raises(UserError, match="is a folder"):
        fast.explain().html(tmp_path)


@pytest.mark.skipif(
    NO_CHROMIUM, reason="Chromium is not installed (apt-get install chromium); CI installs it"
)
def test_the_page_opens_in_headless_chromium(tmp_path):
    (case,) = [
        c
        for c in load_corpus(REPO / "corpus" / "breaks" / "outside_state.py")
        if c.name == "logging_warning_on_data"
    ]
    explanation = explained(case)
    assert explanation.graph_count >= 2 and explanation.misses >= 1 and len(explanation.graph_breaks) >= 2
    page = explanation.html(tmp_path / "page.html").resolve().as_uri()
    dom = open_in_chromium(page, tmp_path, window="1400,2200")
    assert dom.count('class="entry"') == explanation.graph_count
    breaks = dom.count('<span class="tag break">break</span>')
    assert breaks == 1 + len(explanation.graph_breaks)  # the legend, then each break at its line
    guards = sum(len(g.guards) for g in explanation.graphs)
    assert re.findall(r'<div class="guards">(.*?)</div>\s*</details>', dom, re.S)
    assert (
        sum(chunk.count("<div>") for chunk in re.findall(r'<div class="guards">(.*?)</details>', dom, re.S))
        == guards
    )


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(capsys, *args: str) -> str:
    code, _, err = run(capsys, *args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    return lines[0]


def test_explain_command(tmp_path, capsys):
    corpus = REPO / "corpus" / "breaks" / "graph_breaks.py"
    out = tmp_path / "page.html"
    code, stdout, err = run(capsys, f"{corpus}:disabled_helper_between_layers", "-o", str(out))
    assert code == 0, err
    assert f"wrote {out}: 1 cache entry, 1 graph break(s)" in stdout
    assert "marked torch.compiler.disable" in page_text(out)

    program = tmp_path / "prog.py"
    program.write_text(
        "import torch\n\n\ndef double(x):\n    return x * 2\n\n\n"
        "def inputs(scale=1):\n    return (torch.ones(3 * scale),), {}\n\n\n"
        "def fails(x):\n    raise ValueError('bad input')\n"
    )
    code, stdout, err = run(capsys, f"{program}:double", "--inputs", "inputs", "--calls", "2")
    assert code == 0, err
    assert "jitlab.jit explain: double" in stdout and "captures: 2, guard misses: 1" in stdout

    case = f"{corpus}:disabled_helper_between_layers"
    assert "leave out --inputs" in one_line_error(capsys, case, "--inputs", "x")
    assert "--scales" in one_line_error(capsys, f"{program}:double", "--inputs", "inputs", "--scales", "0")
    assert "ValueError: bad input" in one_line_error(capsys, f"{program}:fails", "--inputs", "inputs")
    missing = str(tmp_path / "no" / "x.html")
    assert "does not exist" in one_line_error(
        capsys, f"{program}:double", "--inputs", "inputs", "-o", missing
    )
