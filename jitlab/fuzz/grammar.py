"""The statements the fuzzer's programs are made of, one small function per production.

Every statement keeps the invariant the generator relies on: it reads and writes the tensor `h` of
shape (batch, width) and leaves it so, so any subset of statements in any order is a valid program.
A statement registers the top-level definitions it needs (globals, helper functions, closures,
dataclasses) and, for outside values a later call may change, the `Change`s the schedule can make
before a call (flip a global flag, write a config item, rebind a closure, switch train/eval).
"""

from __future__ import annotations

from collections.abc import Callable

from jitlab.fuzz.context import Context
from jitlab.fuzz.grammar_callbacks import iterated_by_builtin
from jitlab.fuzz.grammar_effects import (
    appending,
    changed_list_read,
    changed_tensor_list_read,
    effect_then_mutate,
    fresh_array,
    global_write,
    item_write,
    keyed_additions,
    outside_array,
    outside_removal,
    printing,
)
from jitlab.fuzz.grammar_library import LIBRARY_PRODUCTIONS
from jitlab.fuzz.grammar_patterns import (
    aliased_globals,
    caught_shape_mismatch,
    class_without_init,
    classmethod_function,
    fresh_inplace_then_state_read,
    keyed_by_constants,
    legacy_new,
    made_requires_grad,
    python_new,
    tensor_queue,
    type_name_cast,
    wrapped_parameter,
)
from jitlab.fuzz.grammar_sizes import aliased_caches, carried_cache, counted_int, size_moves, size_pinned
from jitlab.fuzz.grammar_torch_state import TORCH_STATE_PRODUCTIONS
from jitlab.fuzz.grammar_training import (
    accumulated_step,
    checkpointed_loss,
    hooked_gradients,
    manual_update,
    optimizer_step,
    retained_backward,
)
from jitlab.fuzz.program import Change, Stmt

LEAVES = [
    "h = torch.tanh(h)",
    "h = torch.relu(h) - 0.5",
    "h = h * {c}",
    "h = h + {c}",
    "h = torch.sigmoid(h) * 2.0",
    "h = h.clamp(-1.0, 1.0)",
    "h = torch.sin(h)",
    "h = h.abs() + 0.1",
    "h = -h",
    "h = h.flip(0)",
    "h = h.cumsum(1) * 0.5",
    "h = h.softmax(-1)",
    "h = h - h.mean(0, keepdim=True)",
]


def leaf(ctx: Context) -> Stmt:
    """A one-line tensor operation on h; sometimes an effect (an append or a print) instead."""
    roll = ctx.rng.random()
    if roll < 0.12:
        ctx.define("LOG", "LOG = []")
        return Stmt(f"LOG.append({ctx.const()})", ("append",), ("LOG",))
    if roll < 0.2:
        return Stmt(f'print("arm", {ctx.fresh()})', ("print",))
    return Stmt(ctx.rng.choice(LEAVES).format(c=ctx.const()), ("tensor_ops",))


def _branch(ctx: Context, condition: str, features: tuple[str, ...], defs: tuple[str, ...] = ()) -> Stmt:
    yes, no = leaf(ctx), leaf(ctx)
    text = f"if {condition}:\n    {yes.text}\nelse:\n    {no.text}"
    return Stmt(text, features + yes.features + no.features, defs + yes.defs + no.defs)


# -- control flow ------------------------------------------------------------------------------------


def if_global_flag(ctx: Context) -> Stmt:
    name = f"FLAG{ctx.fresh()}"
    ctx.define(name, f"{name} = {ctx.rng.choice([True, False])}")
    ctx.changes.append(lambda rng: Change(f"{name} = not {name}", ("globals",), (name,), (name,)))
    return _branch(ctx, name, ("control_python", "globals"), (name,))


def global_scale(ctx: Context) -> Stmt:
    name = f"SCALE{ctx.fresh()}"
    ctx.define(name, f"{name} = {ctx.const()}")
    ctx.changes.append(
        lambda rng: Change(f"{name} = {rng.choice([0.1, 0.3, 1.25])}", ("globals",), (name,), (name,))
    )
    return Stmt(f"h = h * {name}", ("globals",), (name,))


def if_default_arg(ctx: Context) -> Stmt:
    return _branch(ctx, f"n > {ctx.rng.choice([1, 2])}", ("control_python", "defaults"))


def loop_default_arg(ctx: Context) -> Stmt:
    i = f"i{ctx.fresh()}"
    return Stmt(f"for {i} in range(n):\n    h = h * 0.5 + {i} * 0.1", ("loop", "defaults"))


def loop_const(ctx: Context) -> Stmt:
    inner = leaf(ctx)
    text = f"for _ in range({ctx.rng.choice([2, 3])}):\n    {inner.text}"
    return Stmt(text, ("loop", *inner.features), inner.defs)


def while_loop(ctx: Context) -> Stmt:
    i = f"i{ctx.fresh()}"
    text = f"{i} = 0\nwhile {i} < {ctx.rng.choice([1, 2, 3])}:\n    h = h + 0.1 * {i}\n    {i} += 1"
    return Stmt(text, ("loop",))


def if_shape(ctx: Context) -> Stmt:
    return _branch(ctx, f"h.shape[0] > {ctx.rng.choice([1, 2, 3])}", ("control_shape",))


def shape_arith(ctx: Context) -> Stmt:
    b = f"b{ctx.fresh()}"
    text = f"{b} = x.shape[0]\nh = h + torch.arange({b}, dtype=h.dtype).unsqueeze(1) * 0.1"
    return Stmt(text, ("control_shape",))


def shape_view(ctx: Context) -> Stmt:
    text = ctx.rng.choice(
        [
            "h = h.reshape(-1).view(x.shape[0], W)",
            "rows, cols = h.shape\nh = h.reshape(rows * cols).view(rows, cols)",
        ]
    )
    return Stmt(text, ("control_shape", "views"))


def if_data(ctx: Context) -> Stmt:
    condition = ctx.rng.choice(["h.sum() > 0", "h.mean() > 0.1", "(h > 0).any()", "h.max().item() > 0.5"])
    return _branch(ctx, condition, ("control_data",))


def data_item(ctx: Context) -> Stmt:
    m = f"m{ctx.fresh()}"
    return Stmt(f"{m} = h.abs().max().item()\nh = h / ({m} + 1.0)", ("control_data",))


def data_log(ctx: Context) -> Stmt:
    ctx.define("LOG", "LOG = []")
    text = 'if h.mean().item() > 0.0:\n    LOG.append("up")\nelse:\n    LOG.append("down")'
    return Stmt(text, ("control_data", "append"), ("LOG",))


# -- functions, closures, arguments ------------------------------------------------------------------


def local_closure(ctx: Context) -> Stmt:
    k = ctx.fresh()
    text = f"c{k} = {ctx.const()}\n\ndef add{k}(t):\n    return t * c{k} + h.shape[1] * 0.01\n\nh = add{k}(h)"
    return Stmt(text, ("closure",))


def global_closure(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"SCALER{k}"
    ctx.define(
        name,
        f"def make_scaler{k}(c):\n    def scale(t):\n        return t * c\n\n    return scale\n\n\n"
        f"{name} = make_scaler{k}({ctx.const()})",
    )
    ctx.changes.append(
        lambda rng: Change(
            f"{name} = make_scaler{k}({rng.choice([0.2, 3.0])})", ("closure",), (name,), (name,)
        )
    )
    return Stmt(f"h = {name}(h)", ("closure", "globals"), (name,))


def nonlocal_counter(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"ACC{k}"
    ctx.define(
        name,
        f"def make_acc{k}():\n    total = 0.0\n\n    def acc(v):\n        nonlocal total\n"
        f"        total += v\n        return total\n\n    return acc\n\n\n{name} = make_acc{k}()",
    )
    return Stmt(f"h = h * (1.0 / (1.0 + {name}(1.0)))", ("closure", "attr_write"), (name,))


def helper_defaults(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"helper{k}"
    ctx.define(name, f"def {name}(t, k=2, *, shift=0.5):\n    return t * k * 0.5 + shift")
    call = ctx.rng.choice(
        [f"{name}(h)", f"{name}(h, 3)", f"{name}(h, shift=-0.25)", f"{name}(h, 1, shift=0.0)"]
    )
    ctx.changes.append(  # the function's defaults are writable: replaced, or changed in place
        lambda rng: rng.choice(
            [
                Change(f"{name}.__defaults__ = ({rng.choice([1, 4])},)", ("defaults",), (name,)),
                Change(f'{name}.__kwdefaults__["shift"] = {rng.choice([0.0, 1.5])}', ("defaults",), (name,)),
            ]
        )
    )
    return Stmt(f"h = {call}", ("defaults",), (name,))


def helper_varargs(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"combine{k}"
    ctx.define(
        name,
        f"def {name}(*ts, **opts):\n    out = ts[0]\n    for t in ts[1:]:\n        out = out + t * 0.5\n"
        '    if opts.get("neg", False):\n        out = -out\n    return out',
    )
    return Stmt(f"h = {name}(h, x, neg={ctx.rng.choice([True, False])})", ("varargs",), (name,))


def extra_args(ctx: Context) -> Stmt:
    t = f"t{ctx.fresh()}"
    return Stmt(f"for {t} in extra:\n    h = h + {t}", ("varargs", "loop"))


def kw_options(ctx: Context) -> Stmt:
    return Stmt('if options.get("double", False):\n    h = h * 2.0', ("varargs", "control_python"))


# -- containers and dataclasses ----------------------------------------------------------------------


def local_list(ctx: Context) -> Stmt:
    p = f"parts{ctx.fresh()}"
    return Stmt(f"{p} = [h, h * 0.5, h + 1.0]\nh = {p}[0] + {p}[-1] * 0.1", ("containers",))


def local_dict(ctx: Context) -> Stmt:
    k = ctx.fresh()
    text = (
        f'd{k} = {{"a": h, "b": h.sum(1, keepdim=True)}}\nfor key{k} in d{k}:\n    h = h + d{k}[key{k}] * 0.1'
    )
    return Stmt(text, ("containers", "loop"))


def local_tuple(ctx: Context) -> Stmt:
    k = ctx.fresh()
    return Stmt(f"a{k}, b{k} = h * 0.5, h.shape\nh = a{k} + b{k}[1] * 0.01", ("containers",))


def global_config(ctx: Context) -> Stmt:
    name = f"CFG{ctx.fresh()}"
    ctx.define(name, f'{name} = {{"alpha": {ctx.const()}, "on": True}}')
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f'{name}["alpha"] = {rng.choice([0.1, 1.1])}', ("containers",), (name,)),
                Change(f'{name}["on"] = not {name}["on"]', ("containers",), (name,)),
            ]
        )
    )
    return Stmt(f'if {name}["on"]:\n    h = h * {name}["alpha"]', ("containers", "globals"), (name,))


def global_list(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"SIZES{k}"
    ctx.define(name, f"{name} = [1, 2, 3]")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}.append(4)", ("containers",), (name,)),
                # the program may pop items too: a change never raises on an empty list
                Change(f"if {name}:\n    {name}[0] = 5", ("containers",), (name,)),
                Change(f"if {name}:\n    {name}.pop()", ("containers",), (name,)),
            ]
        )
    )
    # the loop may change the list it iterates: a list iterator then sees the change
    change = ctx.rng.choice(
        [
            "",
            f"\n    if s{k} < 3:\n        {name}.append(s{k} + 10)",
            f"\n    if len({name}) > 2:\n        {name}.pop()",
            f"\n    {name}[-1] = s{k} + 1",
        ]
    )
    text = f"for s{k} in {name}:\n    h = h + s{k} * 0.01" + change
    return Stmt(text, ("containers", "globals", "loop"), (name,))


def global_dataclass(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"OPTS{k}"
    ctx.define(
        name,
        f"@dataclasses.dataclass\nclass Opts{k}:\n    scale: float = 0.5\n    bias: float = 0.1\n\n\n"
        f"{name} = Opts{k}()",
    )
    ctx.changes.append(
        lambda rng: Change(f"{name}.scale = {rng.choice([0.2, 1.5])}", ("dataclass", "attr_write"), (name,))
    )
    return Stmt(f"h = h * {name}.scale + {name}.bias", ("dataclass", "globals"), (name,))


def local_dataclass(ctx: Context) -> Stmt:
    k = ctx.fresh()
    name = f"Pair{k}"
    ctx.define(name, f"@dataclasses.dataclass\nclass {name}:\n    a: torch.Tensor\n    b: float = 1.0")
    return Stmt(f"p{k} = {name}(h, {ctx.const()})\nh = p{k}.a * p{k}.b", ("dataclass",), (name,))


def class_lookup(ctx: Context) -> Stmt:
    """A class attribute or method read through a new object; between calls the class changes: an
    attribute rebound on the class or shadowed by its subclass, a method or `__init__` replaced."""
    k = ctx.fresh()
    base, sub = f"Rule{k}", f"SubRule{k}"
    ctx.define(
        base,
        f"class {base}:\n    factor = 0.5\n\n    def __init__(self):\n        self.bias = 0.1\n\n"
        f"    def apply(self, t):\n        return t * self.factor + self.bias\n\n\nclass {sub}({base}):\n    pass",
    )
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{base}.factor = {rng.choice([0.25, 1.5])}", ("classes",), (base,)),
                Change(f"{sub}.factor = {rng.choice([2.0, 0.75])}", ("classes",), (base,)),
                Change(f"{base}.apply = lambda self, t: t - self.factor", ("classes",), (base,)),
                Change(
                    f"{base}.__init__ = lambda self: setattr(self, 'bias', {rng.choice([0.3, -0.2])})",
                    ("classes",),
                    (base,),
                ),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f"h = {sub}().apply(h)",
            f"h = h * {sub}().factor",
            f"r{k} = {base}()\nh = r{k}.apply(h) + r{k}.bias",
        ]
    )
    return Stmt(text, ("classes",), (base,))


# -- in-place operations and views -------------------------------------------------------------------


def inplace(ctx: Context) -> Stmt:
    c = ctx.const()
    text = ctx.rng.choice(
        [
            f"h = h.clone()\nh.mul_({c})",
            f"h = h.clone()\nh[0].add_({c})",
            "h = h.clone(memory_format=torch.contiguous_format)\nh.view(-1)[:2].zero_()",
            f"h = h.clone()\nh.t()[0].sub_({c})",
            f"h = h * 1.0\nh[:, 0] = {c}",
        ]
    )
    return Stmt(text, ("inplace", "views"))


def views(ctx: Context) -> Stmt:
    text = ctx.rng.choice(
        [
            "h = h.t().contiguous().t()",
            "h = h.unsqueeze(0).squeeze(0)",
            "h = h.expand(2, -1, -1).sum(0) * 0.5",
            "h = h.transpose(0, 1).transpose(0, 1) + 0.0",
            "h = h[:, :].narrow(1, 0, W)",
        ]
    )
    return Stmt(text, ("views",))


def input_inplace(ctx: Context) -> Stmt:
    # also through operations that give the argument's own memory back, then a decision on it
    change = ctx.rng.choice(["x.add_(0.5)", "x.contiguous().mul_(-1.0)", "x.to(x.dtype).sub_(0.25)"])
    decide = ctx.rng.choice(["", "\nif x.sum() > 0:\n    h = h * 1.5"])
    return Stmt(f"if not x.requires_grad:\n    {change}{decide}", ("inplace",))


# -- side effects ------------------------------------------------------------------------------------


def buffer_update(ctx: Context) -> Stmt:
    if ctx.kind == "module":
        text = ctx.rng.choice(
            [
                "self.count.add_(1.0)\nh = h + self.count * 0.01",
                "with torch.no_grad():\n    self.ema.mul_(0.9).add_(h.mean(0) * 0.1)\nh = h + self.ema",
            ]
        )
        return Stmt(text, ("buffer",))
    name = f"BUF{ctx.fresh()}"
    ctx.define(name, f"{name} = torch.zeros(W)")
    return Stmt(f"{name}.add_(h.detach().mean(0).float())\nh = h + {name}.to(h.dtype)", ("buffer",), (name,))


# -- modules -----------------------------------------------------------------------------------------


def module_attr(ctx: Context) -> Stmt:
    roll = ctx.rng.random()
    if roll < 0.3:
        ctx.changes.append(lambda rng: Change(f"model.mode = {rng.choice(['a', 'b'])!r}", ("attr_write",)))
        return _branch(ctx, 'self.mode == "a"', ("module", "control_python"))
    if roll < 0.55:
        ctx.changes.append(lambda rng: Change(f"model.scale = {rng.choice([0.1, 0.9])}", ("attr_write",)))
        return Stmt("h = h * self.scale", ("module",))
    if roll < 0.8:
        ctx.changes.append(lambda rng: Change(rng.choice(["model.train()", "model.eval()"]), ("train_eval",)))
        return _branch(ctx, "self.training", ("module", "control_python", "train_eval"))
    return Stmt("self.history.append(h.shape[0])\nself.last = h.detach()", ("module", "attr_write"))


def submodule(ctx: Context) -> Stmt:
    text = ctx.rng.choice(
        ["h = self.fc(h)", "h = self.block(h)", "for layer in self.layers:\n    h = layer(h)"]
    )
    return Stmt(text, ("submodule",))


def weight(ctx: Context) -> Stmt:
    ctx.define(
        "WEIGHT",
        "WEIGHT = (torch.randn(W, W, generator=torch.Generator().manual_seed(1)) * 0.3).requires_grad_()",
    )
    return Stmt("h = h @ WEIGHT.to(h.dtype)", ("globals",), ("WEIGHT",))


# -- randomness, exceptions, autograd ----------------------------------------------------------------


def random_draw(ctx: Context) -> Stmt:
    options = [
        "h = h + 0.01 * torch.randn_like(h)",
        "h = h * (0.5 + random.random())",
        "h = torch.nn.functional.dropout(h, 0.5, training=True)",
        "if random.random() > 0.5:\n    h = h + 1.0",
    ]
    if ctx.kind == "module":
        options.append("h = self.drop(h)")
    return Stmt(ctx.rng.choice(options), ("random",))


def caught_exception(ctx: Context) -> Stmt:
    k = ctx.fresh()
    roll = ctx.rng.random()
    if roll < 0.5:
        ctx.define("LOG", "LOG = []")
        text = (
            f"try:\n    if h.shape[0] > {ctx.rng.choice([1, 2, 3])}:\n"
            f'        raise ValueError(f"rows {{h.shape[0]}}")\n    h = h + 1.0\n'
            f"except ValueError as e{k}:\n    LOG.append(str(e{k}))\n    h = h * 0.5"
        )
        return Stmt(text, ("exceptions", "append"), ("LOG",))
    if roll < 0.8:
        ctx.define("EMPTY", "EMPTY = {}")
        text = f'try:\n    v{k} = EMPTY["missing"]\nexcept KeyError:\n    v{k} = 0.5\nh = h * v{k}'
        return Stmt(text, ("exceptions",), ("EMPTY",))
    return Stmt("try:\n    h = h.view(7, 3)\nexcept RuntimeError:\n    h = h * 1.0", ("exceptions",))


def opaque_raise(ctx: Context) -> Stmt:
    """A helper marked `torch.compiler.disable` (it runs eagerly: a graph break) that raises on the
    data, caught by the caller, sometimes with the message, which depends on the data, logged."""
    k = ctx.fresh()
    name = f"opaque{k}"
    threshold = ctx.rng.choice([-1.0, 0.0, 1.0])
    ctx.define(
        name,
        f"@torch.compiler.disable\ndef {name}(t):\n    if t.sum() > {threshold}:\n"
        f'        raise ValueError(f"sum {{float(t.sum()):.2f}}")\n    if t.shape[0] > 3:\n'
        f'        raise TypeError("rows")\n    return t * 2',
    )
    if ctx.rng.random() < 0.5:
        ctx.define("LOG", "LOG = []")
        text = (
            f"try:\n    h = {name}(h)\nexcept (ValueError, TypeError) as e{k}:\n"
            f'    LOG.append(f"{{type(e{k}).__name__}} {{e{k}}}")\n    h = h - 1.0'
        )
        return Stmt(text, ("exceptions", "control_data", "append"), (name, "LOG"))
    text = f"try:\n    h = {name}(h)\nexcept (ValueError, TypeError):\n    h = h - 1.0"
    return Stmt(text, ("exceptions", "control_data"), (name,))


def raised_exception(ctx: Context) -> Stmt:
    name = f"FAIL{ctx.fresh()}"
    ctx.define(name, f"{name} = False")
    ctx.changes.append(lambda rng: Change(f"{name} = not {name}", ("exceptions",), (name,), (name,)))
    return Stmt(
        f'if {name}:\n    raise RuntimeError("failing on purpose ({name})")', ("exceptions",), (name,)
    )


def inner_autograd(ctx: Context) -> Stmt:
    k = ctx.fresh()
    text = ctx.rng.choice(
        [
            f"with torch.no_grad():\n    s{k} = h * 2\nh = h + s{k}",
            f"if h.requires_grad:\n    (g{k},) = torch.autograd.grad(h.sum(), [h], retain_graph=True)\n"
            f"    h = h + g{k} * 0.01",
        ]
    )
    return Stmt(text, ("autograd",))


#: productions and their weights; module-only ones are skipped for functions
PRODUCTIONS: list[tuple[Callable[[Context], Stmt], float, bool]] = [
    (leaf, 3.0, False),
    (if_global_flag, 1.0, False),
    (global_scale, 1.0, False),
    (if_default_arg, 0.6, False),
    (loop_default_arg, 0.6, False),
    (loop_const, 0.8, False),
    (while_loop, 0.5, False),
    (if_shape, 0.8, False),
    (shape_arith, 0.6, False),
    (shape_view, 0.5, False),
    (if_data, 0.8, False),
    (data_item, 0.6, False),
    (data_log, 0.4, False),
    (local_closure, 0.6, False),
    (global_closure, 0.6, False),
    (nonlocal_counter, 0.3, False),
    (helper_defaults, 0.6, False),
    (helper_varargs, 0.5, False),
    (extra_args, 0.5, False),
    (kw_options, 0.5, False),
    (local_list, 0.5, False),
    (local_dict, 0.5, False),
    (local_tuple, 0.4, False),
    (global_config, 0.7, False),
    (global_list, 0.6, False),
    (iterated_by_builtin, 0.5, False),
    (wrapped_parameter, 0.3, False),
    (type_name_cast, 0.3, False),
    (caught_shape_mismatch, 0.3, False),
    (made_requires_grad, 0.3, False),
    (classmethod_function, 0.3, False),
    (aliased_globals, 0.3, False),
    (fresh_inplace_then_state_read, 0.3, False),
    (legacy_new, 0.3, False),
    (tensor_queue, 0.3, False),
    (keyed_by_constants, 0.3, False),
    (class_without_init, 0.3, False),
    (python_new, 0.3, False),
    *LIBRARY_PRODUCTIONS,  # grammar_library.py
    *TORCH_STATE_PRODUCTIONS,  # grammar_torch_state.py
    (global_dataclass, 0.6, False),
    (local_dataclass, 0.4, False),
    (class_lookup, 0.4, False),
    (inplace, 0.8, False),
    (views, 0.6, False),
    (input_inplace, 0.3, False),
    (printing, 0.8, False),
    (appending, 0.8, False),
    (item_write, 0.6, False),
    (effect_then_mutate, 0.6, False),
    (outside_removal, 0.5, False),
    (changed_list_read, 0.5, False),
    (changed_tensor_list_read, 0.4, False),
    (keyed_additions, 0.5, False),
    (global_write, 0.4, False),
    (outside_array, 0.4, False),
    (fresh_array, 0.4, False),
    (buffer_update, 0.6, False),
    (module_attr, 1.5, True),
    (submodule, 1.5, True),
    (weight, 0.6, False),
    (random_draw, 0.5, False),
    (caught_exception, 0.5, False),
    (raised_exception, 0.3, False),
    (opaque_raise, 0.3, False),
    (inner_autograd, 0.25, False),
    (size_moves, 0.6, False),  # grammar_sizes.py (issue 44)
    (size_pinned, 0.4, False),
    (carried_cache, 0.4, False),
    (aliased_caches, 0.3, False),
    (counted_int, 0.4, False),
    (optimizer_step, 1.0, False),
    (manual_update, 0.4, False),
    (accumulated_step, 0.3, False),
    (hooked_gradients, 0.3, False),
    (retained_backward, 0.2, False),
    (checkpointed_loss, 0.2, False),
]
