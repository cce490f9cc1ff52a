"""`jitlab explain TARGET`: run a function (or a capture-corpus case) through jitlab.jit and show
what it did: the text of `.explain()`, or with `-o FILE` a browsable HTML page of it (see docs/jit.md).

TARGET is `path.py:function` or `package.module:function` (as for `jitlab doctor`), or
`corpus.py:CASE` for a case of a capture corpus (a file defining `CORPUS`). The function's arguments
come from `--inputs FUNC` (a function returning `(args, kwargs)`, given as for the doctor; repeat it
for several input sets); when it has a `scale` parameter, each scale of `--scales` makes one input
set. Each input set is called `--calls` times, in order: the first call of a new shape captures, the
next ones hit or miss. A corpus case draws call i's inputs under seed i (its values change, its
shapes do not), so that branches on data are taken both ways.
"""

from __future__ import annotations

import click

from jitlab.cli.app import app, console
from jitlab.errors import UserError

AS_IS = "as-is"
BACKEND_HELP = (
    "jitlab.jit backend: as-is (default: each captured graph runs as it is, so captures, guards, breaks "
    "and specialisations are a compiler's, with no compile time), eager (jitlab.jit's own: keeps "
    "values read from tensor data inside the graph), inductor, or any torch.compile backend name"
)


def parse_scales(text: str) -> list[int]:
    try:
        scales = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        scales = []
    if not scales or any(s < 1 for s in scales):
        raise UserError(f"--scales {text!r}: give positive integers separated by commas, e.g. 1,2")
    return scales


def input_sets(target: object, specs: list[str], scales: list[int]) -> list[tuple[str, tuple, dict]]:
    """(label, args, kwargs) for each input set: every --inputs function, at every scale it accepts."""
    from jitlab.doctor.target import call_inputs, resolve_inputs

    if not specs:
        return [("no arguments", (), {})]
    sets = []
    for spec in specs:
        inputs = resolve_inputs(spec, target)  # type: ignore[arg-type]
        if inputs.factory is None:
            sets.append((spec, inputs.args, inputs.kwargs))
            continue
        for scale in scales:
            scaled = call_inputs(inputs.factory, spec, scale=scale)
            sets.append((f"{spec}(scale={scale})", scaled.args, scaled.kwargs))
    return sets


def corpus_case(spec: str) -> object | None:
    """The corpus case `file.py:CASE` names, or None when the file defines no CORPUS with that case."""
    from pathlib import Path

    file, _, name = spec.rpartition(":")
    if not file.endswith(".py") or not Path(file).is_file() or "CORPUS" not in Path(file).read_text():
        return None
    from jitlab.capture.corpus import load_corpus

    try:
        cases = {case.name: case for case in load_corpus(file)}
    except UserError:  # no CORPUS = Corpus() after all, or one without cases: a plain target file
        return None
    return cases.get(name)


@app.command("explain")
@click.argument("target")
@click.option(
    "--inputs",
    "inputs_specs",
    multiple=True,
    metavar="FUNC",
    help="function returning (args, kwargs): path.py:function, package.module:function, or a name in "
    "TARGET's module; repeat for several input sets",
)
@click.option(
    "--scales",
    default="1,2",
    show_default=True,
    metavar="N,M",
    help="sizes asked of an --inputs function with a `scale` parameter, one input set each",
)
@click.option(
    "--calls", default=3, show_default=True, type=click.IntRange(1, 1000), help="calls per input set"
)
@click.option("--backend", default=AS_IS, show_default=True, metavar="NAME", help=BACKEND_HELP)
@click.option("-o", "--output", default=None, metavar="FILE", help="write a browsable HTML page to FILE")
def explain_command(
    target: str, inputs_specs: tuple[str, ...], scales: str, calls: int, backend: str, output: str | None
) -> int:
    """Run TARGET (path.py:function, package.module:function, or corpus.py:CASE) through jitlab.jit
    and show what it captured: cache entries with their guards and graph code, graph breaks,
    fallbacks, specialisations, misses and hits; with -o FILE as an HTML page."""
    from jitlab.backends.install import require

    require("torch", "torch", "jitlab explain runs PyTorch code through jitlab.jit")
    import jitlab.jit

    case = corpus_case(target)
    if case is not None:
        if inputs_specs:
            raise UserError(f"{target} is a corpus case, which makes its own inputs: leave out --inputs")
        function = case.build_model()  # type: ignore[attr-defined]
        sets = [(f"seed {i}", *case.build_inputs(i)) for i in range(calls)]  # type: ignore[attr-defined]
        per_set = 1
    else:
        from jitlab.doctor.target import resolve_target

        resolved = resolve_target(target)
        function = resolved.function
        sets = input_sets(resolved, list(inputs_specs), parse_scales(scales))
        per_set = calls
    from jitlab.doctor.jit_view import run_graph_as_is

    fast = jitlab.jit.jit(function, backend=run_graph_as_is if backend == AS_IS else backend)
    for label, args, kwargs in sets:
        for n in range(per_set):
            try:
                fast(*args, **kwargs)
            except Exception as exc:
                raise UserError(
                    f"{target} raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
                    f"(inputs {label}, call {n + 1}); it raises eagerly too: fix the program or its inputs"
                ) from exc
    explanation = fast.explain()
    if output is None:
        console.print(str(explanation), markup=False, highlight=False, soft_wrap=True)
        return 0
    from pathlib import Path

    path = explanation.html(Path(output))
    console.print(
        f"wrote {path}: {explanation.graph_count} cache entr{'y' if explanation.graph_count == 1 else 'ies'}, "
        f"{len(explanation.graph_breaks)} graph break(s), {explanation.misses} miss(es), "
        f"{len(explanation.fallbacks)} fallback(s)",
        markup=False,
        highlight=False,
    )
    return 0
