"""What the lookasides (lookasides.py) use of the tracer, and what their helpers (dict_subclasses.py,
script_functions.py, which lookasides.py imports) use of `Lookasides`, as Protocols: the tracer
imports the lookasides, so they reach it only through these members. tests/jit/test_jit_owned_state.py
checks that the real tracer and the real `Lookasides` have every member."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from jitlab.jit.graph.autograd_functions import FunctionRecorder, FunctionTracer

if TYPE_CHECKING:
    from jitlab.jit.interpreter import Interpreter


class LookasideRecorder(FunctionRecorder, Protocol):
    """What the lookasides and their helpers use of the graph recorder, besides what applying a
    custom Function does: whether the graph mutates state (a TorchScript function's interpreted
    code, script_functions.py) and its pause (made_parameters.py, script_functions.py)."""

    has_mutation: bool

    def pause(self) -> contextlib.AbstractContextManager[None]: ...


class LookasideTracer(FunctionTracer, Protocol):
    """The tracer as the lookasides see it: its hooks for what the builtins they replace do (iterate,
    test truth, hand values to native code), and what applying a custom Function needs."""

    @property
    def recorder(self) -> LookasideRecorder: ...

    @property
    def interpreter(self) -> Interpreter | None: ...

    def get_iter(self, obj: object) -> Any: ...

    def models_iteration(self, obj: object) -> bool: ...

    def guard_children(self, module: object, values: bool) -> None: ...

    def truth(self, value: object) -> bool: ...

    def yielded(self, value: object, generator: object = None) -> None: ...

    def read_natively(self, value: object) -> None: ...

    def is_fresh(self, obj: object) -> bool: ...

    def call_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any: ...

    def store_item(self, container: object, key: object, value: object) -> None: ...


class SpecialMethods(Protocol):
    """Finds the user-written special methods of types (lookasides.py's `Specials`)."""

    def method(self, t: type, name: str) -> types.FunctionType | None: ...


class LookasideHost(Protocol):
    """The lookasides of one capture as their helpers see them: the tracer, the special methods and
    the interpreter that runs user code."""

    tracer: LookasideTracer
    specials: SpecialMethods

    @property
    def interp(self) -> Interpreter | None: ...
