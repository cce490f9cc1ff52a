"""What the inputs of one callable looked like in its earlier captures (`ShapeHistory`): the sizes of
each tensor input by where it was read from, and which dimensions varied. A capture asks it which
dimensions to make symbolic (graph/shapes.py); the frontend keeps one per jitted callable."""

from __future__ import annotations

import torch

from jitlab.jit.graph.dynamic_scalars import ScalarHistory


class ShapeHistory:
    """The sizes each input (by where it was read from) had in earlier captures of one callable."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[int, ...], frozenset[int]]] = {}
        self._varied: dict[str, frozenset[int]] = {}  # dimensions seen with two sizes
        self._arguments_varied = False  # a tensor argument of the call being captured changed sizes
        self.scalars = ScalarHistory()  # the floats read from outside, for dynamic_scalars.py

    def begin_call(self, args: tuple, kwargs: dict) -> None:
        """Before a capture: whether a tensor the caller passes (an argument or keyword argument)
        has other sizes than in an earlier capture. Then every tensor argument seen before gets its
        dimensions symbolic, not only the one that changed: Whisper's decoder ids changing length
        first and its audio features changing batch later would otherwise cost a capture more."""
        passed = [(f"args[{i}]", v) for i, v in enumerate(args)]
        passed += [(f"kwargs[{k!r}]", v) for k, v in kwargs.items()]
        self._arguments_varied = any(
            isinstance(v, torch.Tensor)
            and (seen := self._seen.get(label)) is not None
            and len(seen[0]) == v.dim()
            and tuple(v.shape) != seen[0]
            for label, v in passed
        )

    def varied(self, label: str, tensor: torch.Tensor) -> frozenset[int]:
        """The dimensions of an input that had another size in an earlier capture (or before)."""
        seen = self._seen.get(label)
        if seen is None or len(seen[0]) != tensor.dim():
            return frozenset()
        changed = frozenset(d for d, n in enumerate(tensor.shape) if n != seen[0][d])
        return changed | self._varied.get(label, frozenset())

    def dynamic_dims(self, label: str, tensor: torch.Tensor) -> frozenset[int]:
        """Dimensions to make symbolic once an input's sizes changed since an earlier capture (or
        some were symbolic already): all of them, unless the size now is 0 or 1, which stays
        specialised. Not only those that changed: a server's texts vary in batch and length, and
        making only the changed one symbolic costs a capture for each dimension that varies later
        (TorchDynamo's automatic dynamic shapes do that). A dimension the program relies on (a
        hidden size matched with a weight, a size Python pins) is fixed again by the guards, with
        no capture more."""
        seen = self._seen.get(label)
        if seen is None or isinstance(tensor, torch.nn.Parameter) or not tensor.is_contiguous():
            return frozenset()
        shape, dims = seen
        now = tuple(tensor.shape)
        argument = self._arguments_varied and label.startswith(("args[", "kwargs["))
        if len(shape) != len(now) or (now == shape and not dims and not argument):
            return frozenset()
        return frozenset(d for d in range(len(now)) if now[d] >= 2)

    def record(self, label: str, shape: tuple[int, ...], dims: frozenset[int]) -> None:
        old = self._seen.get(label)
        if old is not None and len(old[0]) == len(shape):
            dims = dims | old[1]
            changed = frozenset(d for d, n in enumerate(shape) if n != old[0][d])
            self._varied[label] = self._varied.get(label, frozenset()) | changed
        self._seen[label] = (shape, dims)
