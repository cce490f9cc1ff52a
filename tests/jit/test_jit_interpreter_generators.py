"""The interpreter on generators and exception handling, whose bytecode differs between CPython
3.11, 3.12 and 3.13 (SEND/END_SEND/CLEANUP_THROW, the StopIteration intrinsic, handler tables).

Every program runs in CPython and under the (stack-effect checking) interpreter, and the outcomes must
be equal; all of a program must be interpreted. Run on each supported Python (`make test-jit-matrix`).
"""

from __future__ import annotations

import pytest
from interp_checking import interpreted_outcome, outcome, unsupported_in


# ================================================================== generators
def counter(n):
    for i in range(n):
        received = yield i
        if received is not None:
            yield ("got", received)
    return "counter done"


def catcher():
    while True:
        try:
            yield "ready"
        except ValueError as exc:
            yield ("caught", str(exc))
        except GeneratorExit:
            raise


def delegator(inner):
    result = yield from inner
    yield ("inner returned", result)
    return "delegator done"


def returner():
    try:
        yield 1
    except GeneratorExit:
        return "closing value"


def p_generator_send():
    g = counter(3)
    out = [next(g), g.send("hello"), next(g), list(g)]
    try:
        next(g)
    except StopIteration as stop:
        out.append(("stopped", stop.value))
    return out


def p_generator_throw_and_close():
    out = []
    g = catcher()
    out.append(next(g))
    out.append(g.throw(ValueError("boom")))
    out.append(next(g))
    g.close()
    try:
        next(g)
    except StopIteration:
        out.append("closed")
    fresh = counter(2)
    try:
        fresh.throw(KeyError("early"))
    except KeyError as exc:
        out.append(("thrown before start", str(exc)))
    r = returner()
    next(r)
    out.append(r.close())  # 3.13: the returned value; before: None
    try:
        counter(1).send("not None")
    except TypeError as exc:
        out.append(type(exc).__name__)
    return out


def p_yield_from_delegation():
    out = []
    d = delegator(catcher())
    out.append(next(d))
    out.append(d.throw(ValueError("to inner")))  # handled by the inner generator
    out.append(next(d))
    d.close()  # closes the inner generator too
    d2 = delegator(counter(2))
    out.append(list(d2))
    d3 = delegator(counter(5))
    out.append([next(d3), d3.send("x")])
    try:
        d3.throw(IndexError("not caught"))
    except IndexError as exc:
        out.append(("propagated", str(exc)))
    d4 = delegator(iter([1, 2]))
    out.append(list(d4))
    d5 = delegator(returner())
    next(d5)
    out.append(d5.send(None))
    d6 = delegator(catcher())
    next(d6)
    try:
        d6.throw(GeneratorExit)  # closes the inner generator, then raises here
    except GeneratorExit:
        out.append("GeneratorExit propagated")
    return out


def p_yield_from_throw_stopiteration():
    def inner():
        try:
            yield 1
        except KeyError:
            return "inner returned on KeyError"

    out = []
    d = delegator(inner())
    out.append(next(d))
    out.append(d.throw(KeyError))  # the inner generator returns: `yield from` gets its value
    out.append(list(d))
    return out


def p_generator_stopiteration_becomes_runtime_error():
    def bad():
        yield 1
        raise StopIteration("inside")

    g = bad()
    out = [next(g)]
    try:
        next(g)
    except RuntimeError as exc:
        out.append((str(exc), type(exc.__cause__).__name__))
    return out


def p_generator_finalized_when_dropped():
    log = []

    def gen():
        try:
            yield 1
            yield 2
        finally:
            log.append("cleanup")

    for _ in gen():
        break
    log.append("after loop")
    g = gen()
    next(g)
    del g
    log.append("after del")
    h = gen()
    del h  # never started: nothing runs

    def leave_suspended():
        started = gen()
        next(started)
        return "returned"  # the local generator is closed as the frame returns

    log.append(leave_suspended())
    return log


def p_generator_expressions():
    data = [4, 5, 6]
    gen = (x * 2 for x in data)
    first = next(gen)
    return first, list(gen), max(x for x in data), dict((x, str(x)) for x in data), list(zip(data, (1, 2)))


def p_generator_keeps_its_own_handled_exception():
    def inside_except():
        try:
            raise KeyError("in generator")
        except KeyError:
            yield "suspended inside except"

    g = inside_except()
    out = [next(g)]
    try:
        raise ValueError("caller")
    except ValueError as exc:
        out.append(repr(exc.__context__))  # the generator's KeyError is not the caller's
    g.close()
    return out


# ================================================================== exceptions and with
class Resource:
    def __init__(self, log, name, swallow=False, fail_exit=False):
        self.log, self.name, self.swallow, self.fail_exit = log, name, swallow, fail_exit

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(("exit", self.name, exc_type.__name__ if exc_type else None))
        if self.fail_exit:
            raise RuntimeError("exit failed")
        return self.swallow


def p_try_with_nesting():
    log = []
    with Resource(log, "a"), Resource(log, "b", swallow=True):
        log.append("body")
        raise KeyError("swallowed by b")
    for i in range(3):
        try:
            with Resource(log, f"loop{i}"):
                if i == 1:
                    continue
                if i == 2:
                    break
        finally:
            log.append(("finally", i))
    try:
        with Resource(log, "c", fail_exit=True):
            raise ValueError("inner")
    except RuntimeError as exc:
        log.append(("exit raised", str(exc), type(exc.__context__).__name__))
    return log


def p_finally_overrides():
    def f():
        try:
            return "try"
        finally:
            return "finally"  # noqa: B012

    def g():
        for i in range(3):
            try:
                raise ValueError(i)
            except ValueError:
                if i < 2:
                    continue
                return i
            finally:
                pass
        return None

    return f(), g()


def p_exception_context_and_cause():
    out = []
    try:
        try:
            _ = 1 / 0
        except ZeroDivisionError:
            {}["missing"]  # raised natively while ZeroDivisionError is handled
    except KeyError as exc:
        out.append((type(exc).__name__, type(exc.__context__).__name__))
    try:
        try:
            raise ValueError("a")
        except ValueError as exc:
            raise TypeError("b") from exc
    except TypeError as exc:
        out.append((repr(exc.__cause__), exc.__suppress_context__))
    try:
        try:
            raise ValueError("a")
        except ValueError:
            raise TypeError("c") from None
    except TypeError as exc:
        out.append((exc.__cause__, exc.__suppress_context__, repr(exc.__context__)))
    try:
        try:
            raise OSError("x")
        except (KeyError, OSError):
            raise  # bare raise
    except OSError as exc:
        out.append(repr(exc))
    try:
        raise RuntimeError  # a class, instantiated
    except RuntimeError as exc:
        out.append(repr(exc))
    return out


PROGRAMS = [
    p_generator_send, p_generator_throw_and_close, p_yield_from_delegation,
    p_yield_from_throw_stopiteration, p_generator_stopiteration_becomes_runtime_error,
    p_generator_expressions, p_generator_finalized_when_dropped,
    p_generator_keeps_its_own_handled_exception, p_try_with_nesting, p_finally_overrides,
    p_exception_context_and_cause,
]  # fmt: skip


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_interpreter_equals_cpython(program):
    assert unsupported_in(program) == []  # all of it is interpreted, none runs natively
    assert interpreted_outcome(program) == outcome(program)
