"""An interpreter for the differential tests that also checks every instruction it runs.

After each handler returns normally, the change in stack depth must be what CPython's own compiler
says that instruction does (`dis.stack_effect` of the running Python, on the path taken: jump or not,
plus the effect of any instruction a handler deliberately steps over, such as the END_FOR after an
exhausted FOR_ITER or the SET_FUNCTION_ATTRIBUTEs that 3.13's MAKE_FUNCTION runs itself). It also
records which opcodes ran, so a test can require every handler of the running Python to be exercised.
"""

from __future__ import annotations

import dataclasses
import dis
import types
from typing import Any

from jitlab.jit.interpreter import Interpreter, unsupported_reason
from jitlab.jit.interpreter.frame import CodeInfo

EXECUTED: set[str] = set()  # opcode names run by any CheckingInterpreter in this test session
_JUMPS = set(getattr(dis, "hasjump", ())) | set(dis.hasjrel) | set(dis.hasjabs)


def _effect(instr: dis.Instruction, jump: bool) -> int:
    if instr.opname == "PRECALL":  # 3.11 books a call's arguments on PRECALL, the callable on CALL
        return 0
    if instr.opname == "CALL" and "PRECALL" in dis.opmap:
        return -1 - instr.arg
    op = dis.opmap[instr.opname]
    try:
        return dis.stack_effect(op, instr.arg, jump=jump)
    except ValueError:  # an opcode without argument
        return dis.stack_effect(op, None, jump=jump)


def _expected(info: CodeInfo, index: int, landed: int) -> int:
    instrs = info.instructions
    instr = instrs[index]
    if landed == index + 1:
        return _effect(instr, False)
    if dis.opmap[instr.opname] in _JUMPS:
        target = info.index_of(instr.argval)
        if landed >= target:
            return _effect(instr, True) + sum(_effect(i, False) for i in instrs[target:landed])
    return _effect(instr, False) + sum(_effect(i, False) for i in instrs[index + 1 : landed])


def _checked(info: CodeInfo, index: int, handler: Any) -> Any:
    def run(interp: Any, frame: Any, instr: dis.Instruction) -> None:
        depth = len(frame.stack)
        EXECUTED.add(instr.opname)
        handler(interp, frame, instr)  # an exception skips the check: unwinding sets the depth
        if frame.signal is not None:
            return  # return, yield and generator creation leave the frame
        expected = _expected(info, index, frame.pc)
        got = len(frame.stack) - depth
        assert got == expected, (
            f"{info.code.co_qualname}: {instr.opname} {instr.argrepr} at offset {instr.offset} changed "
            f"the stack by {got}, CPython's compiler says {expected}"
        )

    return run


_CHECKED: dict[types.CodeType, CodeInfo] = {}


class CheckingInterpreter(Interpreter):
    """`Interpreter` whose frames run handlers wrapped in the stack-effect check."""

    def run_frame(self, frame: Any, throw: BaseException | None = None) -> None:
        info = _CHECKED.get(frame.info.code)
        if info is None:
            handlers = tuple(_checked(frame.info, i, h) for i, h in enumerate(frame.info.handlers))
            info = _CHECKED[frame.info.code] = dataclasses.replace(frame.info, handlers=handlers)
        frame.info = info
        super().run_frame(frame, throw)


def outcome(fn: Any) -> tuple:
    """("ok", value) or ("raised", type, message): what a differential test compares."""
    try:
        return ("ok", fn())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


def interpreted_outcome(program: Any, *args: Any) -> tuple:
    return outcome(lambda: CheckingInterpreter().call(program, args, {}))


def code_objects(code: types.CodeType) -> list[types.CodeType]:
    """`code` and every code object nested in its constants (inner functions, lambdas, genexps)."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(code_objects(const))
    return found


def unsupported_in(program: Any) -> list[str]:
    """Why parts of `program` would run natively (empty when all of it is interpreted)."""
    return [r for r in map(unsupported_reason, code_objects(program.__code__)) if r is not None]
