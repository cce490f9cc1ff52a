"""Seed -> program: draws statements from the grammar and a schedule of calls.

The same (seed, index) always gives the same program, in any process and on any Python, because
every choice comes from one `random.Random` seeded with a string (Python hashes strings with
SHA-512 for that). The schedule makes several calls; between them it may change the inputs' batch
size, dtype and requires_grad, the defaulted argument, the extra positional and keyword arguments,
and the outside values the statements read (globals, config items, closures, dataclass fields,
module attributes, train/eval), so that guards are exercised, not only capture. About half of the
later calls change nothing, so that most programs also run from their cache.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from jitlab.fuzz.context import Context
from jitlab.fuzz.grammar import PRODUCTIONS
from jitlab.fuzz.program import Call, Change, Program, Stmt

KINDS = ("function", "module")
BATCHES = (1, 2, 3, 4, 6)
RETURN_FORMS = ("h", "h", "h", "tuple", "list", "dict", "dataclass")
MAX_TRIES = 50
#: every feature class a program can exercise (the rows of the summary; --exclude takes these names)
FEATURE_CLASSES = (
    "function", "module", "submodule", "tensor_ops", "control_python", "control_shape", "control_data",
    "loop", "closure", "globals", "defaults", "varargs", "containers", "dataclass", "classes", "inplace", "views",
    "print", "append", "attr_write", "buffer", "train_eval", "guards", "aliasing", "autograd", "random",
    "exceptions", "numpy", "callbacks", "patterns", "library", "sizes", "call_objects", "training", "torch_state",
)  # fmt: skip


def program_seed(seed: int, index: int) -> str:
    """The seed of program `index` of a run with `seed`."""
    return f"jitlab-fuzz:{seed}:{index}"


def generate(seed: int, index: int = 0, exclude: Iterable[str] = ()) -> Program:
    """Program `index` of the run with `seed`; no statement or change of an `exclude`d feature class."""
    excluded = frozenset(exclude)
    rng = random.Random(program_seed(seed, index))
    kind = rng.choice(KINDS)
    ctx = Context(rng=rng, kind=kind, width=rng.choice([3, 4, 5]))
    train = "autograd" not in excluded and rng.random() < 0.3
    productions = [(p, w) for p, w, module_only in PRODUCTIONS if kind == "module" or not module_only]
    body: list[Stmt] = []
    for _ in range(rng.randint(2, 9)):
        stmt = _draw(ctx, productions, excluded)
        if stmt is not None:
            body.append(stmt)
    if train and kind == "function" and not any("WEIGHT" in s.defs for s in body):
        body.insert(
            rng.randrange(len(body) + 1), Stmt("h = h @ WEIGHT.to(h.dtype)", ("globals",), ("WEIGHT",))
        )
        ctx.define(
            "WEIGHT",
            "WEIGHT = (torch.randn(W, W, generator=torch.Generator().manual_seed(1)) * 0.3).requires_grad_()",
        )
    returns = rng.choice(RETURN_FORMS)
    if returns in ("tuple", "list", "dict") and "containers" in excluded:
        returns = "h"
    if returns == "dataclass" and "dataclass" in excluded:
        returns = "h"
    calls = _schedule(ctx, body, train, excluded)
    return Program(
        seed=seed,
        kind=kind,
        width=ctx.width,
        defs=tuple(ctx.defs.items()),
        body=tuple(body),
        returns=returns,
        calls=tuple(calls),
        train=train,
        label=f"seed {seed}, program {index}",
    )


def _draw(ctx: Context, productions: list, excluded: frozenset[str]) -> Stmt | None:
    """A statement of no excluded feature class (None if none turned up in MAX_TRIES draws)."""
    weights = [w for _, w in productions]
    for _ in range(MAX_TRIES):
        ((production, _),) = ctx.rng.choices(productions, weights)
        before_defs, before_changes = dict(ctx.defs), len(ctx.changes)
        stmt = production(ctx)
        if not excluded.intersection(stmt.features):
            return stmt
        ctx.defs, ctx.changes[before_changes:] = before_defs, []
    return None


def _schedule(ctx: Context, body: list[Stmt], train: bool, excluded: frozenset[str]) -> list[Call]:
    rng = ctx.rng
    uses = {f for s in body for f in s.features}
    text = "\n".join(s.text for s in body)
    first = Call(
        batch=rng.choice(BATCHES),
        requires_grad=train and rng.random() < 0.5,
        extra=rng.choice([0, 1]) if "extra" in text else 0,
        options=((("double", rng.choice(["True", "False"])),) if "options" in text else ())
        + tuple(ctx.call_options),
    )
    calls = [first]
    dtype_changes = ctx.kind == "module" and "guards" not in excluded
    for _ in range(rng.randint(1, 4)):
        call = calls[-1]
        if rng.random() < 0.5:
            calls.append(Call(**{**call.__dict__, "changes": ()}))
            continue
        changes: list[Change] = []
        fields = dict(call.__dict__)
        for _ in range(rng.randint(1, 2)):
            roll = rng.random()
            if roll < 0.35 and ctx.changes:
                change = rng.choice(ctx.changes)(rng)
                if not excluded.intersection(change.features):
                    changes.append(change)
            elif roll < 0.55 and "guards" not in excluded:
                fields["batch"] = rng.choice(BATCHES)
            elif roll < 0.65 and "guards" not in excluded:
                fields["requires_grad"] = not call.requires_grad
            elif roll < 0.75 and "defaults" in uses:
                fields["n"] = rng.choice([0, 1, 2, 3])
            elif roll < 0.82 and "extra" in text:
                fields["extra"] = rng.choice([0, 1, 2])
                fields["alias"] = "aliasing" not in excluded and rng.random() < 0.4
            elif roll < 0.85 and "aliasing" not in excluded:
                fields["transposed"] = not call.transposed
            elif roll < 0.88 and "options" in text:
                fields["options"] = (("double", rng.choice(["True", "False"])),) + tuple(ctx.call_options)
            elif roll < 0.93 and dtype_changes:
                dtype = "float64" if call.dtype == "float32" else "float32"
                fields["dtype"] = dtype
                changes.append(Change(f"model.to(torch.{dtype})", ("guards",)))
        fields["changes"] = tuple(changes)
        calls.append(Call(**fields))
    return calls
