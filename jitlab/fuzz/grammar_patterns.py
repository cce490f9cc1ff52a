"""Fuzzer productions for forms met in ParityBench's crawled programs that jitlab.jit captures as one
graph: a tensor wrapped in `nn.Parameter(..., requires_grad=False)` in the forward, `x.type()` as a
dtype, a shape mismatch the program catches, `requires_grad` set on a tensor it made, and an
autograd Function written with classmethods whose backward reads a class attribute. Between calls
the outside values they read change (the wrapped tensor in place or rebound, the caught operand's
shape, the class attribute), so that a cached capture's guards matter. Two more come from what
building the state reads after in-place changes found: outside tensors that share memory (`B = A[:]`,
rebound to a copy and back) where one changes in place and the other is read, and an in-place change
of a tensor the call made before a decision on an outside tensor. `x.new(x.size())` comes from a
crash ParityBench found. Three more come from ParityBench's last cases: a queue of past tensors
popped (`Q.append(t)`, then `Q.pop(0)`: spikingjelly's `Delay`), a dict keyed by `Enum` members and
classes (nncf's `self._forward_fn_per_mode[self.mode]`), and objects of a class without an
`__init__` (nncf's `no_jit_trace`), and classes with a `__new__` of their own (brevitas's
`QuantTensor`, a named tuple whose `__new__` makes tensors of numbers). Each statement reads and writes `h` as every production does
(grammar.py).
"""

from __future__ import annotations

from jitlab.fuzz.context import Context, rebind
from jitlab.fuzz.program import Change, Stmt

FEATURE = "patterns"


def wrapped_parameter(ctx: Context) -> Stmt:
    name = f"PE{ctx.fresh()}"
    ctx.define(name, f"{name} = torch.linspace(-0.5, 0.5, W)")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}.mul_({rng.choice([0.5, 2.0])})", (FEATURE, "inplace"), (name,)),
                Change(
                    f"{name} = torch.full((W,), {rng.choice([0.25, -1.0])})", (FEATURE,), (name,), (name,)
                ),
            ]
        )
    )
    return Stmt(f"h = h + nn.Parameter({name}, requires_grad=False)", (FEATURE, "globals"), (name,))


def type_name_cast(ctx: Context) -> Stmt:
    text = ctx.rng.choice(
        ["h = (h > 0).type(h.type()) * h + 0.1", "h = h * (h.type() == 'torch.FloatTensor') + h"]
    )
    return Stmt(text, (FEATURE,))


def caught_shape_mismatch(ctx: Context) -> Stmt:
    name = f"BIAS{ctx.fresh()}"
    ctx.define(name, f"{name} = torch.ones(W + 1)")
    ctx.changes.append(
        lambda rng: Change(
            f"{name} = torch.ones(W + {rng.choice([0, 1])}) * {rng.choice([0.5, 2.0])}",
            (FEATURE,),
            (name,),
            (name,),
        )
    )
    text = f"try:\n    h = h + {name}\nexcept RuntimeError:\n    h = h * 0.5"
    return Stmt(text, (FEATURE, "exceptions", "globals"), (name,))


def made_requires_grad(ctx: Context) -> Stmt:
    k = ctx.fresh()
    text = ctx.rng.choice(
        [
            f"m{k} = torch.ones_like(h) * 0.5\nm{k}.requires_grad = False\nh = h * m{k}",
            f"m{k} = (torch.arange(h.shape[1]) % 2).float()\nm{k}.requires_grad = False\nh = h + m{k}",
        ]
    )
    return Stmt(text, (FEATURE,))


def classmethod_function(ctx: Context) -> Stmt:
    name = f"Scale{ctx.fresh()}"
    ctx.define(
        name,
        f"class {name}(torch.autograd.Function):\n    factor = 0.5\n    grad_factor = 2.0\n\n"
        "    @classmethod\n    def forward(cls, ctx, t):\n        return t * cls.factor\n\n"
        "    @classmethod\n    def backward(cls, ctx, grad):\n        return grad * cls.grad_factor",
    )
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}.factor = {rng.choice([0.25, 0.5, 1.5])}", (FEATURE, "autograd"), (name,)),
                Change(
                    f"{name}.grad_factor = {rng.choice([-1.0, 2.0, 3.0])}", (FEATURE, "autograd"), (name,)
                ),
            ]
        )
    )
    return Stmt(f"h = {name}.apply(h)", (FEATURE, "autograd"), (name,))


def aliased_globals(ctx: Context) -> Stmt:
    """Two outside tensors that are different objects but may share memory (`B = A[:]`, rebound to
    a copy and back between calls): the program changes one in place and reads the other, also in
    a decision on its data. A cache entry built when they shared memory must not serve a call where
    they do not, nor the other way round (entries/input_memory.py)."""
    k = ctx.fresh()
    base, view = f"AL{k}", f"AV{k}"
    ctx.define(base, f"{base} = torch.linspace(-1.0, 1.0, W)")
    ctx.define(view, f"{view} = {base}[:]")
    ctx.changes.append(
        lambda rng: Change(
            rng.choice([f"{view} = {base}[:]", f"{view} = {base}.clone()"]),
            (FEATURE, "globals"),
            (base, view),
            (view,),
        )
    )
    update = ctx.rng.choice([f"{base}.mul_(-1.0)", f"{base}.add_(0.25)"])
    text = ctx.rng.choice(
        [
            f"with torch.no_grad():\n    {update}\nh = h + {view}",
            f"with torch.no_grad():\n    {update}\nif {view}.sum() > 0:\n    h = h * 1.5\nelse:\n    h = h - 0.5",
        ]
    )
    return Stmt(text, (FEATURE, "inplace", "globals"), (base, view))


def fresh_inplace_then_state_read(ctx: Context) -> Stmt:
    """An in-place change of a tensor the call made (`relu_`, a rounding), then a decision on an
    outside tensor's data: guarded before the call when the change cannot have reached it
    (graph/fresh_storage.py). Between calls the outside tensor changes in place."""
    name = f"GATE{ctx.fresh()}"
    ctx.define(name, f"{name} = torch.tensor([0.5, -0.25])")
    ctx.changes.append(
        lambda rng: Change(f"{name}.mul_({rng.choice([-1.0, 2.0, 0.5])})", (FEATURE, "inplace"), (name,))
    )
    k = ctx.fresh()
    made = ctx.rng.choice([f"f{k} = (h * 2).relu_()", f"f{k} = h.div(0.1).round_().mul_(0.1)"])
    text = f"{made}\nif {name}.sum().item() > 0:\n    h = h + f{k}\nelse:\n    h = h - f{k}"
    return Stmt(text, (FEATURE, "inplace", "globals"), (name,))


def legacy_new(ctx: Context) -> Stmt:
    """`x.new(size)`, the legacy way to get uninitialised memory of a size (filled right after): the
    graph holds sizes as tuples, and `x.new((2, 3))` is the tensor `[2, 3]`."""
    text = ctx.rng.choice(
        [
            "h = h + h.new(h.size()).fill_(0.5)",
            "h = h * h.data.new(h.shape).fill_(2.0)",
            "h = h + h.new(h.shape[0], 1).zero_()",
        ]
    )
    return Stmt(text, (FEATURE,))


def tensor_queue(ctx: Context) -> Stmt:
    """An outside list or dict of tensors that the call appends to and pops from (a queue of earlier
    calls' values; `dict.pop` with a default), read after the change; between calls the queue is
    appended to, emptied, or a tensor in it changed in place or replaced."""
    k = ctx.fresh()
    name = f"QUEUE{k}"
    ctx.define(name, f"{name} = [torch.zeros(W)]")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(
                    f"{name}.append(torch.full((W,), {rng.choice([0.5, -1.0])}))", ("containers",), (name,)
                ),
                Change(f"{name}.clear()", ("containers",), (name,)),
                Change(f"if {name}:\n    {name}[0].mul_(-2.0)", ("containers", "inplace"), (name,)),
                Change(
                    f"{name}[:] = [torch.ones(W)] * {rng.randint(1, 3)}", ("containers", "aliasing"), (name,)
                ),
            ]
        )
    )
    steps = ctx.rng.choice([1, 2])
    length = ctx.rng.choice([f"len({name})", f"{name}.__len__()"])
    popped = ctx.rng.choice([f"{name}.pop(0)", f"{name}.pop()", f"{name}.pop(-{steps})"])
    text = ctx.rng.choice(
        [
            f"{name}.append(h.detach().mean(0))\nif {length} > {steps}:\n    h = h + {popped}\nelse:\n"
            f"    h = h * 0.5",
            f"if {length} > {steps}:\n    q{k} = {popped}\n    h = h - q{k} * 0.5 + len({name}) * 0.01\n"
            f"{name}.append(h.detach().sum(0) * 0.1)",
        ]
    )
    return Stmt(text, (FEATURE, "containers", "globals"), (name,))


def keyed_by_constants(ctx: Context) -> Stmt:
    """A dict keyed by `Enum` members and a class, read with an item, `get`, `in` and a loop, the
    key an outside `Enum` value; between calls the value, an item, or the keys change."""
    k = ctx.fresh()
    mode, table, kind = f"MODE{k}", f"TABLE{k}", f"Mode{k}"
    ctx.define(kind, f"class {kind}(enum.Enum):\n    A = 1\n    B = 2")
    ctx.define(mode, f"{mode} = {kind}.A")
    ctx.define(table, f"{table} = {{{kind}.A: 0.5, {kind}.B: 2.0, nn.ReLU: 1.5}}")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{mode} = {kind}.{rng.choice('AB')}", (FEATURE, "globals"), (kind, mode), (mode,)),
                Change(
                    f"{table}[{kind}.{rng.choice('AB')}] = {rng.choice([-1.0, 0.25])}",
                    (FEATURE,),
                    (kind, table),
                ),
                Change(f"{table}.pop(nn.ReLU, None)", (FEATURE,), (table,)),
                Change(f"{table}[nn.ReLU] = {rng.choice([0.75, 3.0])}", (FEATURE,), (table,)),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f"h = h * {table}[{mode}]",
            f"h = h + {table}.get(nn.ReLU, 0.0)",
            f"if nn.ReLU in {table}:\n    h = h - {table}[nn.ReLU]\nelse:\n    h = h * {table}[{mode}]",
            f"for key{k} in {table}:\n    if key{k} is not {mode}:\n        h = h + {table}[key{k}] * 0.1",
        ]
    )
    return Stmt(text, (FEATURE, "globals"), (kind, mode, table))


def class_without_init(ctx: Context) -> Stmt:
    """Objects of a class without an `__init__`: a context manager that keeps what it read on
    itself, and a record given attributes; between calls what it reads changes, or the class gains
    an `__init__` or a class attribute the objects then see."""
    k = ctx.fresh()
    kind, scale = f"Holder{k}", f"HSCALE{k}"
    ctx.define(scale, f"{scale} = 0.5")
    ctx.define(
        kind,
        f"class {kind}:\n    def __enter__(self):\n        self.saved = {scale}\n        return self\n\n"
        "    def __exit__(self, *args):\n        self.saved = None",
    )
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                rebind(rng, scale, (FEATURE, "globals")),
                Change(f"{kind}.__init__ = lambda self: setattr(self, 'extra', 3.0)", (FEATURE,), (kind,)),
                Change(f"{kind}.extra = {rng.choice([1.0, -0.5])}", (FEATURE,), (kind,)),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f"with {kind}() as ho{k}:\n    h = h * ho{k}.saved\nh = h + (ho{k}.saved is None) * 0.1",
            f"ho{k} = {kind}()\nho{k}.v = h.detach().sum(0)\nh = h - ho{k}.v * 0.01 + getattr(ho{k}, 'extra', 0.0)",
        ]
    )
    return Stmt(text, (FEATURE, "globals"), (kind, scale))


def python_new(ctx: Context) -> Stmt:
    """Classes with a `__new__` written in Python: a named tuple whose `__new__` makes a tensor of a
    number (brevitas's `QuantTensor`), and a plain class whose `__new__` sets an attribute before
    its `__init__` runs; objects of both may be returned in an outside list. Between calls the
    number they read changes, or the plain class's `__new__` is replaced."""
    k = ctx.fresh()
    pair, plain, scale, kept = f"Pair{k}", f"Made{k}", f"NSCALE{k}", f"KEPT{k}"
    ctx.define(scale, f"{scale} = 0.5")
    ctx.define(kept, f"{kept} = []")
    ctx.define(
        pair,
        f"class {pair}Base(typing.NamedTuple):\n    value: torch.Tensor\n    scale: torch.Tensor\n\n\n"
        f"class {pair}({pair}Base):\n    def __new__(cls, value, scale):\n"
        "        if not isinstance(scale, torch.Tensor):\n            scale = torch.tensor(scale)\n"
        "        return super().__new__(cls, value, scale)",
    )
    ctx.define(
        plain,
        f"class {plain}:\n    def __new__(cls, k):\n        made = super().__new__(cls)\n"
        "        made.doubled = k * 2\n        return made\n\n"
        "    def __init__(self, k):\n        self.k = k",
    )
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                rebind(rng, scale, (FEATURE, "globals")),
                Change(
                    f"{plain}.__new__ = lambda cls, k: setattr(made := object.__new__(cls), 'doubled', -k) or made",
                    (FEATURE,),
                    (plain,),
                ),
                Change(f"{kept}.clear()", (FEATURE, "containers"), (kept,)),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f"p{k} = {pair}(h, {scale})\nh = p{k}.value * p{k}.scale + p{k}[1]",
            f"m{k} = {plain}({scale})\nh = h * m{k}.doubled + m{k}.k",
            f"m{k} = {plain}({scale})\n{kept}.append(m{k})\nh = h - m{k}.doubled",
            f"p{k} = {pair}(h.detach(), {scale})\n{kept}.append(p{k})\nh = h + p{k}.scale",
        ]
    )
    return Stmt(text, (FEATURE, "globals"), (pair, plain, scale, kept))
