"""Outside instances of container subclasses read whole by native code: a `defaultdict`, a
`Counter`, a dict subclass whose `__getitem__` computes values, a tuple subclass with its own item
access.

Before, a container was read whole only when its type was exactly list, tuple, dict or set, or a
plain object with an instance dict: a `defaultdict` handed to `json.dumps`, or the items of a
`Counter` summed by `Counter.total()`, were baked into the entry and a change between calls
returned the old result. A dict subclass is now guarded through `dict.keys` and `dict.__getitem__`
(what native code reads, none of the class's code run on a hit); another container with item access
of its own makes the capture uncacheable."""

from __future__ import annotations

import collections
import json
from collections.abc import Callable

import pytest
import torch

from jitlab.jit import jit


class Doubling(dict):
    """Python `__getitem__` that computes: native code reads the stored items, not these."""

    def __getitem__(self, key: str) -> float:
        return 2 * dict.__getitem__(self, key)


class Reversed(tuple):
    def __getitem__(self, index: int) -> float:
        return tuple.__getitem__(self, -1 - index)


HELD: dict[str, object] = {}


def dumped_defaultdict(x: torch.Tensor) -> torch.Tensor:
    return x * len(json.dumps(HELD["defaultdict"]))


def counter_total(x: torch.Tensor) -> torch.Tensor:
    return x * HELD["counter"].total()


def summed_doubling_values(x: torch.Tensor) -> torch.Tensor:
    return x * sum(HELD["doubling"].values()) + HELD["doubling"]["a"]


def summed_reversed(x: torch.Tensor) -> torch.Tensor:
    return x * sum(HELD["reversed"])


#: program: (the name it reads in HELD, what it holds there, a change to make between calls)
PROGRAMS: dict[Callable, tuple[str, Callable[[], object], Callable[[object], None]]] = {
    dumped_defaultdict: (
        "defaultdict",
        lambda: collections.defaultdict(float, a=1.0),
        lambda d: d.__setitem__("a", 123.5),
    ),
    counter_total: ("counter", lambda: collections.Counter(a=1, b=2), lambda c: c.update(a=3)),
    summed_doubling_values: (
        "doubling",
        lambda: Doubling(a=1.0, b=2.0),
        lambda d: dict.__setitem__(d, "b", 5.0),
    ),
}


@pytest.mark.parametrize("program", list(PROGRAMS), ids=lambda p: p.__name__)
def test_a_changed_container_subclass_is_seen(program: Callable) -> None:
    key, make, change = PROGRAMS[program]
    HELD[key] = make()
    jitted = jit(program, backend="eager")
    x = torch.ones(2)
    for step in range(6):
        if step == 3:
            change(HELD[key])
        assert torch.equal(jitted(x), program(x)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    assert report.captures == 2
    assert sum(g.hits for g in report.graphs) == 4


def test_a_tuple_subclass_with_its_own_item_access_read_whole_runs_eagerly() -> None:
    HELD["reversed"] = Reversed((1.0, 2.0))
    jitted = jit(summed_reversed, backend="eager")
    x = torch.ones(2)
    for _ in range(3):
        assert torch.equal(jitted(x), summed_reversed(x))
    assert "item access of its own" in str(jitted.explain())


class Registry(dict):
    """transformers' `_CanRecordRegistry`: its own `get` looks the key up with dict's `get`."""

    def get(self, key: str) -> dict:
        return super().get(key) or {}


REGISTRY = Registry(model={"scale": 2.0})


def looks_up_registry(x: torch.Tensor) -> torch.Tensor:
    flags = REGISTRY.get("model")
    return x * flags.get("scale", 1.0) + ("extra" in flags)


def test_a_lookup_in_a_dict_subclass_guards_the_key_it_reads() -> None:
    """`super().get(key)` reads one key: another key added to the registry keeps the entry, a
    changed item under the key is seen, and the key removed is seen."""
    jitted = jit(looks_up_registry, backend="eager")
    x = torch.ones(2)
    for step in range(8):
        if step == 2:
            dict.__setitem__(REGISTRY, "other", {"scale": 9.0})  # another model class registered
        if step == 4:
            REGISTRY["model"]["scale"] = 3.0
        if step == 6:
            dict.__delitem__(REGISTRY, "model")
        assert torch.equal(jitted(x), looks_up_registry(x)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    assert report.captures == 3  # the first, the changed item, the key removed
