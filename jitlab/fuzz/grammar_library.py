"""Fuzzer productions for what model libraries do around their tensor code, the forms jitlab.jit
learned from transformers, timm, torchvision and ParityBench: a `contextlib.contextmanager` that
changes outside state, environment variables read with `os.environ.get`, `OrderedDict`s and
attribute-dicts made in the call, torch distributions made from graph values, grad mode switched by
plain calls, helpers decorated with `torch.no_grad()`, attributes set on tensors the call made,
forward hooks on an outside module, `copy.deepcopy` of a config, copies of objects whose fields
live in slots or an instance dict, outside lists handed to native code inside new ones, callables
kept outside (partials, bound methods), iterators stepped between calls, and `Counter`s and
`defaultdict`s read whole.

Between calls the outside values they read change (the environment variable, the context's scale,
the hook's scale, the hooks themselves, the distribution's scale, the config, the copied object), so
that a cached capture's guards matter. Each statement reads and writes `h` as every production does
(grammar.py)."""

from __future__ import annotations

from collections.abc import Callable

from jitlab.fuzz.context import Context, rebind
from jitlab.fuzz.program import Change, Stmt

FEATURE = "library"


def context_manager(ctx: Context) -> Stmt:
    """A generator context manager that pushes onto an outside list while the block runs and yields
    a value scaled by an outside number."""
    k = ctx.fresh()
    name, scale, stack = f"scaled{k}", f"CSCALE{k}", f"CSTACK{k}"
    ctx.define(scale, f"{scale} = 0.5")
    ctx.define(stack, f"{stack} = []")
    ctx.define(
        name,
        f"@contextlib.contextmanager\ndef {name}(v):\n    {stack}.append(v)\n    try:\n"
        f"        yield v * {scale}\n    finally:\n        {stack}.pop()",
    )
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                rebind(rng, scale, (FEATURE, "globals")),
                Change(f"{stack}.append({rng.choice([1.0, 3.0])})", (FEATURE, "containers"), (stack,)),
                Change(f"{stack}.clear()", (FEATURE, "containers"), (stack,)),
            ]
        )
    )
    text = f"with {name}(2.0) as s{k}:\n    h = h * s{k} + len({stack}) * 0.1"
    return Stmt(text, (FEATURE, "globals"), (scale, stack, name))


def environment_flag(ctx: Context) -> Stmt:
    """An environment variable read with `os.environ.get` (set to "0" when the program loads, so both
    runs of a program start alike), turned on and off between calls."""
    var = f"JITLAB_FUZZ_FLAG_{ctx.fresh()}"
    ctx.define(var, f'os.environ["{var}"] = "0"')
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f'os.environ["{var}"] = "1"', (FEATURE,), (var,)),
                Change(f'os.environ["{var}"] = "{rng.choice("01")}"', (FEATURE,), (var,)),
                Change(f'os.environ.pop("{var}", None)', (FEATURE,), (var,)),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f'if os.environ.get("{var}", "0") == "1":\n    h = h * 2.0\nelse:\n    h = h - 0.25',
            f'h = h + float(os.environ.get("{var}", "3")) * 0.5',
        ]
    )
    return Stmt(text, (FEATURE,), (var,))


def made_mappings(ctx: Context) -> Stmt:
    """An `OrderedDict` and an attribute-dict (a dict subclass whose `__getattr__` reads items) made
    in the call, filled from `h`, read back, and sometimes kept in an outside list."""
    k = ctx.fresh()
    kind, kept = f"AttrDict{k}", f"MKEPT{k}"
    ctx.define(
        kind,
        f"class {kind}(dict):\n    def __getattr__(self, name):\n        try:\n            return self[name]\n"
        "        except KeyError:\n            raise AttributeError(name)",
    )
    ctx.define(kept, f"{kept} = []")
    ctx.changes.append(lambda rng: Change(f"{kept}.clear()", (FEATURE, "containers"), (kept,)))
    text = ctx.rng.choice(
        [
            f"od{k} = collections.OrderedDict()\nod{k}['a'] = h * 0.5\nod{k}['b'] = h.sum(0)\n"
            f"h = od{k}['a'] + od{k}['b'] * 0.1 + len(od{k})",
            f"ad{k} = {kind}(scale=0.5, shift=h.mean(0))\nh = h * ad{k}.scale + ad{k}.shift\n"
            f"if hasattr(ad{k}, 'missing'):\n    h = h * 0.0",
            f"od{k} = collections.OrderedDict(out=h.detach() * 2)\n{kept}.append(od{k})\n"
            f"h = h + {kept}[-1]['out'] * 0.1",
        ]
    )
    return Stmt(text, (FEATURE, "containers"), (kind, kept))


def distribution(ctx: Context) -> Stmt:
    """A torch distribution made from graph values and an outside scale, read by `log_prob`, `mean`
    and `entropy`. The scale stays positive: a program that raises where it does not mean to tests
    little after that call (tests/jit has the validation that raises)."""
    name = f"SIGMA{ctx.fresh()}"
    ctx.define(name, f"{name} = 0.5")
    ctx.changes.append(lambda rng: rebind(rng, name, (FEATURE, "globals"), (0.25, 2.0, 1.5)))
    k = ctx.fresh()
    text = ctx.rng.choice(
        [
            f"d{k} = torch.distributions.Normal(h.tanh(), {name})\nh = d{k}.log_prob(h * 0.5) + d{k}.mean * 0.1",
            f"d{k} = torch.distributions.Categorical(logits=h * {name})\nh = h + d{k}.entropy().unsqueeze(-1) * 0.1",
        ]
    )
    return Stmt(text, (FEATURE, "globals"), (name,))


def grad_switch(ctx: Context) -> Stmt:
    """Grad mode switched off and on by plain calls (`torch.set_grad_enabled(False)`), and a helper
    decorated with `torch.no_grad()`: what requires grad after the call tells the two apart."""
    k = ctx.fresh()
    helper = f"detached{k}"
    ctx.define(helper, f"@torch.no_grad()\ndef {helper}(t):\n    return t * 2.0")
    text = ctx.rng.choice(
        [
            f"torch.set_grad_enabled(False)\nw{k} = h * 2.0\ntorch.set_grad_enabled(True)\nh = h + w{k}",
            f"h = h + {helper}(h)",
            f"with torch.set_grad_enabled(False):\n    w{k} = h.sigmoid()\nh = h * w{k}",
        ]
    )
    return Stmt(text, (FEATURE, "autograd"), (helper,))


def tensor_attribute(ctx: Context) -> Stmt:
    """A plain attribute set on a tensor the call made (Paddle's `stop_gradient`), read back; the
    value comes from an outside number changed between calls."""
    name = f"TAG{ctx.fresh()}"
    ctx.define(name, f"{name} = 0.5")
    ctx.changes.append(lambda rng: rebind(rng, name, (FEATURE, "globals")))
    k = ctx.fresh()
    text = f"t{k} = h * 1.0\nt{k}.tag = {name}\nh = t{k} + t{k}.tag"
    return Stmt(text, (FEATURE, "attr_write"), (name,))


def forward_hook(ctx: Context) -> Stmt:
    """An outside module with a forward hook whose scale is an outside number; between calls the
    scale changes, the hooks are removed, or a second hook is added."""
    k = ctx.fresh()
    module, scale = f"HOOKED{k}", f"HSCALE_{k}"
    ctx.define(scale, f"{scale} = 0.5")
    ctx.define(
        module,
        f"torch.manual_seed({k})\n{module} = nn.Linear(W, W)\n"
        f"{module}.register_forward_hook(lambda m, inputs, out: out * {scale})",
    )
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                rebind(rng, scale, (FEATURE, "globals")),
                Change(f"{module}._forward_hooks.clear()", (FEATURE, "callbacks"), (module,)),
                Change(
                    f"{module}.register_forward_hook(lambda m, inputs, out: out + 1.0)",
                    (FEATURE, "callbacks"),
                    (module,),
                ),
            ]
        )
    )
    # the module stays float32 when `model.to(torch.float64)` changes the program's dtype
    return Stmt(f"h = {module}(h.float()).to(h.dtype)", (FEATURE, "callbacks"), (scale, module))


def deepcopy_config(ctx: Context) -> Stmt:
    """`copy.deepcopy` of an outside config dict, changed in the copy and read; between calls the
    config changes."""
    name = f"CONF{ctx.fresh()}"
    ctx.define(name, f'{name} = {{"scale": 0.5, "layers": [1, 2]}}')
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f'{name}["scale"] = {rng.choice([0.25, 2.0])}', (FEATURE, "containers"), (name,)),
                Change(f'{name}["layers"].append(3)', (FEATURE, "containers"), (name,)),
            ]
        )
    )
    k = ctx.fresh()
    text = (
        f'c{k} = copy.deepcopy({name})\nc{k}["scale"] = c{k}["scale"] * 2\n'
        f'h = h * c{k}["scale"] + len(c{k}["layers"]) * 0.1'
    )
    return Stmt(text, (FEATURE, "containers"), (name,))


#: classes whose objects `copied_object` copies: fields in slots, in a slotted dataclass, in slots
#: beside an instance dict, and in an instance dict alone (`copy` reduces them all natively)
COPIED_CLASSES = {
    "slots": 'class {cls}:\n    __slots__ = ("scale", "bias")\n\n'
    "    def __init__(self):\n        self.scale = 0.5\n        self.bias = 0.1",
    "slotted dataclass": "@dataclasses.dataclass(slots=True)\nclass {cls}:\n    scale: float = 0.5\n"
    "    bias: float = 0.1",
    "slots and dict": 'class {cls}:\n    __slots__ = ("scale", "__dict__")\n\n'
    "    def __init__(self):\n        self.scale = 0.5\n        self.bias = 0.1",
    "dict": "class {cls}:\n    def __init__(self):\n        self.scale = 0.5\n        self.bias = 0.1",
}


def copied_object(ctx: Context) -> Stmt:
    """An outside object copied with `copy.copy` or `copy.deepcopy` (native code reads it whole:
    its instance dict and its slots) and read through the copy; between calls a field of the
    original changes."""
    k = ctx.fresh()
    name, cls = f"HELD{k}", f"Held{k}"
    layout = ctx.rng.choice(sorted(COPIED_CLASSES))
    ctx.define(name, COPIED_CLASSES[layout].format(cls=cls) + f"\n\n\n{name} = {cls}()")
    ctx.changes.append(
        lambda rng: Change(
            f"{name}.{rng.choice(['scale', 'bias'])} = {rng.choice([0.25, 2.0, -1.0])}",
            (FEATURE, "attr_write"),
            (name,),
        )
    )
    copier = ctx.rng.choice(["copy.copy", "copy.deepcopy"])
    return Stmt(f"c{k} = {copier}({name})\nh = h * c{k}.scale + c{k}.bias", (FEATURE, "classes"), (name,))


#: native code handed an outside list inside a list or dict the call made (`{name}`)
REACHED_FORMS = (
    "h = h * torch.tensor([{name}, [0.5, 0.5]]).sum()",
    'h = h + float("{{v[0]}}".format_map({{"v": {name}}}))',
    "h = h * sum(map(sum, [{name}, [0.25]]))",
)


def reached_through_made(ctx: Context) -> Stmt:
    """An outside list that native code reads inside a value the call made (the list it is handed is
    new, the list inside it is not); between calls an item of the outside list changes."""
    name = f"PAIR{ctx.fresh()}"
    ctx.define(name, f"{name} = [0.5, 1.5]")
    ctx.changes.append(
        lambda rng: Change(
            f"{name}[{rng.choice([0, 1])}] = {rng.choice([0.25, 2.0, -1.0])}",
            (FEATURE, "containers"),
            (name,),
        )
    )
    text = ctx.rng.choice(REACHED_FORMS).format(name=name)
    return Stmt(text, (FEATURE, "containers"), (name,))


def outside_callable(ctx: Context) -> Stmt:
    """A callable kept outside the call and called in it: a `functools.partial` binding an outside
    object, or a bound method of one; between calls a field of that object changes."""
    k = ctx.fresh()
    holder, cls = f"HOLDER{k}", f"Holder{k}"
    ctx.define(
        holder,
        f"class {cls}:\n    def __init__(self):\n        self.scale = 0.5\n\n"
        f"    def apply(self, t):\n        return t * self.scale\n\n\n"
        f"def scaled{k}(holder, t):\n    return t * holder.scale + 0.1\n\n\n{holder} = {cls}()",
    )
    name = f"CALLABLE{k}"
    made = ctx.rng.choice([f"functools.partial(scaled{k}, {holder})", f"{holder}.apply"])
    ctx.define(name, f"{name} = {made}")
    ctx.changes.append(
        lambda rng: Change(
            f"{holder}.scale = {rng.choice([0.25, 2.0, -1.0])}", (FEATURE, "attr_write"), (holder,)
        )
    )
    return Stmt(f"h = {name}(h)", (FEATURE, "classes"), (holder, name))


def outside_iterator(ctx: Context) -> Stmt:
    """An iterator kept between calls and stepped in the call (a step counter, values handed out
    one per call): where it stands is state outside the graph."""
    name = f"STEPS{ctx.fresh()}"
    made = ctx.rng.choice(
        ["itertools.count()", "itertools.cycle([0.5, 1.5, 2.5])", "iter([0.5 * i for i in range(1000)])"]
    )
    ctx.define(name, f"{name} = {made}")
    return Stmt(f"h = h * (1.0 + 0.1 * next({name}))", (FEATURE, "globals"), (name,))


#: outside container subclasses native code reads whole (`{name}`)
SUBCLASS_FORMS = {
    "collections.Counter(a=1, b=2)": ("h = h * (1.0 + 0.1 * {name}.total())", "{name}.update(a=3)"),
    "collections.defaultdict(float, a=0.5)": ("h = h * sum({name}.values())", '{name}["b"] = 2.0'),
}


def container_subclass(ctx: Context) -> Stmt:
    """An outside `Counter` or `defaultdict` whose items native code reads (`Counter.total()`,
    `sum(d.values())`); between calls it gains or changes an item."""
    name = f"TALLY{ctx.fresh()}"
    made = ctx.rng.choice(sorted(SUBCLASS_FORMS))
    text, change = SUBCLASS_FORMS[made]
    ctx.define(name, f"{name} = {made}")
    ctx.changes.append(lambda rng: Change(change.format(name=name), (FEATURE, "containers"), (name,)))
    return Stmt(text.format(name=name), (FEATURE, "containers"), (name,))


#: this module's productions with their weights, in the table of grammar.py (`PRODUCTIONS`)
LIBRARY_PRODUCTIONS: list[tuple[Callable[[Context], Stmt], float, bool]] = [
    (context_manager, 0.3, False),
    (environment_flag, 0.3, False),
    (made_mappings, 0.3, False),
    (distribution, 0.3, False),
    (grad_switch, 0.3, False),
    (tensor_attribute, 0.3, False),
    (forward_hook, 0.3, False),
    (deepcopy_config, 0.3, False),
    (copied_object, 0.3, False),
    (reached_through_made, 0.3, False),
    (outside_callable, 0.3, False),
    (outside_iterator, 0.2, False),
    (container_subclass, 0.2, False),
]
