"""Frames of the interpreter: decoded instructions, value stack, locals and the exception table.

Instructions come from `dis.get_instructions(code)`, which decodes `co_code` (the original bytecode,
not the specialised adaptive copy) and resolves jump targets to offsets; they are turned into a list
indexed by `pc`, with `offset_to_index` for jumps. The exception table (3.11's `co_exceptiontable`)
is decoded with `dis._parse_exception_table`.
"""

from __future__ import annotations

import dis
import types
from dataclasses import dataclass, field
from typing import Any


class _Null:
    """The NULL that CPython pushes below a callable (PUSH_NULL, LOAD_GLOBAL with the low bit)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class CodeInfo:
    """Everything decoded once per code object."""

    code: types.CodeType
    instructions: tuple[dis.Instruction, ...]
    offset_to_index: dict[int, int]
    exception_table: tuple[Any, ...]

    def handler_for(self, offset: int) -> Any | None:
        """The innermost exception-table entry covering `offset`, or None."""
        for entry in self.exception_table:
            if entry.start <= offset < entry.end:
                return entry
        return None


_CODE_INFO: dict[types.CodeType, CodeInfo] = {}


def code_info(code: types.CodeType) -> CodeInfo:
    """Decode `code` (cached)."""
    info = _CODE_INFO.get(code)
    if info is None:
        instrs = tuple(i for i in dis.get_instructions(code) if i.opname != "CACHE")
        offsets = {ins.offset: n for n, ins in enumerate(instrs)}
        table = tuple(dis._parse_exception_table(code))  # type: ignore[attr-defined]
        info = CodeInfo(code, instrs, offsets, table)
        _CODE_INFO[code] = info
    return info


@dataclass(eq=False)
class Frame:
    """One activation of an interpreted function."""

    func: types.FunctionType
    info: CodeInfo
    locals: dict[str, Any]
    globals: dict[str, Any]
    builtins: dict[str, Any]
    stack: list[Any] = field(default_factory=list)
    pc: int = 0
    kw_names: tuple[str, ...] = ()
    signal: str | None = None  # "return" or "yield" once the frame stops
    signal_value: Any = None
    exc_stack: list[BaseException | None] = field(default_factory=list)

    @property
    def code(self) -> types.CodeType:
        return self.info.code

    def push(self, value: Any) -> None:
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
