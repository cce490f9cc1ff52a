"""Frames of the interpreter: decoded instructions, value stack, locals and the exception table.

Instructions come from `dis.get_instructions(code)`, which decodes `co_code` (the original bytecode,
not the specialised adaptive copy) and resolves jump targets to offsets on 3.11, 3.12 and 3.13 alike;
inline CACHE entries are dropped and the rest is a list indexed by `pc`, with `offset_to_index` for
jumps. Each instruction's handler is looked up once here, so the loop indexes a tuple and a function
with an opcode (or oparg) the running Python's table does not cover is known before it runs. The
exception table (`co_exceptiontable`, the same format in 3.11-3.13) is decoded by `exception_table`.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from jitlab.jit.interpreter.registry import HANDLERS, Handler, unsupported_opcode

if TYPE_CHECKING:
    from jitlab.jit.interpreter.hooks import Hooks


class _Marker:
    """A value stack entry that is no Python value: CPython's NULL."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: the NULL that CPython pushes beside a callable (PUSH_NULL, LOAD_GLOBAL/LOAD_ATTR with the low bit)
NULL = _Marker("NULL")
#: the NULL that LOAD_FAST_AND_CLEAR (3.12+) pushes for an unbound local, so that the STORE_FAST
#: restoring it after an inlined comprehension unbinds the name again (a marker of its own, so that
#: no other NULL on the stack is ever taken for it)
UNBOUND = _Marker("NULL (unbound local)")


class ExceptionTableEntry(NamedTuple):
    """Instructions at offsets [start, end) jump to `target` on an exception, with the value stack cut
    to `depth` (and the raising instruction's offset pushed first when `lasti`)."""

    start: int
    end: int
    target: int
    depth: int
    lasti: bool


def _varints(data: bytes) -> Iterator[int]:
    """The table's numbers: 6 bits per byte, most significant first, bit 6 set on all but the last."""
    value = 0
    for byte in data:
        value = (value << 6) | (byte & 63)
        if not byte & 64:
            yield value
            value = 0


def exception_table(code: types.CodeType) -> tuple[ExceptionTableEntry, ...]:
    """Decode `code.co_exceptiontable` (lengths and offsets are stored in 2-byte code units)."""
    numbers = list(_varints(code.co_exceptiontable))
    entries = []
    for i in range(0, len(numbers) - 3, 4):
        start, length, target, depth_lasti = numbers[i : i + 4]
        entries.append(
            ExceptionTableEntry(
                start * 2, (start + length) * 2, target * 2, depth_lasti >> 1, bool(depth_lasti & 1)
            )
        )
    return tuple(entries)


def _not_decoded(interp: RunningInterpreter, frame: Frame, instr: dis.Instruction) -> None:
    raise AssertionError(f"no handler for {instr.opname}: the function should have run natively")


@dataclass(frozen=True)
class CodeInfo:
    """Everything decoded once per code object."""

    code: types.CodeType
    instructions: tuple[dis.Instruction, ...]
    offset_to_index: dict[int, int]
    exception_table: tuple[ExceptionTableEntry, ...]
    handlers: tuple[Handler, ...]  # one per instruction
    unsupported: str | None  # why this code cannot be interpreted, or None

    def handler_for(self, offset: int) -> ExceptionTableEntry | None:
        """The exception-table entry covering `offset`, or None (entries do not overlap)."""
        for entry in self.exception_table:
            if entry.start <= offset < entry.end:
                return entry
        return None

    def index_of(self, offset: int) -> int:
        return self.offset_to_index[offset]


_CODE_INFO: dict[types.CodeType, CodeInfo] = {}


def code_info(code: types.CodeType) -> CodeInfo:
    """Decode `code` (cached)."""
    info = _CODE_INFO.get(code)
    if info is None:
        instrs = tuple(i for i in dis.get_instructions(code) if i.opname != "CACHE")
        offsets = {ins.offset: n for n, ins in enumerate(instrs)}
        handlers: list[Handler] = []
        unsupported = None
        for index, ins in enumerate(instrs):
            entry = HANDLERS.get(ins.opname)
            reason = unsupported_opcode(ins.opname) if entry is None else None
            if reason is None and entry.check is not None:
                reason = entry.check(ins, instrs, index)
            if reason is not None:
                unsupported = unsupported or reason
                handlers.append(_not_decoded)
            else:
                handlers.append(entry.handler)
        info = CodeInfo(code, instrs, offsets, exception_table(code), tuple(handlers), unsupported)
        _CODE_INFO[code] = info
    return info


class RunningInterpreter(Protocol):
    """What the interpreter's helpers (interpreted generators, class bodies, the handler of an opcode
    that was not decoded) use of the `Interpreter` running them (core.py, which imports them)."""

    hooks: Hooks
    depth: int
    frames: list[Frame]
    exc_info: BaseException | None
    outer_exc_info: list[BaseException | None]

    def run_frame(self, frame: Frame, throw: BaseException | None = None) -> None: ...

    def run_class_body(self, func: types.FunctionType, namespace: dict[str, Any]) -> Any: ...


@dataclass(eq=False)
class Frame:
    """One activation of an interpreted function.

    `locals` maps names to values; an unbound local is a missing key (CPython's NULL slot), and a
    cell or free variable holds its cell object."""

    func: types.FunctionType
    info: CodeInfo
    locals: dict[str, Any]
    globals: dict[str, Any]
    builtins: dict[str, Any]
    stack: list[Any] = field(default_factory=list)
    pc: int = 0
    kw_names: tuple[str, ...] = ()  # set by KW_NAMES for the next CALL (3.11, 3.12)
    signal: str | None = None  # "return" or "yield" once the frame stops
    signal_value: object = None
    raised_at: tuple[BaseException, dis.Instruction] | None = None  # the last exception raised here
    namespace: dict[str, Any] | None = None  # a class body's namespace (LOAD_NAME, STORE_NAME)

    @property
    def code(self) -> types.CodeType:
        return self.info.code

    def current_line(self) -> int:
        """The source line of the instruction this frame runs (the last one it started)."""
        return instruction_line(self.info.instructions[max(self.pc - 1, 0)], self.code)

    def push(self, value: object) -> None:
        self.stack.append(value)

    def pop(self) -> Any:
        return self.stack.pop()

    def popn(self, n: int) -> list[Any]:
        if n == 0:
            return []
        values = self.stack[-n:]
        del self.stack[-n:]
        return values

    def jump_to(self, offset: int) -> None:
        self.pc = self.info.offset_to_index[offset]

    def release(self) -> None:
        """Drop a finished frame's locals and stack, as CPython clears a frame that returns (the
        return value stays in `signal_value`)."""
        self.locals.clear()
        self.stack.clear()


_JUMP_IF_TRUE = ("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE")  # 3.12+, 3.11


def deciding_assert(frame: Frame) -> bool:
    """Whether the truth test the frame runs now decides an `assert` statement: the jump taken when
    the test is true skips `LOAD_ASSERTION_ERROR` (`assert x`; on 3.13 the test may be the TO_BOOL or
    COMPARE_OP before the jump). Its other outcome raises AssertionError, whatever the program does."""
    instrs = frame.info.instructions
    at = frame.pc - 1
    if 0 <= at < len(instrs) and instrs[at].opname in ("TO_BOOL", "COMPARE_OP"):
        at += 1
    if not 0 <= at < len(instrs) - 1 or instrs[at].opname not in _JUMP_IF_TRUE:
        return False
    return instrs[at + 1].opname == "LOAD_ASSERTION_ERROR"


#: what may run between an f-string's field and the call that takes the string (text_goes_to_call):
#: loads of locals and constants and the other fields' formatting; no call, jump, store or attribute
_TEXT_WINDOW = frozenset((
    "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "LOAD_DEREF", "FORMAT_VALUE",
    "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE", "NOP", "EXTENDED_ARG",
))  # fmt: skip


def text_goes_to_call(frame: Frame) -> bool:
    """Whether the f-string whose field the frame formats now goes, as it is, into a call of two
    positional arguments (`torch._assert(cond, f"... {x.shape}")`): the instructions up to that CALL
    only load locals or constants and format, then build the string. Nothing in between runs other
    code, jumps, or lets the string go anywhere else, so a tracer may keep its text pending until
    the call (Hooks.lazy_format)."""
    instrs = frame.info.instructions
    at = frame.pc
    while at < len(instrs) and instrs[at].opname in _TEXT_WINDOW:
        at += 1
    if at < len(instrs) and instrs[at].opname == "BUILD_STRING":
        at += 1
    if at < len(instrs) and instrs[at].opname == "PRECALL":  # 3.11
        at += 1
    return at < len(instrs) and instrs[at].opname == "CALL" and instrs[at].arg == 2


def instruction_line(instr: dis.Instruction, code: types.CodeType) -> int:
    """The source line of `instr` in `code` (its first line where the instruction has none)."""
    return instr.positions.lineno if instr.positions and instr.positions.lineno else code.co_firstlineno


def frame_locals(frame: Frame) -> dict[str, Any]:
    """What `locals()` returns in `frame`: a class body's namespace, or a new dict of the function's
    bound locals with its cells' contents (as CPython's snapshot; writing to it changes nothing)."""
    if frame.namespace is not None:
        return frame.namespace
    cells = set(frame.code.co_cellvars) | set(frame.code.co_freevars)
    names: dict[str, Any] = {}
    for name, value in frame.locals.items():
        if name in cells and isinstance(value, types.CellType):
            try:
                names[name] = value.cell_contents
            except ValueError:  # an empty cell: unbound, as CPython leaves it out
                continue
        else:
            names[name] = value
    return names
