"""Stage 0 of jitlab.jit, interpreter: a concrete interpreter of CPython 3.11, 3.12 and 3.13 bytecode,
written in Python.

`Interpreter(hooks).call(fn, args, kwargs)` runs `fn` as CPython would, instruction by instruction,
stepping into the functions the hooks accept and calling everything else natively. The JIT plugs
its tracer in as the hooks.

Opcode handlers are registered per version (registry.py). The ops_* modules hold, one family each, the
handlers whose semantics all three versions share; py311.py, py312.py and py313.py hold what a version
changed, so each version's differences stay in one place. Only the running Python's table is used; an
opcode without a handler there makes `unsupported_reason` name it, and the function runs natively.
Everything else that knows opcodes lives here too: resumption.py says where a graph break may happen
and how the interrupted instruction resumes. The other stages use public names only.

May import: nothing outside this folder (the interpreter runs alone, with plain `Hooks`).
"""

from jitlab.jit.interpreter import (  # noqa: F401 - importing registers the handlers
    ops_arith,
    ops_calls,
    ops_classes,
    ops_containers,
    ops_control,
    ops_exceptions,
    ops_names,
    ops_stack,
    py311,
    py312,
    py313,
)
from jitlab.jit.interpreter.core import Interpreter, unsupported_reason
from jitlab.jit.interpreter.generators import InterpretedGenerator
from jitlab.jit.interpreter.hooks import Hooks, is_user_code
from jitlab.jit.interpreter.registry import HANDLERS, coverage

__all__ = [
    "HANDLERS",
    "Hooks",
    "InterpretedGenerator",
    "Interpreter",
    "coverage",
    "is_user_code",
    "unsupported_reason",
]
