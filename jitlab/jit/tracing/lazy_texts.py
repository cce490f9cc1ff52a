"""f-strings formatted from symbolic sizes, read only when their text is (TorchDynamo formats such
strings lazily too).

torchvision's VisionTransformer checks `torch._assert(x.dim() == 3, f"Expected ... got {x.shape}")`.
Formatting the shape reads every size, which would pin the batch size, though the message is only
built to be dropped when the condition holds. When an f-string goes straight into a call
(`frame.text_goes_to_call`: nothing but loads and the other fields' formatting runs before that
call), its fields of sizes are formatted without reading them: the result is a `PendingText`, a str
holding the characters eager code makes, and the sizes it shows wait in `pending_texts`. At the call,
`torch._assert` with a condition that is True does nothing, so the text is never read and no size is
pinned. Any other call, or a field the tracer does not know runs no code, reads the pending texts
first: their sizes are pinned (explain() says so, with the line), and the call gets plain strings.
Whenever in doubt the text counts as read: that is correct, only specialised.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

import torch

from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.interpreter.ops_arith import CONVERSIONS

#: what formatting runs no code for: a field of these (not sizes) leaves the pending texts pending
_INERT = (int, float, str, bool, type(None))
_MAX_SIZES = 16


class PendingText(str):
    """A string formatted from sizes whose text nothing has read yet."""

    __slots__ = ()


class TextRecorder(Protocol):
    """What the lazy texts use of the capture's graph recorder (tracing's BreakRecorder, whose
    SymbolicSizes knows the sizes); tests/jit/test_jit_owned_state.py checks the real one."""

    def has_symbols(self) -> bool: ...

    def lazy_entries_in(self, value: object, depth: int = 0) -> list[tuple[Any, ...]]: ...

    def size_derived(self, entry: tuple, depth: int = 0) -> bool: ...

    def reading(self, reason: str) -> contextlib.AbstractContextManager[None]: ...

    def use(self, value: object) -> None: ...


class TextTracer(Protocol):
    """What the lazy texts use of the tracer: the capture's graph recorder (made right after the
    tracer, so read at each use); tests/jit/test_jit_owned_state.py checks the real one."""

    @property
    def recorder(self) -> TextRecorder: ...


class LazyTexts:
    """Owned by the tracer (`tracer.texts`): Hooks.lazy_format, build_string and settle_texts, and
    the texts still pending (the tracer's `pending_texts` is this same dict, which the interpreter
    tests before each call)."""

    def __init__(self, tracer: TextTracer) -> None:
        self.tracer = tracer
        self.pending_texts: dict[int, tuple[PendingText, list[DataInt]]] = {}

    def lazy_format(self, value: object, spec: str, conversion: int) -> str | None:
        if type(value) is PendingText and id(value) in self.pending_texts:
            sizes = self.pending_texts[id(value)][1]
            plain: object = str(value)
        else:
            sizes = self._shown_sizes(value)
            if sizes is None:
                if type(value) not in _INERT:
                    self.read_texts()  # formatting it may run code, or read a number
                return None
            plain = _plain(value)
        try:
            if conversion:
                plain = CONVERSIONS[conversion](plain)
            text = PendingText(format(plain, spec))
        except Exception:
            self._read(sizes)
            self.read_texts()
            raise  # eager code's error: `plain` is what eager code formats
        if type(value) is PendingText:
            self.pending_texts.pop(id(value), None)  # replaced by the text formatted from it
        self._pend(text, sizes)
        return text

    def build_string(self, parts: list[str]) -> str:
        pending = self.pending_texts
        if not pending or not any(type(p) is PendingText for p in parts):
            return "".join(parts)
        sizes: list[DataInt] = []
        known = False
        for part in parts:
            if type(part) is PendingText and id(part) in pending:
                sizes.extend(pending.pop(id(part))[1])
                known = True
        text = "".join(parts)
        if not known:
            return text
        joined = PendingText(text)
        self._pend(joined, sizes)
        return joined

    def settle_texts(self, fn: object, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        pending = self.pending_texts
        if (
            fn is torch._assert
            and not kwargs
            and len(args) == 2
            and args[0] is True  # `torch._assert(True, msg)` returns None and reads nothing
            and type(args[1]) is PendingText
            and list(pending) == [id(args[1])]
        ):
            pending.clear()
            return None
        self.read_texts()
        # only the texts this call takes are settled: a call made while formatting a later field of
        # the f-string (an interpreted `__format__`) leaves the texts of the outer call known, so
        # the outer call still gets plain strings
        for value in (fn, *args, *kwargs.values()):
            if type(value) is PendingText:
                pending.pop(id(value), None)
        return (
            _plain_text(fn),  # `f"{n}"(a, b)`: eager's TypeError names a str
            tuple(map(_plain_text, args)),
            {k: _plain_text(v) for k, v in kwargs.items()},
        )

    def read_texts(self) -> None:
        """The pending texts are read (or may be): the sizes they show are pinned. They stay known
        (with nothing left to read) until the call that takes them, which gets plain strings."""
        for text, sizes in list(self.pending_texts.values()):
            self._read(sizes)
            self.pending_texts[id(text)] = (text, [])

    def _read(self, sizes: list[DataInt]) -> None:
        if sizes:
            recorder = self.tracer.recorder
            with recorder.reading("formatted into a string whose text is used"):
                recorder.use(sizes)

    def _pend(self, text: PendingText, sizes: list[DataInt]) -> None:
        self.pending_texts[id(text)] = (text, sizes)

    def _shown_sizes(self, value: object) -> list[DataInt] | None:
        """The symbolic sizes `value` holds when it is a size, or a torch.Size, tuple or list of
        ints holding sizes only (no number read from tensor data); None otherwise."""
        recorder = self.tracer.recorder
        if recorder is None or not recorder.has_symbols():
            return None
        t = type(value)
        if t is DataInt:
            items = [value]
        elif t in (torch.Size, tuple, list) and len(value) <= _MAX_SIZES:
            items = list(value)
            if not all(type(v) is int or type(v) is DataInt for v in items):
                return None
        else:
            return None
        entries = recorder.lazy_entries_in(items)
        if not entries or not all(recorder.size_derived(e) for e in entries):
            return None
        return [v for v in items if type(v) is DataInt]


def _plain(value: DataInt | torch.Size | tuple | list) -> object:
    """`value` with plain ints for its sizes (formatted as eager code formats them)."""
    if type(value) is DataInt:
        return int(value)
    return type(value)(int(v) for v in value)  # torch.Size, tuple or list


def _plain_text(value: object) -> object:
    return str(value) if type(value) is PendingText else value
