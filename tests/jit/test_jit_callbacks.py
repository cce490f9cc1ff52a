"""User code called back by native code (map, sorted, reduce, min/max with key, special methods,
callable objects, torch.utils.checkpoint) runs interpreted: the capture is cached, and changing
what that code reads between calls is seen by the guards."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn as nn
import torch.utils.checkpoint
from grad_helpers import check_grads
from jit_helpers import check_program

from jitlab.jit import jit

SCALES = {"a": 1.0, "b": 2.0}


class EasyDict(dict):
    """The attribute-dict of many research repositories."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


class Config:
    """A config wrapper that forwards unknown attributes to a dict and counts nothing."""

    def __init__(self, **values):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        self._values[name] = value


class WithConfigs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.cfg = EasyDict(scale=2.0, act="relu", depth=2)
        self.opts = Config(shift=0.5, clip=True)

    def forward(self, x):
        y = self.fc(x) * self.cfg.scale
        for _ in range(self.cfg.depth):
            y = torch.relu(y) if self.cfg.act == "relu" else torch.tanh(y)
        if self.opts.clip:
            y = y.clamp(-1, 1)
        self.cfg.last_norm = float(self.cfg.scale)  # EasyDict __setattr__: an item write, replayed
        return y + self.opts.shift + getattr(self.cfg, "bias", 0.0)


def change_configs(model, i):
    if i == 2:
        model.cfg.act = "tanh"
        model.opts.shift = -0.5
    if i == 3:
        model.cfg.bias = 1.0
        model.cfg.depth = 1


def test_attribute_dicts_and_getattr_wrappers_are_guarded():
    jitted = check_grads(WithConfigs, lambda i: (torch.randn(3, 4),), calls=5, between=change_configs)
    report = jitted.explain()
    assert not report.fallbacks
    assert len(report.graphs) == 3  # the changes at calls 2 and 3 were seen
    assert any("cfg" in g for g in report.graphs[0].guards)


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.weights = [0.5, 1.0, 2.0]

    def step(self, x, layer):
        return torch.tanh(layer(x))

    def score(self, layer):
        return float(layer.weight.shape[0]) * SCALES["a"]

    def forward(self, x):
        y = functools.reduce(self.step, self.layers, x)
        outs = list(map(lambda layer, w: layer(y) * w, self.layers, self.weights))
        ranked = sorted(range(len(outs)), key=lambda i: -self.weights[i])
        kept = list(filter(lambda o: o.shape[-1] == 4, outs))
        best = max(self.layers, key=self.score)
        outs.sort(key=lambda o: o.shape[0])
        return sum(outs[i] for i in ranked) + best(x) + len(kept), min(self.weights, key=abs)


def test_builtins_calling_user_functions_are_interpreted():
    def change(model, i):
        if i == 2:
            model.weights[0] = 3.0  # reordering: sorted's key reads it
        if i == 3:
            SCALES["a"] = 5.0  # read by the key of max()

    try:
        jitted = check_grads(Stack, lambda i: (torch.randn(2, 4),), calls=5, between=change)
    finally:
        SCALES["a"] = 1.0
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 3


class Bag:
    """A user container: len, bool, iter, contains, getitem and str are special methods."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, key):
        return any(k == key for k, _ in self.items)

    def __getitem__(self, key):
        for k, v in self.items:
            if k == key:
                return v
        raise KeyError(key)

    def __str__(self):
        return "Bag(" + ",".join(k for k, _ in self.items) + ")"


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


class UsesBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = Bag([("x", 1.0), ("y", 2.0)])
        self.scale = Scaler(3.0)

    def forward(self, t):
        total = sum(v for _, v in self.bag)
        label = f"{self.bag}"
        if "y" in self.bag and self.bag:
            t = t + self.bag["y"]
        pairs = dict(self.bag)
        return self.scale(t) * total * len(self.bag) + pairs["x"], label, list(self.bag)


def test_special_methods_called_by_native_code_are_interpreted():
    def change(model, i):
        if i == 2:
            model.bag.items.append(("z", 4.0))
        if i == 3:
            model.scale.factor = -1.0

    jitted = check_grads(UsesBag, lambda i: (torch.randn(2),), calls=5, between=change)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.drop(torch.relu(self.fc(x)))


class Checkpointed(nn.Module):
    def __init__(self, reentrant):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.reentrant = reentrant

    def forward(self, x):
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=self.reentrant)
        return x


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_gives_eager_values_and_gradients(reentrant):
    jitted = check_grads(lambda: Checkpointed(reentrant), lambda i: (torch.randn(3, 4),), calls=3)
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 2
    assert any("checkpoint" in note for note in report.graphs[0].notes)
    assert "note: torch.utils.checkpoint" in str(report)


def test_checkpoint_reentrant_without_grad_inputs_gives_no_grad_outputs():
    jitted = check_grads(
        lambda: Checkpointed(True), lambda i: (torch.randn(3, 4),), calls=3, input_grads=False
    )
    assert not jitted.explain().fallbacks


def test_user_iterator_and_next():
    class Countdown:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return self

        def __next__(self):
            if self.n <= 0:
                raise StopIteration
            self.n -= 1
            return self.n

    def f(x):
        it = Countdown(3)
        first = next(it)
        rest = tuple(it)
        return x * first + sum(rest), next(Countdown(0), -1)

    jitted = check_program(lambda: f, [((torch.randn(2),), {}) for _ in range(3)])
    assert not jitted.explain().fallbacks


def test_hash_and_bool_of_user_objects():
    class Key:
        def __init__(self, name):
            self.name = name

        def __hash__(self):
            return hash(self.name)

        def __bool__(self):
            return self.name != ""

    key = Key("w")

    def f(x):
        return x * (hash(key) % 7 + 1) if key else x

    jitted = check_program(lambda: f, [((torch.randn(2),), {}) for _ in range(3)])
    assert not jitted.explain().fallbacks


class IteratedForCallbacks(nn.Module):
    """Outside containers that a builtin iterates while calling user code back for each item."""

    def __init__(self, form):
        super().__init__()
        self.form = form
        self.scales = [1.0, 2.0]
        self.table = {"a": 1.0, "b": 2.0}
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])

    def forward(self, x):
        if self.form == "map":
            return sum(map(lambda v: x * v, self.scales))
        if self.form == "filter":
            return sum(x * v for v in filter(lambda v: v > 0, self.scales))
        if self.form == "sorted":
            return x * sorted(self.scales, key=lambda v: -v)[0]
        if self.form == "max":
            return x * max(self.scales, key=lambda v: v)
        if self.form == "reduce":
            return functools.reduce(lambda a, v: a * v, self.scales, x)
        if self.form == "map_dict":
            return sum(map(lambda k: x * self.table[k], self.table))
        if self.form == "map_modules":
            return sum(map(lambda layer: layer(x), self.layers))
        return sum(layer(x) for layer in sorted(self.layers, key=lambda layer: 0))


@pytest.mark.parametrize(
    "form", ["map", "filter", "sorted", "max", "reduce", "map_dict", "map_modules", "sorted_modules"]
)
def test_containers_iterated_by_builtins_with_callbacks_are_guarded(form):
    """The items a builtin iterates for user code (`map(lambda v: x * v, self.scales)`) are read
    from outside state: a change to them, or a longer container, must miss the cache. They were
    handed to the builtin unguarded, and the first result came back after every change."""
    model = IteratedForCallbacks(form)
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 3)
    changes = [
        lambda: model.scales.__setitem__(0, 5.0),
        lambda: model.scales.append(3.0),
        lambda: model.table.__setitem__("c", 7.0),
        lambda: model.layers.append(nn.Linear(3, 3)),
    ]
    for change in [lambda: None, *changes]:
        change()
        with torch.no_grad():
            assert torch.equal(jitted(x), model(x))
    assert not jitted.explain().fallbacks
