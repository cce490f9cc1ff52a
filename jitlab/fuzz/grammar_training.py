"""Fuzzer productions for training steps inside the jitted call: a backward pass on a loss of outside
parameters, an optimizer's step (SGD with momentum, Adam, AdamW; foreach or not), `zero_grad` before
or after (setting the gradients to None or to zeros), gradient clipping, a learning-rate scheduler's
step, `torch.autograd.grad` with a manual update, gradients read by Python; gradient accumulation
over calls (the optimizer steps on every second call, counted in an outside list), hooks on a
parameter's gradient (registered, removed and added between calls; one with an effect), a second
backward pass through a retained graph, and a loss computed under activation checkpointing.

The parameters are upper-case global tensors (`PW3`, `PB3`), so the oracle compares their values and
gradients after every call. Between calls the learning rate changes (a float that becomes a graph
input after one capture), the optimizer's state is cleared, the gradients are dropped or kept, and
the parameters are changed in place, so that a cached capture's guards and effects are exercised. Each
statement reads and writes `h` as every production does (grammar.py); the loss reads `h` detached
and in float32, so a program that changes its dtype or makes `h` require grad trains the same.
"""

from __future__ import annotations

from jitlab.fuzz.context import Context
from jitlab.fuzz.program import Change, Stmt

FEATURE = "training"

OPTIMIZERS = (
    "torch.optim.SGD({params}, lr=0.1)",
    "torch.optim.SGD({params}, lr=0.05, momentum=0.9)",
    "torch.optim.SGD({params}, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=True)",
    "torch.optim.Adam({params}, lr=0.01)",
    "torch.optim.Adam({params}, lr=0.01, amsgrad=True, foreach=True)",
    "torch.optim.AdamW({params}, lr=0.01, weight_decay=0.1)",
    "torch.optim.AdamW({params}, lr=0.01, foreach=True)",
    # one native kernel for every parameter, run between the compiled parts (fused_optimizers.py)
    "torch.optim.AdamW({params}, lr=0.01, weight_decay=0.1, fused=True)",
    "torch.optim.SGD({params}, lr=0.05, momentum=0.9, fused=True)",
)
SCHEDULERS = (
    "torch.optim.lr_scheduler.StepLR({opt}, 2, 0.5)",
    "torch.optim.lr_scheduler.ExponentialLR({opt}, 0.9)",
    "torch.optim.lr_scheduler.LambdaLR({opt}, lambda epoch: 1.0 / (epoch + 1))",
    "torch.optim.lr_scheduler.CosineAnnealingLR({opt}, 5)",
    # changes SGD's momentum or Adam's betas on every step too
    "torch.optim.lr_scheduler.OneCycleLR({opt}, 0.1, total_steps=1000)",
)


def _parameters(ctx: Context) -> tuple[int, str, str]:
    """Two outside parameters (a weight and a bias of the program's width), defined once per
    statement; returns (k, weight name, bias name)."""
    k = ctx.fresh()
    weight, bias = f"PW{k}", f"PB{k}"
    ctx.define(weight, f"{weight} = torch.nn.Parameter(torch.linspace(-0.5, 0.5, W * W).reshape(W, W))")
    ctx.define(bias, f"{bias} = torch.nn.Parameter(torch.zeros(W))")
    return k, weight, bias


def _optimized_parameters(ctx: Context) -> tuple[int, str, str, str]:
    """Two outside parameters and an optimizer of them, with what a caller changes between calls;
    returns (k, weight name, bias name, optimizer name)."""
    k, weight, bias = _parameters(ctx)
    opt = ctx.define(f"OPT{k}", f"OPT{k} = {ctx.rng.choice(OPTIMIZERS).format(params=f'[{weight}, {bias}]')}")
    _changes(ctx, opt, weight, bias)
    return k, weight, bias, opt


def _loss(k: int, weight: str, bias: str) -> str:
    return f"loss{k} = ((h.detach().float() @ {weight} + {bias}) - h.detach().float().tanh()).pow(2).mean()"


def optimizer_step(ctx: Context) -> Stmt:
    """`loss.backward(); opt.step(); opt.zero_grad()` on outside parameters, the loss added to `h`."""
    k, weight, bias, opt = _optimized_parameters(ctx)
    to_none = ctx.rng.choice(["True", "False"])
    body = [_loss(k, weight, bias), f"loss{k}.backward()"]
    if ctx.rng.random() < 0.3:
        body.append(f"torch.nn.utils.clip_grad_norm_([{weight}, {bias}], {ctx.rng.choice([0.05, 1.0])})")
    if ctx.rng.random() < 0.3:
        body.append(f"h = h + {weight}.grad.sum().to(h.dtype) * 0.01")
    body.append(f"{opt}.step()")
    zero = f"{opt}.zero_grad(set_to_none={to_none})"
    body = [zero, *body] if ctx.rng.random() < 0.4 else [*body, zero]
    sched = f"SCHED{k}"
    if ctx.rng.random() < 0.3:
        ctx.define(sched, f"{sched} = {ctx.rng.choice(SCHEDULERS).format(opt=opt)}")
        body.insert(body.index(f"{opt}.step()") + 1, f"{sched}.step()")
        defs = (weight, bias, opt, sched)
    else:
        defs = (weight, bias, opt)
    body.append(f"h = h + loss{k}.detach().to(h.dtype) * 0.1")
    return Stmt("\n".join(body), (FEATURE,), defs)


def manual_update(ctx: Context) -> Stmt:
    """`torch.autograd.grad` of a loss of outside parameters, and a manual SGD update under no_grad;
    or the gradient's presence decided on before a backward pass."""
    k, weight, bias = _parameters(ctx)
    lr = f"LR{k}"
    ctx.define(lr, f"{lr} = 0.1")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"{lr} = {rng.choice([0.05, 0.2])}", (FEATURE, "globals"), (lr,), (lr,)),
                Change(f"{weight}.grad = None", (FEATURE,), (weight,)),
            ]
        )
    )
    if ctx.rng.random() < 0.5:
        text = (
            f"{_loss(k, weight, bias)}\n(g{k}, gb{k}) = torch.autograd.grad(loss{k}, [{weight}, {bias}])\n"
            f"with torch.no_grad():\n    {weight}.sub_({lr} * g{k})\n    {bias}.sub_({lr} * gb{k})\n"
            f"h = h + loss{k}.detach().to(h.dtype)"
        )
    else:
        text = (
            f"if {weight}.grad is None:\n    h = h * 0.5\n{_loss(k, weight, bias)}\nloss{k}.backward()\n"
            f"h = h + {weight}.grad.mean().to(h.dtype)"
        )
    return Stmt(text, (FEATURE,), (weight, bias, lr))


def _changes(ctx: Context, opt: str, weight: str, bias: str) -> None:
    """What a caller does to the optimizer and the parameters between calls."""
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f'{opt}.param_groups[0]["lr"] = {rng.choice([0.2, 0.02, 0.005])}', (FEATURE,), (opt,)),
                Change(f"{opt}.state.clear()", (FEATURE,), (opt,)),
                Change(f"{opt}.zero_grad(set_to_none={rng.choice(['True', 'False'])})", (FEATURE,), (opt,)),
                Change(f"with torch.no_grad():\n    {weight}.mul_(0.5)", (FEATURE,), (weight,)),
                Change(f"{bias}.grad = torch.ones(W)", (FEATURE,), (bias,)),
            ]
        )
    )


def accumulated_step(ctx: Context) -> Stmt:
    """Gradient accumulation: a backward pass on every call, the optimizer's step and `zero_grad` on
    every second one, counted in an outside list the call increments (a branch on an outside value
    the call itself changes)."""
    k, weight, bias, opt = _optimized_parameters(ctx)
    count = ctx.define(f"COUNT{k}", f"COUNT{k} = [0]")
    ctx.changes.append(lambda rng: Change(f"{count}[0] = {rng.choice([0, 1, 5])}", (FEATURE,), (count,)))
    text = (
        f"{_loss(k, weight, bias)}\n(loss{k} * 0.5).backward()\n{count}[0] += 1\n"
        f"if {count}[0] % 2 == 0:\n    {opt}.step()\n    {opt}.zero_grad()\n"
        f"h = h + loss{k}.detach().to(h.dtype) * 0.1"
    )
    return Stmt(text, (FEATURE,), (weight, bias, opt, count))


#: hooks on a parameter's gradient: pure ones, and one that records that it ran (an effect)
GRADIENT_HOOKS = (
    "lambda g: g * 0.5",
    "lambda g: g.clamp(-0.01, 0.01)",
    "lambda g: (GRADLOG.append(1), g * 2.0)[1]",
)


def hooked_gradients(ctx: Context) -> Stmt:
    """A backward pass through a parameter with a hook on its gradient, registered outside, and a
    manual update; between calls the hooks are removed or another one is added, so an entry must not
    keep serving the hooks of its capture."""
    k, weight, bias = _parameters(ctx)
    hooks = f"HOOKS{k}"
    ctx.define("GRADLOG", "GRADLOG = []")
    ctx.define(hooks, f"{hooks} = [{weight}.register_hook({ctx.rng.choice(GRADIENT_HOOKS)})]")
    ctx.changes.append(
        lambda rng: rng.choice(
            [
                Change(f"for _hook in {hooks}:\n    _hook.remove()", (FEATURE,), (hooks, "GRADLOG")),
                Change(
                    f"{hooks}.append({weight}.register_hook({rng.choice(GRADIENT_HOOKS)}))",
                    (FEATURE,),
                    (weight, hooks, "GRADLOG"),
                ),
            ]
        )
    )
    text = (
        f"{_loss(k, weight, bias)}\nloss{k}.backward()\nwith torch.no_grad():\n"
        f"    {weight}.sub_(0.1 * {weight}.grad)\n    {bias}.sub_(0.1 * {bias}.grad)\n"
        f"{weight}.grad = None\n{bias}.grad = None\nh = h + loss{k}.detach().to(h.dtype)"
    )
    return Stmt(text, (FEATURE,), (weight, bias, hooks, "GRADLOG"))


def retained_backward(ctx: Context) -> Stmt:
    """Two backward passes through one graph (`retain_graph=True` on the first), the gradients
    accumulating, then an optimizer step."""
    k, weight, bias, opt = _optimized_parameters(ctx)
    text = (
        f"{opt}.zero_grad()\n{_loss(k, weight, bias)}\nloss{k}.backward(retain_graph=True)\n"
        f"(loss{k} * 0.5).backward()\n{opt}.step()\nh = h + loss{k}.detach().to(h.dtype) * 0.1"
    )
    return Stmt(text, (FEATURE,), (weight, bias, opt))


def checkpointed_loss(ctx: Context) -> Stmt:
    """A loss whose layer runs under activation checkpointing (recomputed in the backward pass),
    then an optimizer step."""
    k, weight, bias, opt = _optimized_parameters(ctx)
    text = (
        f"c{k} = torch.utils.checkpoint.checkpoint(lambda t: (t @ {weight} + {bias}).tanh(), "
        f"h.detach().float(), use_reentrant=False)\n"
        f"loss{k} = (c{k} - h.detach().float().tanh()).pow(2).mean()\nloss{k}.backward()\n"
        f"{opt}.step()\n{opt}.zero_grad()\nh = h + loss{k}.detach().to(h.dtype) * 0.1"
    )
    return Stmt(text, (FEATURE,), (weight, bias, opt))
