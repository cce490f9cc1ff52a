"""Generators whose frames the interpreter runs, following CPython's generator protocol.

A generator function called by interpreted code returns an `InterpretedGenerator`: send() pushes the
value and resumes the frame; throw() raises at the last yield, or first hands the exception to the
iterator a suspended `yield from` delegates to (as gen.throw and gen.close do); each generator keeps
its own "exception being handled" slot; a suspended generator dropped while the interpreter runs is
closed, as CPython finalizes it. The two points where 3.11, 3.12 and 3.13 differ are version
behaviours (registry.behaviour): how the frame resumes after the delegate raised, and what close()
returns.
"""

from __future__ import annotations

import types
from typing import Any

from jitlab.jit.interpreter.frame import CodeInfo, Frame, RunningInterpreter
from jitlab.jit.interpreter.registry import RUNNING_BEHAVIOURS


class InterpretedGenerator:
    """A generator whose frame is run by the interpreter (returned for generator functions)."""

    def __init__(self, interp: RunningInterpreter, frame: Frame) -> None:
        self._interp = interp
        self._frame = frame
        self._done = False
        self._running = False
        self._exc_info: BaseException | None = None
        self.__name__ = frame.code.co_name
        self.__qualname__ = frame.code.co_qualname

    def __iter__(self) -> InterpretedGenerator:
        return self

    def __next__(self) -> Any:
        return self.send(None)

    @property
    def gi_code(self) -> types.CodeType:
        return self._frame.code

    @property
    def gi_running(self) -> bool:
        return self._running

    @property
    def gi_yieldfrom(self) -> Any:
        return self._delegate()

    def _delegate(self) -> Any:
        """The iterator a suspended `yield from` delegates to (the top of the stack), or None."""
        frame = self._frame
        if self._done or self._running or frame.pc == 0:
            return None
        nxt = frame.info.instructions[frame.pc]
        if nxt.opname == "RESUME" and (nxt.arg & 3) >= 2:  # resuming after `yield from` / `await`
            return frame.stack[-1]
        return None

    def _resume(self, value: object, throw: BaseException | None) -> Any:
        """gen_send_ex: push `value` (None when throwing) and run the frame to its next yield."""
        if self._done:
            if throw is not None:
                raise throw
            raise StopIteration
        if self._running:
            raise ValueError("generator already executing")
        frame = self._frame
        if value is not None and frame.info.instructions[frame.pc - 1].opname == "RETURN_GENERATOR":
            raise TypeError("can't send non-None value to a just-started generator")
        frame.push(value)
        interp = self._interp
        self._running = True
        interp.depth += 1
        interp.frames.append(frame)
        interp.outer_exc_info.append(interp.exc_info)
        interp.exc_info = self._exc_info
        try:
            self._run(throw)
        except StopIteration as exc:  # 3.11 converts it here; 3.12+ bytecode already has
            self._done = True
            error = RuntimeError("generator raised StopIteration")
            error.__cause__ = exc
            error.__context__ = exc
            raise error from exc
        except BaseException:
            self._done = True
            raise
        finally:
            self._running = False
            interp.depth -= 1
            interp.frames.pop()
            self._exc_info = interp.exc_info
            interp.exc_info = interp.outer_exc_info.pop()
        if frame.signal == "yield":
            interp.hooks.yielded(frame.signal_value, self)
            return frame.signal_value
        self._done = True
        raise StopIteration(frame.signal_value)

    def _run(self, throw: BaseException | None) -> None:
        self._interp.run_frame(self._frame, throw)
        if self._frame.signal != "yield":
            self._frame.release()  # returned: its locals go while the interpreter still runs

    def send(self, value: object) -> Any:
        return self._resume(value, None)

    def throw(
        self,
        typ: type[BaseException] | BaseException,
        val: object = None,
        tb: types.TracebackType | None = None,
    ) -> Any:
        """gen.throw: into the delegate of a suspended `yield from` first, else at the last yield."""
        delegate = self._delegate()
        if delegate is not None:
            if _is_generator_exit(typ):
                self._running = True
                try:
                    _close_iterator(delegate)
                except BaseException as exc:
                    error = exc
                else:
                    error = None
                finally:
                    self._running = False
                if error is not None:
                    return self._resume(None, error)
            else:
                method = getattr(delegate, "throw", None)
                if method is not None:
                    args = (typ,) if val is None and tb is None else (typ, val, tb)
                    self._running = True
                    try:
                        return method(*args)  # the delegate yielded: so does this generator
                    except BaseException as exc:
                        raised = exc
                    finally:
                        self._running = False
                    return RUNNING_BEHAVIOURS["resume_after_delegate_raised"](self, raised)
        return self._resume(None, _exception_from(typ, val, tb))

    def close(self) -> Any:
        """gen.close: close the delegate, throw GeneratorExit at the last yield, expect it back."""
        if self._done:
            return None
        error = None
        delegate = self._delegate()
        if delegate is not None:
            self._running = True
            try:
                _close_iterator(delegate)
            except BaseException as exc:
                error = exc
            finally:
                self._running = False
        try:
            self._resume(None, error if error is not None else GeneratorExit())
        except GeneratorExit:
            return None
        except StopIteration as stop:
            return RUNNING_BEHAVIOURS["close_result"](stop.value)
        raise RuntimeError("generator ignored GeneratorExit")

    def __del__(self) -> None:
        """A suspended generator dropped by interpreted code is closed, as CPython finalizes generators
        (its `finally` blocks run then; an exception from them is reported as unraisable). One dropped
        once the interpreter has stopped (the call returned, raised or was abandoned for an eager
        rerun) is not resumed: its code would run outside the call it belongs to."""
        frame = self._frame
        if self._done or self._running or frame.info.instructions[frame.pc - 1].opname == "RETURN_GENERATOR":
            return  # finished, running, or never started: nothing to close
        if self._interp.depth > 0:
            self.close()

    @property
    def code_info(self) -> CodeInfo:
        return self._frame.info


def _is_generator_exit(typ: type[BaseException] | BaseException) -> bool:
    return isinstance(typ, GeneratorExit) or (isinstance(typ, type) and issubclass(typ, GeneratorExit))


def _close_iterator(it: object) -> None:
    """gen_close_iter: close a generator, or call the iterator's close() if it has one."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


def _exception_from(
    typ: type[BaseException] | BaseException, val: object, tb: types.TracebackType | None
) -> BaseException:
    """The exception gen.throw(typ[, val[, tb]]) raises."""
    if isinstance(typ, BaseException):
        if val is not None:
            raise TypeError("instance exception may not have a separate value")
        exc = typ
    elif isinstance(typ, type) and issubclass(typ, BaseException):
        if isinstance(val, typ):
            exc = val
        elif val is None:
            exc = typ()
        elif isinstance(val, tuple):
            exc = typ(*val)
        else:
            exc = typ(val)
    else:
        raise TypeError(
            f"exceptions must be classes or instances deriving from BaseException, not {type(typ).__name__}"
        )
    if tb is not None:
        exc = exc.with_traceback(tb)
    return exc
