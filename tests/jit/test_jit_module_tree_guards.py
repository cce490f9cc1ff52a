"""The guards of a deep module tree, each made cheaper, must still catch the change it is there for.

Models walk their submodules with `self.children()` (timm's RegNet stages) or a ModuleDict's
`items()` (torchvision's and timm's DenseNet blocks); torch lists them natively, which guarded the
whole module tree below on every call. Now the listed names and each submodule are guarded, and each
submodule is guarded as it is then used. Each test here makes one change between two calls and
checks that the jitted call still equals eager and that the entry missed (a new capture), or, for a
change nothing reads, that the entry still served.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize

from jitlab.jit import explain_rule, jit


class ConvBn(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Stage(nn.Module):
    """timm's RegStage: `for block in self.children()`."""

    def __init__(self, c: int, n: int) -> None:
        super().__init__()
        for i in range(n):
            self.add_module(f"b{i + 1}", ConvBn(c))

    def forward(self, x):
        for block in self.children():
            x = block(x)
        return x


class Dense(nn.ModuleDict):
    """torchvision's _DenseBlock: `for name, layer in self.items()`, each layer fed all before it."""

    def __init__(self, c: int, n: int) -> None:
        super().__init__()
        for i in range(n):
            self[f"layer{i}"] = nn.Sequential(nn.BatchNorm2d(c * (i + 1)), nn.Conv2d(c * (i + 1), c, 1))

    def forward(self, x):
        features = [x]
        for _name, layer in self.items():
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = ConvBn(4)
        self.stage = Stage(4, 3)
        self.dense = Dense(4, 2)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        x = self.dense(self.stage(self.stem(x)))
        return self.head(x[:, :12].mean((2, 3)))


def _net(train: bool = False) -> tuple[Net, object, torch.Tensor]:
    torch.manual_seed(0)
    model = Net().train(train)
    return model, jit(model, backend="eager"), torch.randn(2, 4, 6, 6)


def _agrees(model, jitted, x) -> None:
    with torch.no_grad():
        expected = model(x)
    with torch.no_grad():
        got = jitted(x)
    assert torch.allclose(expected, got, atol=1e-6), (expected - got).abs().max()


def _captures(jitted) -> int:
    return jitted.explain().captures


def _drop_running_stats(m: Net) -> None:
    m.stage.b1.bn.running_mean = None
    m.stage.b1.bn.running_var = None


def _replace_param(m: Net) -> None:
    m.stage.b2.conv.weight = nn.Parameter(torch.randn(4, 4, 3, 3))  # same shape: the new one is used


CHANGES: dict[str, tuple[Callable[[Net], object], bool]] = {
    # change -> (how, whether the entry must miss)
    "submodule added to a children() stage": (lambda m: m.stage.add_module("b4", ConvBn(4)), True),
    "submodule removed from a children() stage": (lambda m: delattr(m.stage, "b3"), True),
    "submodule replaced by one of the same class": (lambda m: setattr(m.stage, "b2", ConvBn(4)), True),
    "submodule set to None (children() skips it)": (lambda m: setattr(m.stage, "b2", None), True),
    "submodule added twice (children() yields it once)": (
        lambda m: m.stage.add_module("b4", m.stage.b1),
        True,
    ),
    "stage reordered": (
        lambda m: m.stage._modules.update({"b1": m.stage._modules.pop("b1")}),
        True,
    ),
    "dense layer added": (
        lambda m: m.dense.update({"layer2": nn.Sequential(nn.BatchNorm2d(12), nn.Conv2d(12, 4, 1))}),
        True,
    ),
    "dense layer replaced": (
        lambda m: m.dense.update({"layer1": nn.Sequential(nn.BatchNorm2d(8), nn.Conv2d(8, 4, 1))}),
        True,
    ),
    "parameter replaced by one of another shape": (
        lambda m: setattr(m.stem.conv, "weight", nn.Parameter(torch.randn(4, 4, 1, 1))),
        True,
    ),
    "conv replaced by one of another kernel": (lambda m: setattr(m.stem, "conv", nn.Conv2d(4, 4, 1)), True),
    "parameter removed (bias)": (lambda m: setattr(m.head, "bias", None), True),
    "parameter replaced by another tensor of the same shape": (_replace_param, False),
    "buffer replaced": (lambda m: m.stage.b1.bn.register_buffer("running_mean", torch.randn(4)), False),
    "buffers removed (batch statistics then)": (_drop_running_stats, True),
    "buffer nothing reads added": (lambda m: m.stage.b1.register_buffer("unused", torch.zeros(1)), False),
    "forward hook registered": (
        lambda m: m.stage.b3.register_forward_hook(lambda mod, args, out: out * 2),
        True,
    ),
    "forward pre-hook registered on a dense layer": (
        lambda m: m.dense.layer0.register_forward_pre_hook(lambda mod, args: (args[0] + 1,)),
        True,
    ),
    "training flag of one BatchNorm": (lambda m: m.stage.b2.bn.train(), True),
    "class of a submodule swapped": (lambda m: setattr(m.stage.b2.act, "__class__", nn.Tanh), True),
    "forward set on an instance": (lambda m: setattr(m.stage.b1, "forward", lambda x: x * 3), True),
    "parametrization registered": (
        lambda m: parametrize.register_parametrization(m.stage.b1.conv, "weight", _Double()),
        True,
    ),
}


class _Double(nn.Module):
    def forward(self, w):
        return w * 2


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_of_the_module_tree_is_seen(change):
    how, misses = CHANGES[change]
    model, jitted, x = _net()
    _agrees(model, jitted, x)
    _agrees(model, jitted, x)
    assert _captures(jitted) == 1
    how(model)
    _agrees(model, jitted, x)
    _agrees(model, jitted, x)
    if misses:
        assert _captures(jitted) == 2, change
    else:
        assert _captures(jitted) == 1, change  # nothing the call reads changed: the entry served
    assert not jitted.explain().fallbacks


def test_children_and_module_dict_views_guard_the_names_not_the_tree():
    model, jitted, x = _net()
    _agrees(model, jitted, x)
    guards = "\n".join(jitted.entries[0].guards)
    assert "list(self._modules['stage']._modules) == ['b1', 'b2', 'b3']" in guards
    assert "list(self._modules['dense']._modules) == ['layer0', 'layer1']" in guards
    # the stage's own tables, which no forward reads, are not guarded
    assert "self._modules['stage']._parameters" not in guards
    assert "self._modules['stage']._modules['b1']._buffers)" not in guards
    for fn in (nn.Module.named_children, nn.ModuleDict.items, nn.ModuleDict.values, nn.ModuleDict.keys):
        assert explain_rule(fn).startswith("native: a module's direct submodules")


class Walks(nn.Module):
    """Every modelled listing, and one a subclass overrides (which is interpreted instead)."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form
        self.table = nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Tanh()})

    def forward(self, x):
        if self.form == "named_children":
            for name, child in self.table.named_children():
                x = child(x) + len(name)
        elif self.form == "values":
            for child in self.table.values():
                x = child(x)
        elif self.form == "keys":
            for key in self.table.keys():
                x = self.table[key](x)
        else:
            x = x * len(list(self.table.children()))
        return x


@pytest.mark.parametrize("form", ["named_children", "values", "keys", "count_children"])
def test_listing_forms_see_an_added_and_a_replaced_submodule(form):
    torch.manual_seed(0)
    model = Walks(form)
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 3)
    _agrees(model, jitted, x)
    model.table["c"] = nn.Sigmoid()
    _agrees(model, jitted, x)
    model.table["a"] = nn.Linear(3, 3)
    _agrees(model, jitted, x)
    # `children()` skips a submodule met twice, so which submodule each name holds is guarded even
    # where only their number is used
    assert _captures(jitted) == 3
    assert not jitted.explain().fallbacks


class OwnChildren(Stage):
    def named_children(self):
        for name, module in super().named_children():
            if name != "b2":
                yield name, module


def test_a_module_overriding_named_children_is_interpreted():
    torch.manual_seed(0)
    model = OwnChildren(4, 3).eval()
    jitted = jit(model, backend="eager")
    x = torch.randn(1, 4, 5, 5)
    _agrees(model, jitted, x)
    model.b3 = ConvBn(4).eval()
    _agrees(model, jitted, x)
    model.b2 = ConvBn(4).eval()  # skipped by the override, but listed by torch's named_children
    _agrees(model, jitted, x)
    assert _captures(jitted) == 3
    assert not jitted.explain().fallbacks


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_batch_norm_checks_shared_memory_only_when_it_updates_its_statistics(train):
    """`F.batch_norm(..., training=False)` writes no running statistics, so the entry needs no check
    of which inputs share memory (it was most of a BatchNorm model's guard time). In training mode it
    writes them: given its own running mean as the input, AOTAutograd's graph (compiled for inputs
    that share no memory) would read the mean before the update, so that call must miss."""
    torch.manual_seed(0)
    model = nn.BatchNorm1d(3).train(train)
    eager = nn.BatchNorm1d(3).train(train)
    eager.load_state_dict(model.state_dict())

    def step(norm, x):
        return norm(x.expand(4, 3) * torch.arange(4.0).unsqueeze(1)) + x

    jitted = jit(step, backend="aot_eager")
    with torch.no_grad():
        for kind in ["apart", "apart", "shared", "apart", "shared"]:
            if kind == "apart":
                x = torch.randn(3)
                pair = (x.clone(), x.clone())
            else:
                pair = (model.running_mean, eager.running_mean)
            assert torch.allclose(jitted(model, pair[0]), step(eager, pair[1])), kind
            assert torch.allclose(model.running_mean, eager.running_mean)
    kinds = {g.split(":")[0] for entry in jitted.entries for g in entry.guards}
    assert ("SHARED_MEMORY" in kinds) == train
    assert jitted.explain().fallbacks == ()


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        return x * self.scale


def _chain(cls: type) -> nn.Sequential:
    """Ten modules of one class: a name read on many modules of a class is read from their
    `__dict__` (on a few, the guards on the classes would cost more than the dict reads save)."""
    return nn.Sequential(*(cls() for _ in range(10)))


@pytest.mark.parametrize("added", ["property", "plain class attribute"])
def test_an_attribute_read_from_the_module_dict_sees_its_class_gain_the_name(added):
    """A module's own attributes (`self.scale`, its `_parameters`) are read from its `__dict__` in the
    generated code, which is what `self.scale` reads as long as no class of the module defines
    `scale`: a property added to the class later takes precedence over the instance's value."""

    class Local(Scaled):
        pass

    model = _chain(Local)
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 3)
    _agrees(model, jitted, x)
    assert "['scale']" in jitted.entries[0].source  # read from the modules' __dict__
    last = model[-1]  # read from its __dict__ (the first few are read as attributes)
    if added == "property":
        Local.scale = property(lambda self: 1.5 if self is last else self.__dict__["scale"])
    else:
        Local.scale = 7.0  # the instances' own values still win
    _agrees(model, jitted, x)
    assert _captures(jitted) == 2
    assert not jitted.explain().fallbacks


def test_an_attribute_read_from_the_module_dict_sees_its_class_take_over_attribute_access():
    class Plain(Scaled):
        pass

    model = _chain(Plain)
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 3)
    _agrees(model, jitted, x)
    assert "['scale']" in jitted.entries[0].source

    last = model[-1]  # read from its __dict__ (the first few are read as attributes)

    def halved_scale(self, name):
        value = nn.Module.__getattribute__(self, name)
        return value / 2 if name == "scale" and self is last else value

    Plain.__getattribute__ = halved_scale  # `self.scale` is no longer what its __dict__ holds
    _agrees(model, jitted, x)
    assert _captures(jitted) == 2  # the entry missed (the new capture then runs eagerly: the hook
    # that calls the module's own __getattribute__ is library code calling user code back)
