"""Finding where an outside object came from when the program reached it without the tracer seeing
the read (library code read it natively, or it was reached through a value without a source).

A tensor used by the graph, or an object the program writes to, must have a *source* (a path from
the call's arguments, the root module or a global) so that later calls can find it and guard it. The
search goes breadth-first from every object the capture already has a source for, through module
tables, instance attributes, dict items (literal keys), list and tuple items and class attributes,
and returns the first path that reaches the object. Every step of the path is then guarded by the
tracer, and the object itself by identity, so a later call that would reach another object misses.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import AttrSource, ItemSource, Source, is_literal_key

MAX_DEPTH = 4
MAX_VISITS = 4000


def find_path(roots: list[tuple[Any, Source]], target: object) -> list[tuple[Any, Source]] | None:
    """The objects and sources from a root down to `target` (root excluded), or None.

    Reading attributes on the way may touch deprecated names (`torch.distributed.reduce_op`): their
    warnings are jitlab.jit's doing, not the program's, so they are not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _search(roots, target)


def _search(roots: list[tuple[Any, Source]], target: object) -> list[tuple[Any, Source]] | None:
    queue: deque[tuple[Any, Source, int, tuple]] = deque((obj, src, 0, ()) for obj, src in roots)
    seen = {id(obj) for obj, _ in roots}
    visits = 0
    while queue and visits < MAX_VISITS:
        obj, source, depth, path = queue.popleft()
        visits += 1
        if depth >= MAX_DEPTH:
            continue
        for child, child_source in _children(obj, source):
            step = (*path, (child, child_source))
            if child is target:
                return list(step)
            if id(child) in seen or isinstance(child, torch.Tensor) or not _searchable(child):
                continue
            seen.add(id(child))
            queue.append((child, child_source, depth + 1, step))
    return None


def _searchable(value: object) -> bool:
    return isinstance(value, (nn.Module, list, tuple, dict, type)) or hasattr(value, "__dict__")


def _children(obj: object, source: Source) -> Iterator[tuple[Any, Source]]:
    if isinstance(obj, nn.Module):
        for table in ("_parameters", "_buffers", "_modules"):
            # none on a ScriptModule, whose `__getattr__` reads the tables of the module it wraps
            for key, value in obj.__dict__.get(table, {}).items():
                if value is not None:
                    yield value, ItemSource(AttrSource(source, table), key)
        for name, value in obj.__dict__.items():
            if not name.startswith("_") and name != "training":
                yield value, AttrSource(source, name)
        return
    base = container_base(type(obj))
    if base is dict:
        for key, value in list(obj.items())[:256]:
            if is_literal_key(key):
                yield value, ItemSource(source, key)
    elif base in (list, tuple):
        for i, value in enumerate(obj[:256]):
            yield value, ItemSource(source, i)
    cls = type(obj)
    if (
        not isinstance(obj, type)
        and cls.__module__ not in ("builtins",)
        and not cls.__module__.startswith("torch")
    ):
        yield cls, AttrSource(source, "__class__")  # class attributes (a table shared by instances)
    attrs = obj.__dict__ if isinstance(obj, type) else getattr(obj, "__dict__", None)
    if isinstance(obj, type) or type(attrs) is dict:
        for name, value in list(attrs.items()):
            if name.isidentifier() and not (name.startswith("__") and name.endswith("__")):
                yield value, AttrSource(source, name)


def find_in_module(module: nn.Module, source: Source, tensor: torch.Tensor, depth: int) -> Source | None:
    """The path to `tensor` among the parameters and buffers of `module` and its submodules (at most
    8 levels deep), from the module's `source`; None when it is not there."""
    if depth > 8:
        return None
    for table in ("_parameters", "_buffers"):
        for key, value in getattr(module, table).items():
            if value is tensor:
                return ItemSource(AttrSource(source, table), key)
    for key, child in module._modules.items():
        if child is not None:
            found = find_in_module(child, ItemSource(AttrSource(source, "_modules"), key), tensor, depth + 1)
            if found is not None:
                return found
    return None
