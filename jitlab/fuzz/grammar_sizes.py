"""Fuzzer productions for sizes handled by Python and for objects made per call (issue 44).

Sizes: the programs' batch size changes between calls, so after one miss `jitlab.jit` keeps sizes
symbolic, and these statements move them the ways transformers' attention code does: unpacking
(`(*h.shape[:-1], -1, 1)`, `b, w = h.shape`), slicing, `torch.Size + tuple`, `torch.Size([...])`,
`len`, integer and `math` arithmetic, sizes stored in lists, dicts and objects made in the call or
passed as `**kwargs`, `split`/`chunk`/`unbind` whose number of results depends on the batch. Others
must pin the size: a dict key, `range`, an f-string appended to an outside list, native code
(`math.factorial`), a truth test or comparison, so the next batch size must miss.

Objects made per call: a dataclass cache (`Memo{k}` with `keys` and `steps`, or layers of them) that
the caller passes as a keyword argument, as `generate` passes its `DynamicCache`; the call appends
rows to its tensors and counts its steps. Between calls the caller keeps the object (it grows), makes
a new one (a new sequence), passes one object under two names, or gives it other contents, so the
entry's guards on its structure and its identity are exercised. And an object the caller passes
whose int attribute counts (`Count{k}.count`, as transformers' sliding-window caches count tokens in
`cumulative_length`): the call or the caller changes it, so after one miss `jitlab.jit` makes it a
symbolic int, and the call uses it in tensor operations (`arange`, slicing, `view`) or decides on it
(a comparison, a list index, `range`). Each statement reads and writes `h` of shape (batch, width)
as every production does (grammar.py).
"""

from __future__ import annotations

from jitlab.fuzz.context import Context
from jitlab.fuzz.program import Change, Stmt

SIZES = "sizes"
OBJECTS = "call_objects"

#: statements that keep the sizes of `t{k}` (rows, W) symbolic, leaving `u{k}` (rows, W)
MOVED = (
    "s{k} = (*t{k}.shape[:-1], -1, 1)\nu{k} = t{k}.view(s{k}).squeeze(-1) * 1.5",
    "b{k}, w{k} = t{k}.shape\nu{k} = t{k}.reshape(b{k} * w{k}).view(*t{k}.shape[:-1], -1) + 0.25",
    "o{k} = t{k}.size()[:-1] + (W,)\nu{k} = t{k}.reshape(o{k}) - 0.5",
    "u{k} = t{k}.new_zeros(torch.Size([t{k}.shape[0], W])) + t{k} * 2.0",
    "u{k} = t{k} * (1.0 / math.sqrt(t{k}.shape[-1])) + len(t{k}.shape) * 0.1 + t{k}.shape[0] // 2 * 0.1",
    "half{k} = math.ceil(t{k}.shape[0] / 2)\nu{k} = torch.cat([t{k}[:half{k}] * 2.0, t{k}[half{k}:]], 0)",
    "sizes{k} = [t{k}.shape[0], t{k}.shape[1]]\nd{k} = {{'rows': sizes{k}[0]}}\n"
    "u{k} = t{k}.reshape(d{k}['rows'] * sizes{k}[1]).view(d{k}['rows'], -1) * 0.5",
    "u{k} = resize{k}(t{k}, **{{'rows': t{k}.shape[0], 'cols': t{k}.shape[1]}})",
    "parts{k} = t{k}.chunk(3, dim=0)\nu{k} = torch.cat([p * (i + 1) for i, p in enumerate(parts{k})], 0)",
    "u{k} = torch.cat(list(t{k}.split(1, dim=0)), 0) * 0.75",
    "q{k}, v{k} = torch.cat([t{k}, t{k} * 2.0], -1).split(W, dim=1)\nu{k} = q{k} * v{k}.tanh()",
    "u{k} = torch.arange(t{k}.shape[0], dtype=t{k}.dtype).unsqueeze(1) * t{k}",
)

#: statements that pin a size of `t{k}`: another one must miss ({table}, {log}: globals)
PINNED = (
    "h = h * {table}.get(t{k}.shape[0], 1.0)",
    "for i{k} in range(t{k}.shape[0] % 3):\n    h = h + i{k} * 0.1",
    '{log}.append(f"rows {{t{k}.shape[0]}}")',
    "h = h * float(math.factorial(t{k}.shape[0] % 4))",
    "if t{k}.shape[0] % 2:\n    h = h * 2.0\nelse:\n    h = h - 1.0",
    "if t{k}.shape[0] * W > 12:\n    h = h.flip(0)",
    "h = h + [0.5, 1.5, 2.5, 3.5][t{k}.shape[0] % 4]",
    "for r{k} in t{k}:\n    h = h + r{k} * 0.1",
)

#: statements using the int `n{k}` read from a counting object (`counted_int`): computed with, then decided on
COUNTED = (
    "h = h + torch.arange(n{k}, dtype=h.dtype).sum() * 0.01",
    "h = h + torch.cat([h] * 4, 1)[:, -(n{k} % W + 1):].sum(1, keepdim=True) * 0.1",
    "h = h + h.repeat(1, n{k}).view(h.shape[0], n{k}, -1).mean(1) * 0.5",
    "h = h * (n{k} / 4) + n{k} // 3",
    "if n{k} > 6:\n    h = h * 0.5\nelse:\n    h = h + 0.25",
    "h = h * [0.5, 1.5, 2.5][n{k} % 3]",
    "for i{k} in range(n{k} % 4):\n    h = h + 0.1",
    "h = h + (n{k} == 4) * 0.5 + torch.full((1, W), float(n{k}))",
)


def _sized(ctx: Context, k: int) -> tuple[str, tuple[str, ...]]:
    """`t{k} = ...`: the batch itself, or a global tensor of rows whose number changes between calls
    (a new one, or grown by a row as a cache grows), so that sizes vary more than the batch does."""
    if ctx.rng.random() < 0.3:
        return f"t{k} = h", ()
    rows = f"ROWS{k}"
    ctx.define(rows, f"{rows} = torch.randn(3, W, generator=torch.Generator().manual_seed({k}))")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(
                    f"{rows} = torch.randn({rng.choice([2, 3, 4, 5, 6, 7])}, W)", (SIZES,), (rows,), (rows,)
                ),
                Change(f"{rows} = torch.cat([{rows}, {rows}[:1] * 0.5], 0)", (SIZES,), (rows,), (rows,)),
            ]
        )
    )
    return f"t{k} = {rows}.to(h.dtype)", (rows,)


def size_moves(ctx: Context) -> Stmt:
    """A statement that moves, unpacks or computes with sizes without pinning them."""
    k = ctx.fresh()
    ctx.define("math", "import math")
    head, defs = _sized(ctx, k)
    body = ctx.rng.choice(MOVED).format(k=k)
    if f"resize{k}" in body:
        defs += (
            ctx.define(
                f"resize{k}", f"def resize{k}(t, *, rows, cols):\n    return t.reshape(rows, cols) * 0.5"
            ),
        )
    text = f"{head}\n{body}\nh = h + u{k}.mean(0) * 0.1"
    return Stmt(text, (SIZES, "control_shape"), ("math", *defs))


def size_pinned(ctx: Context) -> Stmt:
    """A statement whose behaviour depends on the value of a size."""
    k = ctx.fresh()
    table, log = f"BYROWS{k}", f"ROWLOG{k}"
    ctx.define("math", "import math")
    head, defs = _sized(ctx, k)
    body = ctx.rng.choice(PINNED).format(k=k, table=table, log=log)
    if table in body:
        ctx.define(table, f"{table} = {{1: 0.5, 2: 1.5, 3: 2.0, 4: 0.25, 6: 3.0}}")
        ctx.changes.append(
            lambda rng: Change(
                f"{table}[{rng.choice([1, 2, 3, 4, 6])}] = {rng.choice([0.1, 4.0])}", (SIZES,), (table,)
            )
        )
        defs += (table,)
    if log in body:
        ctx.define(log, f"{log} = []")
        ctx.changes.append(lambda rng: Change(f"{log}.clear()", (SIZES, "containers"), (log,)))
        defs += (log,)
    return Stmt(f"{head}\n{body}", (SIZES, "control_shape"), ("math", *defs))


def _memo_class(ctx: Context, k: int) -> str:
    kind = f"Memo{k}"
    ctx.define(
        kind,
        f"@dataclasses.dataclass\nclass {kind}:\n    keys: typing.Any = None\n    steps: int = 0\n"
        f"    layers: list = dataclasses.field(default_factory=list)",
    )
    return kind


def carried_cache(ctx: Context) -> Stmt:
    """A cache the caller passes as a keyword argument and the call appends to: kept between calls
    (it grows), replaced by a new one (a new sequence), or given other contents."""
    k = ctx.fresh()
    kind = _memo_class(ctx, k)
    name, key = f"MEMO{k}", f"memo{k}"
    ctx.define(name, f"{name} = {kind}()")
    ctx.call_options.append((key, f"globals().get('{name}')"))  # None once the statement is shrunk away
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name} = {kind}()", (OBJECTS,), (name, kind), (name,)),
                Change(f"{name} = {kind}(steps={rng.choice([1, 5])})", (OBJECTS,), (name, kind), (name,)),
                Change(f"{name}.keys = None", (OBJECTS,), (name,)),
                Change(f"{name}.steps = {rng.choice([0, 2])}", (OBJECTS,), (name,)),
            ]
        )
    )
    m = f"m{k}"
    text = ctx.rng.choice(
        [
            f"{m} = options['{key}']\nif {m}.keys is None:\n    {m}.keys = h.detach() * 0.5\n"
            f"else:\n    {m}.keys = torch.cat([{m}.keys, h.detach()], 0)\n"
            f"h = h + {m}.keys.mean(0) * 0.1 + {m}.steps * 0.01",
            f"{m} = options['{key}']\nlength{k} = 0 if {m}.keys is None else {m}.keys.shape[0]\n"
            f"{m}.keys = h.detach() if {m}.keys is None else torch.cat([{m}.keys, h.detach()], 0)\n"
            f"h = h + torch.arange(length{k}, length{k} + h.shape[0], dtype=h.dtype).unsqueeze(1) * 0.01",
            f"{m} = options['{key}']\nif not {m}.layers:\n    {m}.layers.append({kind}())\n"
            f"layer{k} = {m}.layers[0]\nlayer{k}.keys = h.detach() if layer{k}.keys is None else "
            f"torch.cat([layer{k}.keys, h.detach()], 0)\nh = h * 0.5 + layer{k}.keys[-h.shape[0]:] * 0.5",
        ]
    )
    return Stmt(text, (OBJECTS, "varargs", "attr_write"), (kind, name))


def aliased_caches(ctx: Context) -> Stmt:
    """Two keyword arguments that are one object on some calls and two on others: a write to one is
    seen through the other only when they are the same object; and the number of distinct ones,
    which hashes them."""
    k = ctx.fresh()
    kind = _memo_class(ctx, k)
    first, second = f"FIRST{k}", f"SECOND{k}"
    ctx.define(first, f"{first} = {kind}(steps=1)")
    ctx.define(second, f"{second} = {kind}(steps=2)")
    ctx.call_options.append((f"first{k}", f"globals().get('{first}')"))
    ctx.call_options.append((f"second{k}", f"globals().get('{second}')"))
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{second} = {first}", (OBJECTS, "aliasing"), (first, second), (second,)),
                Change(f"{second} = {kind}(steps=2)", (OBJECTS,), (second, kind), (second,)),
                Change(f"{first} = {kind}(steps=3)", (OBJECTS,), (first, kind), (first,)),
                # a new pair, one object under both names or two: the contents the guards read alike
                Change(
                    f"{first} = {kind}(steps=2)\n{second} = {first}",
                    (OBJECTS, "aliasing"),
                    (first, second, kind),
                    (first, second),
                ),
                Change(
                    f"{first} = {kind}(steps=2)\n{second} = {kind}(steps=2)",
                    (OBJECTS,),
                    (first, second, kind),
                    (first, second),
                ),
            ]
        )
    )
    a, b = f"a{k}", f"b{k}"
    text = ctx.rng.choice(
        [
            f"{a}, {b} = options['first{k}'], options['second{k}']\n{a}.keys = h.detach()[:1]\n"
            f"h = h * {b}.steps * 0.5",
            f"{a}, {b} = options['first{k}'], options['second{k}']\nh = h + ({a} is {b}) * 0.25",
            f"{a}, {b} = options['first{k}'], options['second{k}']\n{a}.keys = h.detach() * 2.0\n"
            f"h = h + ({b}.keys.mean() if {b}.keys is not None else h) * 0.1",
        ]
    )
    return Stmt(text, (OBJECTS, "varargs", "attr_write"), (kind, first, second))


def counted_int(ctx: Context) -> Stmt:
    """An int attribute of an object the caller passes, which counts as a cache's token count does:
    the call may add to it, and between calls the caller sets it or passes a new object."""
    k = ctx.fresh()
    kind, name, key = f"Count{k}", f"COUNT{k}", f"count{k}"
    ctx.define(kind, f"@dataclasses.dataclass\nclass {kind}:\n    count: int = 3")
    ctx.define(name, f"{name} = {kind}()")
    ctx.call_options.append((key, f"globals().get('{name}')"))  # None once the statement is shrunk away
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}.count = {rng.choice([2, 3, 5, 7, 8, 11])}", (OBJECTS, SIZES), (name,)),
                Change(
                    f"{name} = {kind}(count={rng.choice([4, 6, 9])})", (OBJECTS, SIZES), (name, kind), (name,)
                ),
            ]
        )
    )
    c, n = f"c{k}", f"n{k}"
    grow = ctx.rng.choice(["", f"\n{c}.count = {n} + h.shape[0]", f"\n{c}.count += 1"])
    uses = "\n".join(ctx.rng.sample(COUNTED, ctx.rng.choice([1, 2]))).format(k=k)
    text = f"{c} = options['{key}']\n{n} = {c}.count{grow}\n{uses}"
    return Stmt(text, (OBJECTS, SIZES, "varargs", "attr_write"), (kind, name))
