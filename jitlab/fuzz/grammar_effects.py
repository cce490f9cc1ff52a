"""Fuzzer productions whose statements act on the world outside the call: prints, appends to outside
lists, item and key writes, removals, global writes. Each reads and writes `h` as every production does
(grammar.py), and registers the `Change`s between calls that make a cached capture's guards matter.
"""

from __future__ import annotations

from jitlab.fuzz.context import Context
from jitlab.fuzz.program import Change, Stmt


def printing(ctx: Context) -> Stmt:
    text = ctx.rng.choice(
        [
            'print("h", tuple(h.shape))',
            'print(f"sum {h.sum().item():.2f}")',
            'print("n =", n)',
            "print(h.detach().round(decimals=2))",
        ]
    )
    return Stmt(text, ("print",))


def appending(ctx: Context) -> Stmt:
    ctx.define("LOG", "LOG = []")
    text = ctx.rng.choice(
        [
            "LOG.append(h.shape[0])",
            "LOG.append(h.detach().sum(0))",
            'LOG.extend(["step", n])',
            "LOG.append(len(extra))",
            # read back in the same call, after the append: its length, and the item just appended
            "LOG.append(int(h.detach().argmax()))\nh = h + len(LOG) * 0.01 + LOG[-1] * 0.1",
            "LOG.append(h.shape[0])\nif len(LOG) > 3:\n    del LOG[0]\nh = h * (len(LOG) % 3 + 1)",
        ]
    )
    return Stmt(text, ("append",), ("LOG",))


def effect_then_mutate(ctx: Context) -> Stmt:
    """An effect that must show the value as it was, followed by an in-place change of it."""
    ctx.define("LOG", "LOG = []")
    text = ctx.rng.choice(
        [
            "h = h.clone()\nLOG.append(h)\nh.add_(1.0)",
            "h = h.clone()\nprint(h.detach().round(decimals=2))\nh.mul_(2.0)",
            "h = h.clone()\nLOG.append(h.detach())\nh[0].zero_()",
            "parts = [h.shape[0]]\nLOG.append(parts)\nparts.append(n)",
        ]
    )
    return Stmt(text, ("append", "inplace"), ("LOG",))


def outside_removal(ctx: Context) -> Stmt:
    """Removing from outside containers during the call."""
    ctx.define("LOG", "LOG = []")
    name = f"STATS{ctx.fresh()}"
    ctx.define(name, f'{name} = {{"rows": 0, "seen": 1}}')
    text = ctx.rng.choice(
        [
            "if len(LOG) > 3:\n    LOG.clear()",
            f'{name}.pop("seen", None)\nh = h + len({name}) * 0.1',
            "if LOG:\n    LOG.pop()",
            f'{name}["rows"] += h.shape[0]\nh = h + {name}["rows"] * 0.01',
        ]
    )
    return Stmt(text, ("attr_write", "containers"), ("LOG", name))


def changed_list_read(ctx: Context) -> Stmt:
    """An outside list changed other than by appends (a slice deleted, `pop`, `sort`, `remove`, an
    item write, `reverse`) and read in the same call; between calls its items and length change."""
    k = ctx.fresh()
    name = f"WINDOW{k}"
    ctx.define(name, f"{name} = [3, 1, 2]")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}.append({rng.randint(0, 5)})", ("containers",), (name,)),
                Change(f"{name}[:] = {name}[::-1]", ("containers",), (name,)),
                Change(f"{name}[:] = [{rng.randint(0, 5)}, {rng.randint(0, 5)}]", ("containers",), (name,)),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f"{name}.append(int(h.detach().argmax()))\nif len({name}) > 4:\n"
            f"    del {name}[: len({name}) - 4]\nh = h + sum({name}) * 0.1",
            f"if {name}:\n    h = h * ({name}.pop(0) % 3 + 1)\n{name}.append(h.shape[0])\n"
            f"h = h + len({name}) * 0.01",
            f"{name}.sort()\nif {name}:\n    h = h + {name}[0] * 0.1 - {name}[-1] * 0.01",
            f"{name}.append(h.shape[0])\n{name}.remove({name}[0])\nfor w{k} in {name}:\n    h = h + w{k} * 0.01",
            f"if {name}:\n    {name}[0] = {name}[0] % 7 + 1\nh = h + sum({name}) * 0.01",
            f"{name}.reverse()\nif {name}:\n    h = h + {name}[0] * 0.1",
        ]
    )
    return Stmt(text, ("containers",), (name,))


def changed_tensor_list_read(ctx: Context) -> Stmt:
    """An outside list of tensors written in the call (an item replaced by one computed from `h`, two
    swapped, the tail deleted, the order reversed) and read after the change; between calls an item
    is replaced, changed in place, appended, or the same tensor put in two places."""
    k = ctx.fresh()
    name = f"PARTS{k}"
    ctx.define(name, f"{name} = [torch.ones(2), torch.full((2,), 0.5), torch.arange(2.0)]")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{name}[0] = torch.full((2,), {rng.choice([0.25, 2.0])})", ("containers",), (name,)),
                Change(f"{name}[-1].mul_(0.5)", ("containers", "inplace"), (name,)),
                Change(f"{name}.append(torch.ones(2) * {rng.randint(1, 3)})", ("containers",), (name,)),
                Change(
                    f"{name}[:] = [{name}[0], {name}[0], {name}[-1]]", ("containers", "aliasing"), (name,)
                ),
            ]
        )
    )
    text = ctx.rng.choice(
        [
            f"{name}[0] = {name}[0] * 0.5 + h.detach().mean()\nh = h + {name}[0].sum() * 0.1",
            f"{name}[0], {name}[1] = {name}[1], {name}[0]\nh = h * ({name}[0].sum() * 0.1 + 1)",
            f"{name}[1] = -{name}[1]\nfor p{k} in {name}:\n    h = h + p{k}.sum() * 0.01",
            f"del {name}[3:]\nh = h + len({name}) * 0.01 + {name}[-1].mean() * 0.1",
            f"{name}.reverse()\nh = h + {name}[0].sum() * 0.1 - {name}[1].sum() * 0.01",
        ]
    )
    return Stmt(text, ("containers",), (name,))


def item_write(ctx: Context) -> Stmt:
    name = f"STATS{ctx.fresh()}"
    ctx.define(name, f"{name} = {{}}")
    text = ctx.rng.choice(
        [
            f'{name}["rows"] = h.shape[0]',
            f'{name}["calls"] = {name}.get("calls", 0) + 1',
            f'{name}["last"] = h.detach()',
        ]
    )
    return Stmt(text, ("attr_write",), (name,))


def keyed_additions(ctx: Context) -> Stmt:
    """Adding keys to an outside dict or set, then reading its size in the same call; between calls
    keys are removed, so a key added may or may not have been there."""
    name = f"SEEN{ctx.fresh()}"
    if ctx.rng.random() < 0.5:
        ctx.define(name, f"{name} = {{}}")
        removals = [
            f"{name}.pop(0, None)",
            f"{name}.clear()",
            f"{name}[1] = 5",
            f"{name}.clear(); {name}[{{}}] = 1",
        ]
        text = ctx.rng.choice(
            [
                f"{name}[int(h.detach().argmax()) % 3] = n\nh = h * (len({name}) % 4 + 1)",
                f"k = h.shape[0] % 3\n{name}[k] = {name}.get(k, 0) + 1\nh = h + {name}[k] * 0.1 + len({name})",
                f'{name}["rows"] = h.shape[0]\nif {name}:\n    h = h + len({name})',
            ]
        )
    else:
        ctx.define(name, f"{name} = set()")
        removals = [
            f"{name}.discard(0)",
            f"{name}.clear()",
            f"{name}.add(1)",
            f"{name}.clear(); {name}.add({{}})",
        ]
        text = ctx.rng.choice(
            [
                f"{name}.add(int(h.detach().argmax()) % 3)\nh = h * len({name})",
                f"{name}.add(h.shape[0] % 2)\nif len({name}) > 1:\n    h = h + 1.0",
            ]
        )
    # the last change keeps the size but swaps which key is there: only the guard on each added
    # key's presence before the call tells the two states apart
    ctx.changes.append(
        lambda rng: Change(rng.choice(removals).format(rng.choice([0, 1, 2])), ("containers",), (name,))
    )
    return Stmt(text, ("containers", "append"), (name,))


def outside_array(ctx: Context) -> Stmt:
    """An outside numpy array read by numpy (a sum, an item, a maximum), or written in place, in the
    call; between calls items change. Its content decides a Python float the graph is multiplied by,
    which no guard on the array's identity sees."""
    name = f"TABLE{ctx.fresh()}"
    ctx.define(name, f"{name} = np.linspace(0.5, 1.5, 4).astype(np.float32)")
    text = ctx.rng.choice(
        [
            f"h = h * float({name}.sum())",
            f"h = h + float({name}[h.shape[0] % 4])",
            f"h = h * {name}.max().item()",
            f"h = h * sum({name}.tolist())",
            f"if {name}[0] > 1.0:\n    h = h + 1.0",
            f"{name}[1] += 0.25\nh = h * float({name}[1])",
        ]
    )
    ctx.changes.append(
        lambda rng: Change(
            f"{name}[{rng.choice([0, 1, 3])}] = {rng.choice([0.25, 1.25, 2.0])}", ("numpy",), (name,)
        )
    )
    return Stmt(text, ("globals", "numpy"), (name,))


def fresh_array(ctx: Context) -> Stmt:
    """A numpy array made in the call (from constants, or from the tensor's data) turned into a
    tensor that shares its memory (`torch.as_tensor`, `torch.from_numpy`), sometimes written in place
    through the tensor and read back through the array: a graph that kept the array itself as its
    constant would start the next call from the written one."""
    n = ctx.fresh()
    text = ctx.rng.choice(
        [
            "h = h * torch.as_tensor(np.full(1, 1.5, dtype=np.float32))",
            f"iden{n} = torch.from_numpy(np.eye(2, dtype=np.float32).flatten())\niden{n}.mul_(2)\n"
            f"h = h + iden{n}.sum()",
            f"ones{n} = torch.as_tensor(np.ones(2, dtype=np.float32))\nones{n}.add_(h.shape[0])\n"
            f"h = h * ones{n}.mean()",
            f"arr{n} = np.array([0.5, 2.0], dtype=np.float32)\nshared{n} = torch.as_tensor(arr{n})\n"
            f"shared{n} += 1\nh = h * float(arr{n}[1])",
            "h = h + torch.from_numpy(h.detach().numpy().copy()) * 0.5",
            "h = h + torch.from_numpy(np.clip(h.detach().numpy(), -0.5, 0.5))",
        ]
    )
    return Stmt(text, ("numpy", "inplace"), ())


def global_write(ctx: Context) -> Stmt:
    name = f"TOTAL{ctx.fresh()}"
    ctx.define(name, f"{name} = 0")
    text = f"global {name}\n{name} = {name} + 1\nh = h + {name} * 0.01"
    return Stmt(text, ("attr_write", "globals"), (name,))
