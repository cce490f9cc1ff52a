"""A concrete interpreter of CPython 3.11 bytecode, written in Python.

`Interpreter(hooks).call(fn, args, kwargs)` runs `fn` as CPython would, instruction by instruction,
stepping into the functions the hooks accept and calling everything else natively. The JIT plugs
its tracer in as the hooks; opcode handlers live in the ops_* modules, one per family.
"""

from jitlab.jit.interpreter import (  # noqa: F401 - importing registers the handlers
    ops_arith,
    ops_calls,
    ops_containers,
    ops_control,
    ops_exceptions,
    ops_names,
    ops_stack,
)
from jitlab.jit.interpreter.core import InterpretedGenerator, Interpreter, unsupported_reason
from jitlab.jit.interpreter.hooks import Hooks, is_user_code
from jitlab.jit.interpreter.registry import HANDLERS

__all__ = ["HANDLERS", "Hooks", "InterpretedGenerator", "Interpreter", "is_user_code", "unsupported_reason"]
