"""Objects with `__slots__` read whole by native code (`copy.copy` and `copy.deepcopy` reduce them
with `object.__reduce_ex__`, which reads every slot that is set).

Before, only an object's instance dict was guarded when native code read it whole, so a slot's value
was baked into the entry: after `holder.scale = 5.0` the JIT returned the old result. Each test runs
the program eagerly and through `jitlab.jit` over calls that change the slots between them."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import pytest
import torch

from jitlab.jit import jit


class Slotted:
    __slots__ = ("scale", "shift")

    def __init__(self) -> None:
        self.scale = 2.0
        self.shift = 1.0


class SlotsAndDict:
    __slots__ = ("scale", "__dict__")

    def __init__(self) -> None:
        self.scale = 2.0
        self.shift = 1.0


@dataclasses.dataclass(slots=True)
class SlottedData:
    scale: float = 2.0
    shift: float = 1.0


class PrivateSlots(Slotted):
    """A slot with a private (mangled) name, in a subclass: `_PrivateSlots__bias`."""

    __slots__ = ("__bias",)

    def __init__(self) -> None:
        super().__init__()
        self.__bias = 0.5

    def bias(self) -> float:
        return self.__bias


def scaled_copy(x: torch.Tensor, holder: object) -> torch.Tensor:
    other = copy.copy(holder)
    return x * other.scale + other.shift


def scaled_deepcopy(x: torch.Tensor, holder: object) -> torch.Tensor:
    other = copy.deepcopy(holder)
    return x * other.scale + other.shift


def changes_each_slot(holder: object) -> list[Callable[[], None]]:
    def scale() -> None:
        holder.scale = 5.0

    def shift() -> None:
        holder.shift = 7.0

    return [scale, shift]


@pytest.mark.parametrize("program", [scaled_copy, scaled_deepcopy])
@pytest.mark.parametrize("kind", [Slotted, SlotsAndDict, SlottedData, PrivateSlots])
def test_a_slot_changed_between_calls_is_seen(program: Callable, kind: type) -> None:
    holder = kind()
    jitted = jit(program, backend="eager")
    x = torch.randn(3)
    changes = dict(zip((3, 5), changes_each_slot(holder)))
    for step in range(8):
        if step in changes:
            changes[step]()
        assert torch.equal(jitted(x, holder), program(x, holder)), (kind.__name__, step)
    report = jitted.explain()
    assert report.eager_misses == 0
    assert report.captures == 3  # one per state of the slots: the entries are kept and hit
    assert sum(g.hits for g in report.graphs) == 5


def biased_copy(x: torch.Tensor, holder: PrivateSlots) -> torch.Tensor:
    return x + copy.copy(holder).bias()


def test_a_private_slot_and_an_unset_slot_are_guarded() -> None:
    """A mangled slot name is read as copy reads it, and a slot unset at capture (left out of the
    copy, so reading it raises) that is set later makes a miss, not the old result."""
    holder = PrivateSlots()
    jitted = jit(biased_copy, backend="eager")
    x = torch.randn(3)
    for step in range(6):
        if step == 2:
            holder._PrivateSlots__bias = -1.5
        assert torch.equal(jitted(x, holder), biased_copy(x, holder)), step
    assert jitted.explain().captures == 2

    del holder.shift
    jitted = jit(scaled_copy, backend="eager")
    for step in range(4):
        if step == 2:
            holder.shift = 3.0
        try:
            expected = scaled_copy(x, holder)
        except AttributeError:
            with pytest.raises(AttributeError):
                jitted(x, holder)
        else:
            assert torch.equal(jitted(x, holder), expected), step
    assert torch.equal(jitted(x, holder), scaled_copy(x, holder))


class PropertyOverSlot(Slotted):
    """A subclass whose property hides the base's `shift` slot: `copy` reads the property."""

    __slots__ = ()

    @property
    def shift(self) -> float:
        return self.scale * 10

    @shift.setter
    def shift(self, value: float) -> None:
        pass  # the copy sets what it read: nothing to keep


def test_a_slot_hidden_by_a_property_is_not_served_from_an_entry() -> None:
    holder = PropertyOverSlot.__new__(PropertyOverSlot)
    holder.scale = 2.0
    jitted = jit(scaled_copy, backend="eager")
    x = torch.randn(3)
    for step in range(4):
        if step == 2:
            holder.scale = 3.0
        assert torch.equal(jitted(x, holder), scaled_copy(x, holder)), step
    assert "slots are read through Python code" in str(jitted.explain())
