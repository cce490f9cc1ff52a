"""Differential tests of jitlab.jit on PyTorch programs: eager and jitted results, printed output,
arguments and module state must be equal call after call (eager backend)."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from jit_helpers import check_program

SCALE = 2.0
LOG: list = []


def inputs(*shapes, calls=3):
    return [
        ((*(torch.randn(*s, generator=torch.Generator().manual_seed(n)) for s in shapes),), {})
        for n in range(calls)
    ]


class Closures(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        bias = 0.5

        def act(t, k=2):
            return torch.tanh(t) * k + bias

        return [act(self.fc(x), k=i) for i in range(3)]


class KwargsVarargs(nn.Module):
    def forward(self, x, *extra, scale=1.0, **named):
        out = x * scale
        for e in extra:
            out = out + e
        for key in sorted(named):
            out = out - named[key]
        return {"out": out, "n": len(extra)}


class GeneratorsWith(nn.Module):
    def steps(self, x):
        for i in range(3):
            yield x * i

    def forward(self, x):
        total = sum(self.steps(x))
        with torch.no_grad():
            frozen = total * 2
        return total + frozen, frozen.requires_grad


class TryExceptFinally(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = {"a": 1.5}

    def forward(self, x):
        try:
            k = self.cfg["missing"]
        except KeyError:
            k = self.cfg["a"]
        finally:
            x = x + 1
        try:
            raise ValueError("inside forward")
        except ValueError as e:
            msg = str(e)
        return x * k, msg


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)

    @property
    def gain(self):
        return 3.0


class Derived(Base):
    def forward(self, x):
        return super().forward(x) * self.gain


@dataclasses.dataclass
class Config:
    hidden: int = 6
    act: str = "relu"


class DataclassFstring(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = Config()
        self.fc = nn.Linear(4, self.cfg.hidden)

    def forward(self, x):
        h = self.fc(x)
        h = getattr(F, self.cfg.act)(h)
        return {f"h_{self.cfg.hidden}": h, "tag": f"{self.cfg.act}:{h.shape[-1]}"}


def depth_sum(x, n):
    return x if n == 0 else depth_sum(x * 0.5, n - 1) + x


class Recursion(nn.Module):
    def forward(self, x):
        return depth_sum(x, 3)


class ModuleContainers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 1)})
        self.seq = nn.Sequential(nn.ReLU(), nn.Linear(4, 4))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) if i % 2 == 0 else torch.relu(layer(x))
        x = self.seq(x) + self.layers[-1](x)
        return {k: head(x) for k, head in self.heads.items()}


Pair = namedtuple("Pair", ["left", "right"])


class NamedTupleOut(nn.Module):
    def forward(self, x):
        return Pair(x.sum(0), x.mean(1) * SCALE)


class BatchNormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.drop(F.relu(self.bn(self.conv(x))))


class AppendsPrints(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []

    def forward(self, x):
        y = x.sum(1)
        self.history.append(y)
        LOG.append("called")
        print("forward on", tuple(x.shape), "mean is", y)
        return y * 2


class Mutations(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps.add_(1)
        x.mul_(2)
        self.last = x.detach().clone()
        return x + self.steps


PROGRAMS = {
    "closures_defaults": (Closures, inputs((2, 4))),
    "kwargs_varargs": (
        KwargsVarargs,
        [
            ((torch.ones(2), torch.ones(2) * n), {"scale": 2.0, "b": torch.ones(2), "a": torch.zeros(2)})
            for n in range(3)
        ],
    ),
    "generators_with_no_grad": (GeneratorsWith, inputs((3,))),
    "try_except_finally": (TryExceptFinally, inputs((2, 2))),
    "super_property": (Derived, inputs((2, 4))),
    "dataclass_fstring": (DataclassFstring, inputs((2, 4))),
    "recursion": (Recursion, inputs((3,))),
    "modulelist_moduledict_sequential": (ModuleContainers, inputs((2, 4))),
    "namedtuple_output_global": (NamedTupleOut, inputs((3, 4))),
    "batchnorm_dropout_train": (BatchNormNet, inputs((2, 2, 5, 5), calls=4)),
    "appends_and_prints": (AppendsPrints, inputs((2, 3))),
    "inplace_inputs_buffers_attrs": (Mutations, inputs((2,), calls=4)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_equals_eager(name):
    make, calls = PROGRAMS[name]
    jitted = check_program(make, calls, observe=lambda m: getattr(m, "history", None))
    report = jitted.explain()
    assert report.graph_count == 1, str(report)
    assert not report.fallbacks, str(report)


def test_batchnorm_eval_after_train_recaptures():
    torch.manual_seed(0)
    model = BatchNormNet()
    twin = BatchNormNet()
    twin.load_state_dict(model.state_dict())
    from jitlab.jit import jit

    jitted = jit(twin, backend="eager")
    x = torch.randn(2, 2, 5, 5)
    for mode in ("train", "eval", "train"):
        getattr(model, mode)()
        getattr(jitted, mode)()
        torch.manual_seed(1)
        expected = model(x)
        torch.manual_seed(1)
        got = jitted(x)
        assert torch.allclose(expected, got)
        assert torch.equal(model.bn.running_mean, twin.bn.running_mean)
        assert torch.equal(model.bn.num_batches_tracked, twin.bn.num_batches_tracked)
    assert jitted.explain().graph_count == 2


def test_outside_list_and_global_appends_are_replayed():
    LOG.clear()
    model = AppendsPrints()
    from jitlab.jit import jit

    jitted = jit(model, backend="eager")
    for _ in range(3):
        jitted(torch.ones(2, 3))
    assert LOG == ["called"] * 3
    assert len(model.history) == 3 and all(torch.equal(h, torch.full((2,), 3.0)) for h in model.history)
    assert jitted.explain().graphs[0].hits == 2


def test_print_output_is_replayed(capsys):
    from jitlab.jit import jit

    def f(x, tag):
        print(f"[{tag}]", x.sum(), sep=" ", end="!\n")
        return x + 1

    jitted = jit(f, backend="eager")
    for _ in range(3):
        jitted(torch.ones(2), "t")
    out = capsys.readouterr().out
    assert out == "[t] tensor(2.)!\n" * 3
    assert jitted.explain().graph_count == 1


def test_jitted_callable_inside_a_jitted_program():
    from jitlab.jit import jit

    inner = jit(lambda t: t * SCALE, backend="eager")

    def outer(x):
        return inner(x) + 1

    jitted = jit(outer, backend="eager")
    for _ in range(3):
        assert torch.equal(jitted(torch.ones(2)), torch.full((2,), 3.0))
    assert jitted.explain().graph_count == 1 and jitted.explain().graphs[0].hits == 2
