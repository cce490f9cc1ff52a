"""Fuzzer productions where a builtin iterates an outside container and calls the program's own code
back for each item: `map(lambda v: h * v, VALS)`, `filter`, `sorted` and `max` with a key,
`functools.reduce`. The items reach the program through the builtin, not through a `for` loop of its
own, and a change to the container between calls (an item written, one appended, some removed) must
still miss the cache. Each statement reads and writes `h` as every production does (grammar.py).
"""

from __future__ import annotations

from jitlab.fuzz.context import Context
from jitlab.fuzz.program import Change, Stmt

#: statements over the list `{name}` (floats) and the dict `{table}` (str -> float)
FORMS = (
    "h = h + sum(map(lambda v: h * v, {name})) * 0.1",
    "for v{k} in filter(lambda v: v > 1.0, {name}):\n    h = h + v{k} * 0.01",
    "h = h * sorted({name}, key=lambda v: -v)[0]",
    "h = h * max({name}, key=lambda v: abs(v - 1.0))",
    "h = functools.reduce(lambda a, v: a * 0.5 + v, {name}, h)",
    "h = h + sum(map(lambda key: {table}[key], {table})) * 0.01",
    "h = h + sum(map(lambda key, v: len(key) * v, {table}, {name})) * 0.01",
)


def iterated_by_builtin(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name, table = f"VALS{k}", f"TABLE{k}"
    ctx.define("functools", "import functools")
    ctx.define(name, f"{name} = [0.5, 1.5, 2.0]")
    ctx.define(table, f'{table} = {{"a": 0.5, "bb": 1.5}}')
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}.append(0.25)", ("containers", "callbacks"), (name,)),
                Change(f"{name}[0] = 3.0", ("containers", "callbacks"), (name,)),
                Change(f"del {name}[2:]", ("containers", "callbacks"), (name,)),
                Change(f'{table}["ccc"] = 2.5', ("containers", "callbacks"), (table,)),
                Change(f'{table}["a"] = 4.0', ("containers", "callbacks"), (table,)),
            ]
        )
    )
    text = ctx.rng.choice(FORMS).format(name=name, table=table, k=k)
    return Stmt(text, ("callbacks", "containers", "globals"), ("functools", name, table))
