"""Fuzzer productions for torch state the call reads or changes around its tensor operations: random
generators (`torch.Generator`) drawn from, made or reseeded in the call, or passed by the caller,
and regions under `torch.autocast`: switched on and off by an outside flag, nested, entered in a
helper that returns inside the region, or made outside the call.

A graph keeps the generator an operation draws from as the object itself, and autocast casts below
the operations jitlab.jit records: both once gave hits other numbers than eager code's (a generator
made in the call was the capture's; a region under autocast was replayed in float32). Between calls
the outside generator is reseeded, the seed a made generator takes changes, and the autocast flag
flips, so that an entry's guards matter. Each statement reads and writes `h` as every production does
(grammar.py)."""

from __future__ import annotations

from collections.abc import Callable

from jitlab.fuzz.context import Context
from jitlab.fuzz.program import Change, Stmt

FEATURE = "torch_state"

#: how the call draws from a generator: one outside it that the call only draws from, one made in the
#: call from an outside seed, the outside one reseeded in the call, its state saved and restored,
#: drawn with sizes unpacked from the input, drawn in place into a view
GENERATOR_FORMS = {
    "outside": "h = h + 0.1 * torch.randn(h.shape, generator={gen}, dtype=h.dtype)",
    "made": "h = h + 0.1 * torch.rand(h.shape, generator=torch.Generator().manual_seed({seed}), dtype=h.dtype)",
    "reseeded": "{gen}.manual_seed({seed})\nh = h + 0.1 * torch.randn(h.shape, generator={gen}, dtype=h.dtype)",
    "restored": (
        "g_state = {gen}.get_state()\nh = h + 0.1 * torch.rand(h.shape, generator={gen}, dtype=h.dtype)\n"
        "{gen}.set_state(g_state)\nh = h - 0.1 * torch.rand(h.shape, generator={gen}, dtype=h.dtype)"
    ),
    # sizes unpacked from a batch that varies between calls, taken by the draw: they stay symbolic
    "unpacked": "rows_{gen}, cols_{gen} = h.shape\n"
    "h = h + 0.1 * torch.randn((rows_{gen} * 2, cols_{gen}), generator={gen}, dtype=h.dtype)[:rows_{gen}]",
    "into_view": "h = h * 1.0\nh[:, :1].normal_(generator={gen})",
}


def random_generator(ctx: Context) -> Stmt:
    """Numbers drawn from a torch.Generator in one of GENERATOR_FORMS; between calls the outside
    generator is reseeded or the seed changes."""
    k = ctx.fresh()
    gen, seed = f"GEN{k}", f"GSEED{k}"
    ctx.define(gen, f"{gen} = torch.Generator().manual_seed({k})")
    ctx.define(seed, f"{seed} = {k + 3}")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{gen}.manual_seed({rng.randint(0, 9)})", (FEATURE, "random"), (gen,)),
                Change(f"{seed} = {rng.randint(0, 9)}", (FEATURE, "globals"), (seed,), (seed,)),
            ]
        )
    )
    form = ctx.rng.choice(sorted(GENERATOR_FORMS))
    return Stmt(GENERATOR_FORMS[form].format(gen=gen, seed=seed), (FEATURE, "random"), (gen, seed))


#: how the call draws from generators the caller passes (`options['agen{k}']`, `options['agen2_{k}']`)
ARGUMENT_FORMS = (
    "g{k} = options['agen{k}']\nh = h + 0.1 * torch.randn(h.shape, generator=g{k}, dtype=h.dtype)",
    "g{k}, f{k} = options['agen{k}'], options['agen2_{k}']\n"
    "h = h + 0.1 * torch.rand(h.shape, generator=g{k}, dtype=h.dtype)"
    " - 0.1 * torch.rand(h.shape, generator=f{k}, dtype=h.dtype)",
    "n{k} = torch.empty(h.shape, dtype=h.dtype).normal_(generator=options['agen{k}'])\nh = h + 0.1 * n{k}",
    "p{k} = torch.randperm(h.shape[1], generator=options['agen{k}'])\nh = h[:, p{k}] * 1.5",
    "g{k} = options['agen{k}']\nh = h * (1.0 + (g{k}.initial_seed() % 3) * 0.25)"
    " + 0.1 * torch.randn(h.shape, generator=g{k}, dtype=h.dtype)",
    "g{k}, f{k} = options['agen{k}'], options['agen2_{k}']\n"
    "h = h + 0.1 * torch.randn(h.shape, generator=g{k}, dtype=h.dtype) * (2.0 if g{k} is f{k} else 1.0)",
    "b{k}, w{k} = h.shape\nh = h.view(b{k}, w{k}, 1).squeeze(-1)"
    " + 0.1 * torch.randn((b{k}, w{k}), generator=options['agen{k}'], dtype=h.dtype)",
)


def argument_generator(ctx: Context) -> Stmt:
    """Numbers drawn from generators the caller passes, as diffusers' pipelines take `generator=`:
    between calls the caller makes a new one with another seed, reseeds one, or passes one object
    under both names, so that the graph must draw from the call's own generators, in program order."""
    k = ctx.fresh()
    first, second = f"AGEN{k}", f"AGEN2_{k}"
    ctx.define(first, f"{first} = torch.Generator().manual_seed({k})")
    ctx.define(second, f"{second} = torch.Generator().manual_seed({k + 1})")
    ctx.call_options.append((f"agen{k}", f"globals().get('{first}')"))
    ctx.call_options.append((f"agen2_{k}", f"globals().get('{second}')"))
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(
                    f"{first} = torch.Generator().manual_seed({rng.randint(0, 9)})",
                    (FEATURE, "random"),
                    (first,),
                    (first,),
                ),
                Change(f"{second}.manual_seed({rng.randint(0, 9)})", (FEATURE, "random"), (second,)),
                Change(f"{second} = {first}", (FEATURE, "aliasing"), (first, second), (second,)),
                Change(
                    f"{second} = torch.Generator().manual_seed({rng.randint(0, 9)})",
                    (FEATURE, "random"),
                    (second,),
                    (second,),
                ),
            ]
        )
    )
    text = ctx.rng.choice(ARGUMENT_FORMS).format(k=k)
    return Stmt(text, (FEATURE, "random", "varargs"), (first, second))


#: regions under autocast (`{flag}`, `{w}` and `{k}` filled in): switched by an outside flag, nested
#: with a region that switches it off again inside, followed by Python deciding on a value computed
#: in it, entered by a helper that returns inside the region or by `@torch.autocast(...)` on a helper,
#: and one whose context is made outside the call (its switches are guarded)
AUTOCAST_FORMS = {
    "flag": (
        'with torch.autocast("cpu", dtype=torch.bfloat16, enabled={flag}):\n'
        "    a{k} = h.float() @ {w}\n"
        "h = h + 0.1 * a{k}.to(h.dtype)"
    ),
    "nested": (
        'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
        "    a{k} = h.float() @ {w}\n"
        '    with torch.autocast("cpu", enabled=False):\n'
        "        b{k} = a{k}.float().softmax(-1)\n"
        "    a{k} = (b{k} @ {w}).relu() + a{k}\n"
        "h = h + 0.1 * a{k}.to(h.dtype)"
    ),
    "decides": (
        'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
        "    a{k} = h.float() @ {w}\n"
        "if a{k}.float().sum() > 0:\n"
        "    h = h + 0.1 * a{k}.to(h.dtype)\n"
        "else:\n"
        "    h = h - 0.1 * a{k}.to(h.dtype)"
    ),
    "helper": "h = h + 0.1 * AMPF{k}(h).to(h.dtype)",
    "decorated": "h = h + 0.1 * AMPD{k}(h).to(h.dtype)",
    "made_outside": (
        "with AMPC{k}:\n    a{k} = torch.nn.functional.linear(h.float(), {w})\nh = h + 0.1 * a{k}.to(h.dtype)"
    ),
}


def autocast_region(ctx: Context) -> Stmt:
    """Operations under `torch.autocast("cpu", dtype=torch.bfloat16)` in one of `AUTOCAST_FORMS`; the
    outside flag of the first flips between calls (off, autocast changes nothing)."""
    k = ctx.fresh()
    flag, weight = f"AMP{k}", f"AMPW{k}"
    form = ctx.rng.choice(sorted(AUTOCAST_FORMS))
    ctx.define(weight, f"{weight} = torch.linspace(-0.5, 0.5, W * W).reshape(W, W)")
    reads: tuple[str, ...] = (weight,)
    if form == "flag":
        ctx.define(flag, f"{flag} = {ctx.rng.choice([True, False])}")
        ctx.changes.append(lambda rng: Change(f"{flag} = not {flag}", (FEATURE, "globals"), (flag,), (flag,)))
        reads = (flag, weight)
    elif form == "helper":
        helper = f"AMPF{k}"
        ctx.define(
            helper,
            f"def {helper}(x):\n"
            '    with torch.autocast("cpu", dtype=torch.bfloat16):\n'
            f"        return torch.nn.functional.linear(x.float(), {weight}).sigmoid()",
        )
        reads = (helper, weight)
    elif form == "decorated":
        helper = f"AMPD{k}"
        ctx.define(
            helper,
            '@torch.autocast("cpu", dtype=torch.bfloat16)\n'
            f"def {helper}(x):\n"
            f"    return torch.nn.functional.linear(x.float(), {weight}).tanh()",
        )
        reads = (helper, weight)
    elif form == "made_outside":
        made = f"AMPC{k}"
        ctx.define(made, f'{made} = torch.autocast("cpu", dtype=torch.bfloat16)')
        reads = (made, weight)
    text = AUTOCAST_FORMS[form].format(flag=flag, w=weight, k=k)
    return Stmt(text, (FEATURE,), reads)


#: this module's productions with their weights, in the table of grammar.py (`PRODUCTIONS`)
TORCH_STATE_PRODUCTIONS: list[tuple[Callable[[Context], Stmt], float, bool]] = [
    (random_generator, 0.3, False),
    (argument_generator, 0.3, False),
    (autocast_region, 0.3, False),
]
