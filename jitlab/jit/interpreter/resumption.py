"""Opcode-level knowledge of graph breaks: where the interpreter may stop a capture and resume the
program later, and how an interrupted instruction continues.

`break_site` says where the running instruction is and whether a break there could be resumed: the
instruction must be a call, a push of a value or a truth test (`CALL_OPS`, `PUSH_OPS`, `TRUTH_OPS`,
the names of every supported Python version), and every outer interpreted frame must be waiting for a
plain call. `continue_instruction` finishes the interrupted instruction with the break's value;
`run_frames` rebuilds interpreted frames and runs them to the end. jitlab.jit.breaks uses these; it
never reads the interpreter's internals.
"""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any

from jitlab.jit.interpreter import sites
from jitlab.jit.interpreter.core import USER_FRAMES_ATTR, Interpreter, builtins_of
from jitlab.jit.interpreter.frame import Frame, code_info
from jitlab.jit.interpreter.hooks import JIT_DIR, Hooks

CALL_OPS = frozenset({"CALL", "CALL_FUNCTION_EX", "CALL_KW"})
# instructions whose handler pushes the value of the hook that made a data-dependent value
PUSH_OPS = CALL_OPS | {"BINARY_SUBSCR", "BINARY_OP", "COMPARE_OP", "UNARY_NEGATIVE", "UNARY_POSITIVE",
                       "UNARY_INVERT", "BINARY_SLICE"}  # fmt: skip
TRUTH_OPS = frozenset({
    "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "JUMP_IF_TRUE_OR_POP",
    "JUMP_IF_FALSE_OR_POP", "UNARY_NOT", "TO_BOOL", "COMPARE_OP",  # 3.13: COMPARE_OP may coerce to bool
})  # fmt: skip
_UNINTERPRETED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_INTERPRETER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TORCH_DISPATCH_FILES = (os.path.join("torch", "overrides.py"),)


@dataclass(frozen=True)
class Where:
    """A place in the running program: file, line and function of the innermost interpreted frame."""

    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"


@dataclass(frozen=True)
class ResumePoint:
    """How the innermost frame continues: `push` the break's value (a call's result), or `truth`:
    branch on it as the conditional instruction `opname` does (jumping to `target`)."""

    kind: str
    opname: str
    target: int | None = None


def break_site(interp: Interpreter, kind: str | None) -> tuple[Where, ResumePoint | None, str | None]:
    """Where the interpreter is now, and whether the program could be resumed here with a value.

    Call it directly from the method that decides on a break: that method's callers are inspected.
    The hooks' methods it must recognise on the Python stack are marked where they are defined
    (`jitlab.jit.interpreter.sites`, which says why the stack is walked at all).

    `kind` "call": a call break, made by the hooks' native call (`sites.NATIVE_CALL_OUTER`, then
    `sites.NATIVE_CALL_INNER`) called by the interpreter for the
    current instruction (a call); None: a data-dependent value, pushed by the current instruction or
    tested by a branch (the caller checks that the value comes from that instruction's own call).
    The Python stack between here and the innermost `run_frame` must hold only jitlab.jit's own code
    (and torch's dispatch to the graph recorder), and every outer interpreted frame must be waiting
    for a plain call's result: between two `run_frame`s only the call handler, `Interpreter.call`
    and `Interpreter.call_function` (no library code, no lookaside, no generator in between).
    """
    frames = getattr(interp, "frames", None)
    if not frames:
        return Where("?", 0, "?"), None, "not inside interpreted code"
    inner = frames[-1]
    instr = inner.info.instructions[inner.pc - 1]
    where = Where(inner.code.co_filename, inner.current_line(), inner.code.co_qualname)
    run_frame = Interpreter.run_frame.__code__
    python = []
    py = sys._getframe(1)
    while py is not None:
        python.append(py)
        py = py.f_back
    runs = [n for n, f in enumerate(python) if f.f_code is run_frame]
    if len(runs) < len(frames):
        return where, None, "inside a generator run by library code"
    truth = False
    for py in python[: runs[0]]:
        name = py.f_code.co_filename
        if not (name.startswith(JIT_DIR) or name.endswith(_TORCH_DISPATCH_FILES)):
            return where, None, f"made inside {py.f_code.co_qualname} ({os.path.basename(name)})"
        if sites.is_site(py.f_code, sites.TRUTH):
            truth = True
    call, call_function = Interpreter.call.__code__, Interpreter.call_function.__code__
    if kind == "call":  # the interpreter's own call for the instruction, not a lookaside's
        inner, outer = python[1].f_code, python[2].f_code
        native = sites.is_site(inner, sites.NATIVE_CALL_INNER) and sites.is_site(
            outer, sites.NATIVE_CALL_OUTER
        )
        if not native or python[3].f_code is not call:
            return where, None, "a call made by jitlab.jit's own machinery"
        if not _handler_frames(python[4 : runs[0]]):
            return where, None, "a call made by jitlab.jit's own machinery"
    for depth, frame in enumerate(reversed(frames)):
        if python[runs[depth]].f_locals.get("frame") is not frame:
            return where, None, "inside a generator run by library code"
        if depth:
            link = python[runs[depth - 1] + 1 : runs[depth]]
            if len(link) < 2 or link[0].f_code is not call_function or link[1].f_code is not call:
                return where, None, f"{frames[-depth].code.co_qualname} is called by library code"
            if not _handler_frames(link[2:]):
                return where, None, f"{frames[-depth].code.co_qualname} is called by library code"
    if kind == "call" and truth:
        return where, None, "inside a truth test"
    allowed = CALL_OPS if kind == "call" else TRUTH_OPS if truth else PUSH_OPS
    kind = "truth" if truth else "push"
    if instr.opname not in allowed:
        return where, None, f"inside the instruction {instr.opname}"
    if interp.handled_exception() is not None:
        return where, None, "while an exception is being handled"
    for outer, callee in zip(frames, frames[1:]):
        op = outer.info.instructions[outer.pc - 1].opname
        if op not in CALL_OPS or callee.code.co_flags & _UNINTERPRETED or callee.code.co_name == "__init__":
            return where, None, f"{callee.code.co_qualname} is called by {op} in {outer.code.co_qualname}"
    target = instr.argval if kind == "truth" and instr.opname != "UNARY_NOT" else None
    return where, ResumePoint(kind, instr.opname, target), None


def _handler_frames(frames: list[Any]) -> bool:
    """Python frames of the interpreter's opcode handlers (and their helpers) only."""
    return bool(frames) and all(f.f_code.co_filename.startswith(_INTERPRETER_DIR) for f in frames)


def run_frames(
    frames_state: tuple, point: ResumePoint, value: object, throw: BaseException | None, hooks: Hooks
) -> Any:
    """Run the rest of a call from a break: rebuild the frames from `(func, pc, locals, stack)` tuples
    (outermost first), hand the innermost one `value` (or raise `throw` at its current instruction),
    run each frame to its end with an interpreter on `hooks` and pass its result on."""
    frames = []
    for func, pc, locals_, stack in frames_state:
        frames.append(
            Frame(
                func=func,
                info=code_info(func.__code__),
                locals=locals_,
                globals=func.__globals__,
                builtins=builtins_of(func.__globals__),
                stack=stack,
                pc=pc,
            )
        )
    interp = Interpreter(hooks)
    innermost = frames[-1]
    if throw is None:
        continue_instruction(innermost, point, value)
    result: object = None
    for i in range(len(frames) - 1, -1, -1):
        frame = frames[i]
        if i < len(frames) - 1 and throw is None:
            frame.push(result)
        interp.depth = i + 1
        interp.frames = frames[: i + 1]
        try:
            interp.run_frame(frame, throw)
        except BaseException as exc:  # passed on to the calling frame, at its CALL instruction
            throw = exc
            continue
        throw = None
        result = frame.signal_value
    if throw is not None:
        if hasattr(throw, "__dict__"):
            throw.__dict__.pop(USER_FRAMES_ATTR, None)
        raise throw
    return result


def continue_instruction(frame: Frame, point: ResumePoint, value: object) -> None:
    """Finish the innermost frame's interrupted instruction with the value of the break."""
    if point.kind == "push":
        frame.push(value)
        return
    truth = bool(value)
    op = point.opname
    if op == "UNARY_NOT":
        frame.push(not truth)
    elif op in ("TO_BOOL", "COMPARE_OP"):  # 3.13: a comparison coerced to bool, then pushed
        frame.push(truth)
    elif op.startswith("POP_JUMP"):
        if truth == op.endswith("_TRUE"):
            frame.jump_to(point.target)
    elif op in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
        if truth == (op == "JUMP_IF_TRUE_OR_POP"):
            frame.jump_to(point.target)  # the tested value stays on the stack
        else:
            frame.pop()
    else:  # pragma: no cover - breaks are only placed at the instructions above
        raise RuntimeError(f"jitlab.jit cannot resume at {op}")
