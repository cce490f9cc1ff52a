"""A class changed between calls is seen by the next call: what a lookup found in a class (a class
attribute read through a new object, a method, `forward`, `__init__`, `__call__`, a property, an
operator's special method) is guarded on the class that holds it.

Before, only the object read was guarded: `C().factor` after `C.factor = 3.0`, a method replaced on
the class (`Model.helper = ...`), or a library patching `forward` kept the first call's constant or
code, a wrong result."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from jitlab.jit import jit


def _first_then_changed(fn, change, x):
    """Outputs of the jitted and the eager `fn` before and after `change()`."""
    jitted = jit(fn, backend="eager")
    before = (jitted(x), fn(x))
    change()
    after = (jitted(x), fn(x))
    return before, after, jitted


class Scaled:
    factor = 2.0

    def __init__(self):
        self.offset = 1.0


class Doubler:
    def __init__(self):
        self.k = 2.0

    def apply(self, x):
        return x * self.k


class Base:
    scale = 2.0


class Derived(Base):
    pass


class WithProperty:
    @property
    def value(self):
        return 2.0


class Addable:
    def __add__(self, other):
        return other + 1


class CallableObject:
    def __call__(self, x):
        return x + 1


class Model(nn.Module):
    def helper(self, x):
        return x * 2

    def forward(self, x):
        return self.helper(x) + 1


class Plain(nn.Module):
    def forward(self, x):
        return x * 2


def _class_attribute_through_new_object(x):
    return x * Scaled().factor + Scaled().offset


def _method_of_new_object(x):
    return Doubler().apply(x)


def _inherited_attribute(x):
    return x * Derived().scale


def _property(x):
    return x * WithProperty().value


def _operator(x):
    return Addable() + x


_callable = CallableObject()


class Record:
    """No `__init__` and no `extra`: a lookup of `extra` on a new object misses, until the class
    gains it (fuzz seed 0, program 199 found the `getattr` form: the old default was served)."""


class RecordWithInit:
    def __init__(self):
        self.k = 1.0


def _getattr_default(x):
    return x + getattr(Record(), "extra", 0.0)


def _caught_missing_attribute(x):
    made = RecordWithInit()
    try:
        extra = made.extra
    except AttributeError:
        extra = 0.0
    return x + extra * made.k


def _hasattr(x):
    made = RecordWithInit()
    return x + (made.extra if hasattr(made, "extra") else 0.0)


def _call(x):
    return _callable(x)


CASES = {
    "class attribute": (_class_attribute_through_new_object, lambda mp: mp.setattr(Scaled, "factor", 3.0)),
    "method": (_method_of_new_object, lambda mp: mp.setattr(Doubler, "apply", lambda self, x: x - self.k)),
    "__init__": (_method_of_new_object, lambda mp: mp.setattr(Doubler, "__init__", lambda self: setattr(self, "k", 5.0))),
    "attribute shadowed in a subclass": (_inherited_attribute, lambda mp: mp.setattr(Derived, "scale", 4.0)),
    "base attribute": (_inherited_attribute, lambda mp: mp.setattr(Base, "scale", 6.0)),
    "property": (_property, lambda mp: mp.setattr(WithProperty, "value", property(lambda self: 6.0))),
    "operator": (_operator, lambda mp: mp.setattr(Addable, "__add__", lambda self, other: other + 3)),
    "__call__": (_call, lambda mp: mp.setattr(CallableObject, "__call__", lambda self, x: x + 7)),
    "getattr default": (_getattr_default, lambda mp: mp.setattr(Record, "extra", -0.5, raising=False)),
    "missing attribute caught": (_caught_missing_attribute, lambda mp: mp.setattr(RecordWithInit, "extra", 2.0, raising=False)),
    "hasattr": (_hasattr, lambda mp: mp.setattr(RecordWithInit, "extra", 3.0, raising=False)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_a_class_changed_between_calls_changes_the_result(name, monkeypatch):
    fn, change = CASES[name]
    x = torch.arange(3.0)
    before, after, jitted = _first_then_changed(fn, lambda: change(monkeypatch), x)
    assert torch.equal(*before)
    assert not torch.equal(before[1], after[1])  # the change matters eagerly
    assert torch.equal(*after), f"{name}: the jitted call kept the class of its first call"
    assert jitted.explain().fallbacks == ()


def test_a_method_replaced_on_a_modules_class_is_seen(monkeypatch):
    model = Model()
    jitted = jit(model, backend="eager")
    x = torch.arange(3.0)
    assert torch.equal(jitted(x), model(x))
    monkeypatch.setattr(Model, "helper", lambda self, x: x * 5)
    assert torch.equal(jitted(x), x * 5 + 1)


def test_forward_patched_on_the_class_or_the_instance_is_seen(monkeypatch):
    model = Plain()
    outer = nn.Sequential(model)
    jitted = jit(outer, backend="eager")
    x = torch.arange(3.0)
    assert torch.equal(jitted(x), x * 2)
    monkeypatch.setattr(Plain, "forward", lambda self, x: x * 3)
    assert torch.equal(jitted(x), x * 3)
    model.forward = lambda x: x * 4  # as hook libraries wrap one instance's forward
    assert torch.equal(jitted(x), x * 4)
    del model.forward
    assert torch.equal(jitted(x), x * 3)


def test_an_unchanged_class_is_one_cache_entry():
    jitted = jit(_method_of_new_object, backend="eager")
    x = torch.arange(3.0)
    for _ in range(3):
        assert torch.equal(jitted(x), _method_of_new_object(x))
    report = jitted.explain()
    assert len(report.graphs) == 1 and report.graphs[0].hits == 2
    assert any("Doubler.__dict__['apply']" in guard for guard in report.graphs[0].guards), report.graphs[
        0
    ].guards
