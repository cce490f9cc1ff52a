"""Differential tests of the bytecode interpreter alone: every program runs in CPython and under
`Interpreter().call`, and the results (or exception types) must be equal. The interpreter used checks
each instruction's stack effect against CPython's (interp_checking.py); programs of the constructs
that differ between 3.11, 3.12 and 3.13 are in test_jit_interpreter_versions.py."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from interp_checking import interpreted_outcome, outcome, unsupported_in

from jitlab.jit.interpreter import Interpreter, unsupported_reason

GLOBAL_SCALE = 3


def helper(a, b=2, *args, c=3, **kw):
    return a + b + sum(args) + c + sum(kw.values())


def p_calls():
    return [helper(1), helper(1, 2, 3, 4, c=1, e=2), helper(*[1, 2], **{"c": 0}), helper(a=5, b=1, z=3)]


def p_closures():
    y = 1

    def inner(z):
        nonlocal y
        y += z
        return y * GLOBAL_SCALE

    def outer():
        def deeper():
            return y + 100

        return deeper()

    return [inner(i) for i in range(3)], y, outer()


def p_comprehensions():
    d = {k: v for k, v in zip("abc", range(3))}
    s = {i % 2 for i in range(5)}
    g = sum(i * i for i in range(6) if i % 2)
    nested = [[i * j for j in range(3)] for i in range(3)]
    return d, s, g, nested


def gen(n):
    for i in range(n):
        got = yield i * i
        if got:
            yield "sent"
    return "done"


def delegating():
    result = yield from gen(3)
    yield result


def p_generators():
    g = gen(4)
    first = next(g)
    sent = g.send(True)
    rest = list(g)
    return first, sent, rest, list(delegating()), list(zip(gen(3), "ab"))


def p_try_except_finally():
    out = []
    for x in (0, 1):
        try:
            1 / x
        except ZeroDivisionError as e:
            out.append(type(e).__name__)
        else:
            out.append("else")
        finally:
            out.append("finally")
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise KeyError("outer")  # noqa: B904 - testing implicit chaining
    except KeyError as e:
        out.append(repr(e.__context__))
    try:
        raise TypeError("x") from ValueError("cause")
    except TypeError as e:
        out.append(repr(e.__cause__))
    try:
        try:
            raise IndexError
        finally:
            out.append("cleanup")
    except IndexError:
        out.append("caught")
    return out


def p_return_in_finally_loop():
    out = []
    for i in range(5):
        try:
            if i == 3:
                break
            if i == 1:
                continue
            out.append(i)
        finally:
            out.append(-i)
    return out


class Ctx:
    def __init__(self, log, swallow=False):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(("exit", exc_type.__name__ if exc_type else None))
        return self.swallow


def p_with():
    log = []
    with Ctx(log) as c:
        log.append(c is not None)
    with Ctx(log, swallow=True):
        raise ValueError
    try:
        with Ctx(log):
            raise KeyError
    except KeyError:
        log.append("propagated")
    return log


class Base:
    def __init__(self, v):
        self.v = v

    def f(self, x):
        return x + self.v

    @property
    def doubled(self):
        return self.v * 2

    @doubled.setter
    def doubled(self, value):
        self.v = value // 2


class Child(Base):
    def __init__(self, v):
        super().__init__(v + 1)

    def f(self, x):
        return super().f(x) * 2


def p_classes():
    c = Child(1)
    before = c.doubled
    c.doubled = 10
    return c.f(3), before, c.doubled, c.v, isinstance(c, Base)


@dataclasses.dataclass
class Point:
    x: int
    y: float = 2.0

    def norm1(self):
        return abs(self.x) + abs(self.y)


def p_dataclass_fstring():
    p = Point(3)
    q = dataclasses.replace(p, y=-1.5)
    return p, q, q.norm1(), f"{p.x:>4}|{q.y!r}|{3.14159:.2f}|{'s'!s:^5}"


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def p_recursion():
    return fact(8)


def p_unpacking():
    a, *rest = [1, 2, 3, 4]
    (b, c), d = (5, 6), 7
    head, *mid, tail = range(6)
    return a, rest, b, c, d, head, mid, tail, (*rest, *[9]), {**{"a": 1}, "b": 2}


def p_partial_lambda_sorted():
    add = functools.partial(helper, 1, c=10)
    key = lambda t: -t[1]  # noqa: E731
    return add(5), sorted([(1, 2), (3, 1), (0, 5)], key=key), list(map(lambda v: v + 1, [1, 2]))


def p_while_loop():
    n, steps = 27, 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def p_raises_key_error():
    return {}["missing"]


def p_chained_compare_bool_ops():
    x = 5
    return 1 < x < 10, x > 3 and x < 4, x == 5 or None, not x, x if x else -1, [] or "empty"


PROGRAMS = [
    p_calls, p_closures, p_comprehensions, p_generators, p_try_except_finally, p_return_in_finally_loop,
    p_with, p_classes, p_dataclass_fstring, p_recursion, p_unpacking, p_partial_lambda_sorted,
    p_while_loop, p_raises_key_error, p_chained_compare_bool_ops,
]  # fmt: skip


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_interpreter_equals_cpython(program):
    assert unsupported_in(program) == []  # all of it is interpreted, none runs natively
    expected = outcome(program)
    assert interpreted_outcome(program) == expected


def test_interpreted_code_is_actually_interpreted():
    seen = []

    class Spy(Interpreter):
        def call_function(self, fn, args, kwargs):
            seen.append(fn.__name__)
            return super().call_function(fn, args, kwargs)

    Spy().call(p_recursion, (), {})
    assert seen.count("fact") == 8


def test_unsupported_opcodes_are_reported():
    def matcher(x):
        match x:
            case [a, b]:
                return a + b
            case _:
                return 0

    assert unsupported_reason(matcher.__code__) is not None
    assert unsupported_reason(p_calls.__code__) is None
    # a function the interpreter cannot step into still runs (natively) with the right result
    assert Interpreter().call(matcher, ([1, 2],), {}) == 3


def p_imports_inside():
    import math
    from collections import OrderedDict
    from os import path as ospath

    return math.sqrt(16.0), list(OrderedDict(a=1)), ospath.join("a", "b")


def test_imports_inside_functions():
    assert Interpreter().call(p_imports_inside, (), {}) == p_imports_inside()
    assert unsupported_reason(p_imports_inside.__code__) is None


class Vec:
    def __init__(self, *xs):
        self.xs = list(xs)

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(*(a + b for a, b in zip(self.xs, other.xs)))
        return NotImplemented

    def __radd__(self, other):
        return Vec(*(other + a for a in self.xs))

    def __mul__(self, k):
        return Vec(*(a * k for a in self.xs))

    def __iadd__(self, other):
        self.xs = [a + other for a in self.xs]
        return self

    def __eq__(self, other):
        return isinstance(other, Vec) and self.xs == other.xs

    def __lt__(self, other):
        return sum(self.xs) < sum(other.xs)


def p_user_operators():
    a, b = Vec(1, 2), Vec(3, 4)
    c = a + b
    d = 10 + a
    e = a * 3
    f = Vec(0, 0)
    f += 1
    out = [c.xs, d.xs, e.xs, f.xs, a == Vec(1, 2), a != b, a < b, b > a, sum([a, b], Vec(0, 0)).xs]
    try:
        a - b
    except TypeError as exc:
        out.append(str(exc))
    return out


def test_user_operators_follow_the_protocol():
    assert Interpreter().call(p_user_operators, (), {}) == p_user_operators()
