"""Whole training steps of transformers models under jitlab.jit and torch.compile, compared with eager.

    python benchmarks/training_steps.py                       # issue 45's table: 7 models, AdamW, eager backend
    python benchmarks/training_steps.py --zoo --optimizer sgd # every transformers model of the zoo
    python benchmarks/training_steps.py --models GPT2 --arrangements jit-step --backend aot_eager
    .venv-3.12/bin/python benchmarks/training_steps.py --vision  # the timm and torchvision zoo

Each model is built twice from the zoo's small config (random weights, dropout 0, train mode) with
the same weights; the step `loss = model(**batch).loss; loss.backward(); opt.step(); opt.zero_grad()`
runs `--steps` times on fresh batches, eagerly on one copy and under the arrangement on the other,
and the loss and every parameter are compared after each step (the largest difference is shown; 0
means bitwise equal). Arrangements: `jit-step` (jitlab.jit of the whole step), `jit-model`
(jitlab.jit of the model, backward and optimizer outside), `compile-step` (torch.compile of the
whole step). For jitlab.jit the column says how the calls were served: captures, hits, graphs per
call and breaks, or the fallback's reason. Models without a loss of their own (bare encoders) are
trained on the mean square of their first output; the vision zoo's on the cross entropy of their
logits (the first output) with random labels. Both runs draw from the same seed before each step
(dropout masks are the same).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from typing import Any

import torch

TABLE = {  # the issue's models: name -> zoo case (or a class, config class and config of our own)
    "GPT-2": "DistillGPT2",
    "Llama": ("LlamaForCausalLM", "LlamaConfig", "DECODER", "ids"),
    "Qwen2": "Qwen2ForCausalLM",
    "BERT": "BertForMaskedLM",
    "T5": "T5ForConditionalGeneration",
    "BART": "BartForConditionalGeneration",
    "ViT": "ViTForImageClassification",
}
OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3),
}

SCHEDULERS = {  # learning-rate schedules that change the learning rate (OneCycleLR: SGD's momentum too)
    "steplr": lambda opt: torch.optim.lr_scheduler.StepLR(opt, 1, 0.9),
    "cosine": lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, 10),
    "onecycle": lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, 0.01, total_steps=100),
}


def _zoo() -> Any:
    from jitlab.capture.zoo import transformers_zoo

    return transformers_zoo


def model_spec(name: str) -> tuple[str, str, dict[str, Any], str]:
    zoo = _zoo()
    spec = TABLE.get(name, name)
    if isinstance(spec, str):
        return zoo.MODELS[spec]
    model_class, config_class, config, kind = spec
    return model_class, config_class, dict(getattr(zoo, config)), kind


def build(name: str) -> torch.nn.Module:
    import transformers

    model_class, config_class, config, _kind = model_spec(name)
    cfg = getattr(transformers, config_class)(**config)
    for key, value in cfg.to_dict().items():
        if "drop" in key and isinstance(value, float):
            setattr(cfg, key, 0.0)
    if "T5" in config_class and getattr(cfg, "decoder_start_token_id", None) is None:
        cfg.decoder_start_token_id = 0  # T5's labels need it to make the decoder's inputs
    return getattr(transformers, model_class)(cfg).train()


def batch(name: str, model: torch.nn.Module, seed: int) -> dict[str, Any]:
    """One call's keyword inputs, with the labels the model's head takes."""
    zoo = _zoo()
    model_class, _cc, config, kind = model_spec(name)
    torch.manual_seed(seed)
    _args, kwargs = zoo.inputs(kind, config)
    if kind == "pixels":
        kwargs["labels"] = torch.randint(0, model.config.num_labels, (zoo.BATCH,))
    elif "QuestionAnswering" in model_class:
        kwargs["start_positions"] = torch.randint(0, zoo.SEQ, (zoo.BATCH,))
        kwargs["end_positions"] = torch.randint(0, zoo.SEQ, (zoo.BATCH,))
    elif "SequenceClassification" in model_class:
        kwargs["labels"] = torch.randint(0, model.config.num_labels, (zoo.BATCH,))
    elif kind in ("seq2seq", "audio") and "ConditionalGeneration" in model_class:
        kwargs["labels"] = kwargs.pop("decoder_input_ids")
    elif any(head in model_class for head in ("CausalLM", "MaskedLM", "LMHead")):
        kwargs["labels"] = kwargs["input_ids"]
    return kwargs


def loss_of(out: Any) -> torch.Tensor:
    loss = getattr(out, "loss", None)
    if loss is not None:
        return loss
    first = out[0] if isinstance(out, (tuple, list)) else next(iter(out.values()))
    return first.float().pow(2).mean()


def make_step(model: Any, opt: torch.optim.Optimizer) -> Any:
    def step(batch: dict[str, Any]) -> torch.Tensor:
        loss = loss_of(model(**batch))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def arrangement(
    kind: str, model: torch.nn.Module, opt: torch.optim.Optimizer, backend: str
) -> tuple[Any, Any]:
    """(the step to run, the object whose explain() tells how it ran, or None)."""
    import jitlab

    if kind == "jit-step":
        step = jitlab.jit(make_step(model, opt), backend=backend)
        return step, step
    if kind == "jit-model":
        jitted = jitlab.jit(model, backend=backend)
        return make_step(jitted, opt), jitted
    if kind == "compile-step":
        import torch._dynamo
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        return torch.compile(make_step(model, opt), backend=backend), DynamoCounts()
    raise SystemExit(f"unknown arrangement {kind!r}: use jit-step, jit-model or compile-step")


class DynamoCounts:
    """What TorchDynamo's counters say about `torch.compile(step)`: graphs made, graph breaks."""

    def describe(self) -> str:
        from torch._dynamo.utils import counters

        graphs = counters["stats"].get("unique_graphs", 0)
        breaks = sum(counters["graph_break"].values())
        return f"{graphs} graphs, {breaks} breaks"


def describe(explained: Any) -> str:
    if explained is None:
        return "-"
    if isinstance(explained, DynamoCounts):
        return explained.describe()
    report = explained.explain()
    if report.fallbacks:
        return "eager: " + report.fallbacks[0][:140].replace("\n", " ")
    hits = sum(g.hits for g in report.graphs)
    breaks = len({(b.filename, b.lineno) for b in report.graph_breaks})
    notes = {g.backend_note for g in report.graphs if g.backend_note}
    ran = f" (backend: {sorted(notes)[0][:80]})" if notes else ""
    return (
        f"{report.captures} captures, {hits} hits, {report.graphs_per_call} graphs/call, {breaks} breaks{ran}"
    )


def vision_cases() -> dict[str, Any]:
    from jitlab.capture.zoo import timm_zoo, torchvision_zoo

    return {case.name: case for corpus in (timm_zoo.CORPUS, torchvision_zoo.CORPUS) for case in corpus.cases}


def make_vision_step(model: Any, opt: torch.optim.Optimizer) -> Any:
    def step(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        out = model(x)
        logits = out[0] if isinstance(out, (tuple, list)) else out
        loss = torch.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def diff(a: torch.nn.Module, b: torch.nn.Module) -> float:
    return max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))


def run(
    name: str, kind: str, optimizer: str, backend: str, steps: int, vision: Any = None, scheduler: str = ""
) -> dict[str, Any]:
    """One model under one arrangement; `vision`: the zoo case of a timm or torchvision model;
    `scheduler`: a SCHEDULERS name, stepped after each step (the learning rate changes every step)."""
    global make_step
    torch.manual_seed(0)
    eager_model = vision.build_model().train() if vision is not None else build(name)
    model = copy.deepcopy(eager_model)
    text_step = make_step
    if vision is not None:
        make_step = make_vision_step  # what `arrangement` wraps
    opts = [OPTIMIZERS[optimizer](eager_model.parameters()), OPTIMIZERS[optimizer](model.parameters())]
    schedulers = [SCHEDULERS[scheduler](opt) for opt in opts] if scheduler else []
    try:
        eager_step = make_step(eager_model, opts[0])
        step, explained = arrangement(kind, model, opts[1], backend)
    finally:
        make_step = text_step

    def inputs(i: int) -> tuple:
        if vision is None:
            return (batch(name, eager_model, seed=i),)
        (x,), _ = vision.build_inputs(i)
        return x, torch.randint(0, 10, (x.shape[0],), generator=torch.Generator().manual_seed(i))

    worst, first, error = 0.0, None, None
    try:
        for i in range(steps):
            torch.manual_seed(1000 + i)
            expected = eager_step(*inputs(i))
            torch.manual_seed(1000 + i)
            start = time.perf_counter()
            got = step(*inputs(i))
            if first is None:
                first = time.perf_counter() - start
            worst = max(worst, (expected - got).abs().item(), diff(eager_model, model))
            for sched in schedulers:  # outside the step: the next step reads the new learning rate
                sched.step()
    except Exception as exc:  # report it in the table: this is a survey
        error = f"{type(exc).__name__}: {str(exc)[:120]}"
    return {
        "model": name,
        "arrangement": kind,
        "how": error or describe(explained),
        "max_diff": worst,
        "first_step_s": first,
    }


def speed(name: str, optimizer: str, backend: str, rounds: int, per_round: int) -> dict[str, float]:
    """Median seconds per step of `jitlab.jit(step)` and of `torch.compile(model)` with
    `torch.compile(opt.step)`, each on its own copy of the model, measured in alternating rounds
    after both are warm (run it under the exclusive CPU lock)."""
    import statistics

    import jitlab

    torch.manual_seed(0)
    base = build(name)
    models = {"jit-step": base, "compile-model+opt": copy.deepcopy(base)}
    opts = {k: OPTIMIZERS[optimizer](m.parameters()) for k, m in models.items()}
    steps = {"jit-step": jitlab.jit(make_step(base, opts["jit-step"]), backend=backend)}
    compiled_model = torch.compile(models["compile-model+opt"], backend=backend)
    compiled_opt_step = torch.compile(opts["compile-model+opt"].step, backend=backend)

    def compiled_step(inputs: dict[str, Any]) -> torch.Tensor:
        loss = loss_of(compiled_model(**inputs))
        loss.backward()
        compiled_opt_step()
        opts["compile-model+opt"].zero_grad()
        return loss

    steps["compile-model+opt"] = compiled_step
    inputs = [batch(name, base, seed=i) for i in range(per_round)]
    for step in steps.values():  # warm: captures, compiles, optimizer state
        for i in range(3):
            step(inputs[i % per_round])
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(rounds):
        for key, step in steps.items():
            start = time.perf_counter()
            for i in range(per_round):
                step(inputs[i])
            times[key].append((time.perf_counter() - start) / per_round)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated names (TABLE's or zoo cases'); default: TABLE's")
    parser.add_argument("--zoo", action="store_true", help="every transformers model of the zoo")
    parser.add_argument(
        "--vision", action="store_true", help="every timm and torchvision model (Python 3.12+)"
    )
    parser.add_argument("--arrangements", default="jit-step,jit-model,compile-step")
    parser.add_argument("--optimizer", default="adamw", choices=sorted(OPTIMIZERS))
    parser.add_argument("--backend", default="eager")
    parser.add_argument(
        "--scheduler",
        default="",
        choices=["", *sorted(SCHEDULERS)],
        help="a learning-rate schedule, stepped after each step",
    )
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--speed", action="store_true", help="time per step against torch.compile (rounds)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--every", type=int, default=1, help="a sample: every N-th model (from --offset)")
    parser.add_argument("--offset", type=int, default=0)
    args = parser.parse_args(argv)
    if args.speed:
        for name in (args.models or ",".join(TABLE)).split(","):
            found = speed(name, args.optimizer, args.backend, args.rounds, 5)
            ratio = found["compile-model+opt"] / found["jit-step"]
            cells = "  ".join(f"{k} {v * 1e3:.2f} ms" for k, v in found.items())
            print(f"{name:12s} {cells}  (torch.compile / jitlab.jit: {ratio:.2f}x)", flush=True)
        return 0
    cases = vision_cases() if args.vision else {}
    names = list(cases) if args.vision else list(_zoo().MODELS) if args.zoo else list(TABLE)
    if args.models:
        names = args.models.split(",")
    names = names[args.offset :: args.every]
    served = 0
    rows = 0
    for name in names:
        for kind in args.arrangements.split(","):
            row = run(name, kind, args.optimizer, args.backend, args.steps, cases.get(name), args.scheduler)
            rows += 1
            ok = not row["how"].startswith(("eager", "RuntimeError", "Error")) and ":" not in row["how"][:30]
            served += ok
            first = f"{row['first_step_s']:.1f}s" if row["first_step_s"] is not None else "-"
            print(
                f"{name:42s} {kind:13s} diff {row['max_diff']:.1e}  first {first:>7s}  {row['how']}",
                flush=True,
            )
    print(f"served by graphs without fallback: {served} of {rows}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
