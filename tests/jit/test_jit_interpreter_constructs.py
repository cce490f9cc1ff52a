"""The interpreter on the constructs whose bytecode differs between CPython 3.11, 3.12 and 3.13:
comprehensions (inlined from 3.12), super(), slices, f-strings, keyword calls, truth and comparisons,
unpacking, closures, operators and loops.

Every program runs in CPython and under the (stack-effect checking) interpreter, and the outcomes must
be equal; all of a program must be interpreted unless it is one of the deliberately native ones. Run on
each supported Python (`make test-jit-matrix`): the same source compiles to each version's bytecode.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
from interp_checking import interpreted_outcome, outcome, unsupported_in


# ================================================================== comprehensions (inlined in 3.12+)
def p_comprehension_kinds():
    xs = [3, 1, 2]
    return (
        [x * 2 for x in xs if x != 1],
        {x % 2 for x in xs},
        {k: v for k, v in zip("abc", xs)},
        sum(x for x in xs),
        list(x + y for x in xs for y in (10, 20) if x > 1),
        [[i * j for j in range(i)] for i in range(4)],
        {i: [j for j in range(i)] for i in range(3)},
    )


def p_comprehension_shadows_locals():
    x = "outer"
    k, v = "K", "V"
    squares = [x * x for x in range(4)]
    pairs = {k: v for k, v in [(1, 2)]}
    return x, k, v, squares, pairs


def p_comprehension_variable_stays_unbound():
    out = [y for y in range(3)]
    try:
        return out, y  # noqa: F821 - the comprehension's y does not leak
    except NameError as exc:
        return out, type(exc).__name__


def p_comprehension_closures():
    funcs = [lambda: i * 10 for i in range(3)]  # noqa: B023 - late binding on purpose
    nested = [[lambda a=i, b=j: (a, b, i + j) for j in range(2)] for i in range(2)]  # noqa: B023
    scale = 3
    scaled = [(lambda v: v * scale)(i) for i in range(3)]
    captured = [lambda: x for x in "ab"]  # noqa: B023
    return [f() for f in funcs], [[f() for f in row] for row in nested], scaled, [f() for f in captured]


def p_comprehension_cell_shadowing():
    x = 5
    get = lambda: x  # noqa: E731 - x is a cell of this function
    values = [x for x in range(3)]  # the comprehension's x is a plain local
    closures = [lambda: x for x in range(2)]  # noqa: B023 - here x is a cell of the comprehension
    return get(), values, x, [c() for c in closures]


def p_comprehension_raises_and_restores():
    x = "kept"
    try:
        [1 // (x - 2) for x in range(4)]
    except ZeroDivisionError as exc:
        caught = type(exc).__name__
    return x, caught


def p_comprehension_walrus():
    data = [1, 5, 2, 8]
    big = [y for v in data if (y := v * 2) > 4]
    total = 0
    running = [total := total + v for v in data]
    return big, y, running, total


def p_comprehension_in_generator_and_closure_over_arg():
    def make(n):
        return [lambda k=k: n + k for k in range(n)]

    return [f() for f in make(3)], [list(g) for g in ((i, i) for i in range(2))]


# ================================================================== super() (LOAD_SUPER_ATTR in 3.12+)
class Base:
    tag = "base"

    def __init__(self, v, *, scale=1):
        self.v = v * scale

    def f(self, x):
        return x + self.v

    @classmethod
    def make(cls, v):
        return cls(v)

    @property
    def doubled(self):
        return self.v * 2


class Child(Base):
    tag = "child"

    def __init__(self, v):
        super().__init__(v, scale=2)

    def f(self, x):
        bound = super().f
        return super().f(x) * 10, bound(0), super().tag, super().f(1), super().doubled

    @classmethod
    def make(cls, v):
        return ("made", super().make(v).v)

    def in_comprehension(self, xs):
        return [super().f(x) for x in xs]


def p_super():
    c = Child(3)
    out = [c.f(1), Child.make(4), c.tag, c.doubled]
    try:
        out.append(c.in_comprehension([1, 2]))  # 3.12+: inlined, works; 3.11: TypeError in <listcomp>
    except TypeError as exc:
        out.append(type(exc).__name__)
    return out


class Shadow:
    def f(self):
        return super().__repr__ is not None


def p_super_two_arg_and_object():
    s = Shadow()
    return s.f(), super(Shadow, s).__class__.__name__, isinstance(super(Child, Child(1)), super)


# ================================================================== slices (BINARY_SLICE / STORE_SLICE in 3.12+)
class Sliceable:
    def __init__(self):
        self.data = list(range(10))

    def __getitem__(self, key):
        return ("got", self.data[key])

    def __setitem__(self, key, value):
        self.data[key] = value

    def __delitem__(self, key):
        del self.data[key]


def p_slices():
    a = list(range(10))
    i, j = 2, 5
    reads = (a[1:3], a[i:], a[:j], a[::2], a[i:j:2], a[-3:], a[:], "hello"[1:-1], (1, 2, 3)[::-1])
    a[1:3] = ["x", "y", "z"]
    a[::3] = [0] * len(a[::3])
    del a[4:6]
    del a[::4]
    a[2:4] += ["plus"]
    s = Sliceable()
    custom = (s[2:4], s[::3])
    s[0:2] = ["a"]
    del s[5:]
    return reads, a, custom, s.data


# ================================================================== f-strings (CONVERT_VALUE / FORMAT_* in 3.13)
class Formatted:
    def __format__(self, spec):
        return f"<{spec}>"

    def __repr__(self):
        return "Formatted()"

    def __str__(self):
        return "str-of-formatted"


class Text(str):
    pass


def p_fstrings():
    x, w, name = 3.14159, 9, "é"
    obj = Formatted()
    return [
        f"{x}",
        f"{x!r}",
        f"{name!a}",
        f"{obj!s}",
        f"{x:.2f}",
        f"{x:>{w}.{2}f}|",
        f"{obj:spec}",
        f"{obj}",
        f"{obj!r:>12}",
        f"{x=}",
        f"{name=!s:>4}",
        f"{'lit'} {42:#x} {-7:+05d} {Text('sub')}",
        f"{3 + 4}{'' if x else 'no'}",
        "%s-%d" % ("a", 5),  # noqa: UP031
    ]


# ================================================================== calls (KW_NAMES in 3.11/3.12, CALL_KW in 3.13)
def kw_target(a, b=2, /, c=3, *args, d, e=5, **kwargs):
    return a, b, c, args, d, e, sorted(kwargs.items())


class Calls:
    def m(self, x, *, y=0):
        return x - y

    @staticmethod
    def s(*a, **k):
        return a, k


def p_keyword_calls():
    args, kwargs = (1, 2, 3, 4), {"d": 6, "z": 9}
    o = Calls()
    out = [
        kw_target(1, d=4),
        kw_target(1, 2, 3, 4, d=5, e=6, f=7),
        kw_target(*args, **kwargs),
        kw_target(*[1], *(2,), c=9, **{"d": 1}, **{"q": 2}),
        o.m(5, y=2),
        o.m(x=5),
        Calls.s(1, k=2),
        o.s(*args, **kwargs),
        dict(a=1, **{"b": 2}),
        functools.partial(kw_target, 1, d=0)(c=8),
        sorted([3, 1, 2], key=lambda v: -v, reverse=True),
        print.__name__,
    ]
    try:
        kw_target(1, c=2, **{"c": 3, "d": 4})
    except TypeError as exc:
        out.append(type(exc).__name__)
    try:
        kw_target(1)
    except TypeError as exc:
        out.append(type(exc).__name__)
    return out


def p_functions_with_attributes():
    base = 10

    def inner(x: int, y: float = 2.0, *, z: str = "z") -> tuple:
        return x + base, y, z

    lam = lambda a, b=base, *, c=1: a + b + c  # noqa: E731
    defaults = inner.__defaults__, inner.__kwdefaults__, sorted(inner.__annotations__)
    return inner(1), inner(1, 3.0, z="q"), lam(1), lam(1, 2, c=3), defaults, lam.__defaults__


# ================================================================== comparisons, truth, None jumps
class Truthy:
    def __init__(self, value):
        self.value = value

    def __bool__(self):
        return self.value > 0

    def __lt__(self, other):
        return Truthy(other.value - self.value)  # not a bool: `if a < b` must take its truth


def p_comparisons_and_truth():
    a, b, n = 3, 7, None
    out = [1 < a < 5 < b, a < b > 10, a == 3 != b, a is not None, n is None, a in (1, 3), 4 not in [4]]
    out.append("none" if n is None else "some")
    out.append("some" if a is not None else "none")
    out.append([v for v in (0, None, 1, "", "x") if v is not None and v])
    out.append((not a, not n, a and b, n or "default", a or b, n and 1))
    out.append("lt" if Truthy(1) < Truthy(5) else "not lt")
    out.append("lt" if Truthy(5) < Truthy(1) else "not lt")
    out.append(bool(Truthy(2)) and not Truthy(-1))
    x = 0
    while x is not None:
        x = x + 1 if x < 3 else None
    return out, x


# ================================================================== unpacking and containers
def p_unpacking():
    a, *b, c = range(6)
    (d, e), *f = [(1, 2), 3, 4]
    *g, h = "xyz"
    pairs = [(k, v) for k, (v, *_rest) in {"p": (1, 2, 3), "q": (4,)}.items()]
    merged = {**{"a": 1}, "b": 2, **dict(c=3)}
    spread = [*b, *"hi", *(9,)], (*b,), {*b, 0}
    first, second = second, first = 1, 2  # noqa: F841 - chained assignment
    return a, b, c, d, e, f, g, h, pairs, merged, spread, first, second


# ================================================================== closures, globals, deletion
COUNTER = 0


def p_closures_globals_and_del():
    global COUNTER, TEMPORARY
    COUNTER += 1
    TEMPORARY = 1
    del TEMPORARY
    x = 1

    def bump():
        nonlocal x
        x += 1
        return x

    def read_deleted():
        return x  # noqa: F821 - deleted below

    values = [bump(), bump()]
    del x
    try:
        read_deleted()
    except NameError as exc:
        values.append(type(exc).__name__)
    y = 5
    del y
    try:
        print(y)  # noqa: F821
    except UnboundLocalError as exc:
        values.append(type(exc).__name__)
    obj = Calls()
    obj.attr = 1
    del obj.attr
    values.append(hasattr(obj, "attr"))
    return values, COUNTER > 0


# ================================================================== operators, loops, classes
def p_operators_and_loops():
    x, y = 7, -2
    ops = [+x, -x, ~x, +y, x // y, x % y, x**2, x / 2, x << 2, x >> 1, x & 3, x | 8, x ^ 5, 2 @ Matmul()]
    acc = [1]
    acc += [2]
    acc *= 2
    data = {"k": 1}
    data["k"] += 5
    obj = Calls()
    obj.n = 1
    obj.n *= 3
    found = None
    for i in range(10):
        if i == 4:
            found = i
            break
    else:
        found = "none"
    n = 0
    while n < 3:
        n += 1
    else:
        n = -n
    return ops, acc, data, obj.n, found, n, [k for k, _ in enumerate("ab")]


class Matmul:
    def __rmatmul__(self, other):
        return ("rmatmul", other)


def p_class_statements():
    base = 3

    class Local:
        scale = base * 2
        shadowed = "class body"
        seen = shadowed  # the class body's own name first, then the closure
        note: str = "annotated"
        temp = 1
        del temp

        def get(self):
            return self.scale + base

    class Child(Local):
        def get(self):
            return super().get() * 10  # the __class__ cell the class statement fills

    return (
        Local().get(), Local.scale, Local.seen, Local.__annotations__, hasattr(Local, "temp"),
        Child().get(), Child.__mro__[1] is Local, Local.__qualname__, Local.__module__,
    )  # fmt: skip


def p_class_pattern_runs_natively():
    match 2.5:
        case float(value):
            return value * 2
    return None


@dataclasses.dataclass
class Config:
    width: int = 4
    depth: int = 2

    def area(self):
        return self.width * self.depth

    @staticmethod
    def unit():
        return Config(1, 1)


def p_methods_and_class_attributes():
    c = Config(depth=3)
    return c.area(), Config.unit().area(), Config.area(c), c.width, Config.__name__, repr(Config())


def p_imports_and_match_free_helpers():
    import math
    from collections import Counter

    return math.floor(2.5), Counter("abca").most_common(1)


PROGRAMS = [
    p_comprehension_kinds, p_comprehension_shadows_locals, p_comprehension_variable_stays_unbound,
    p_comprehension_closures, p_comprehension_cell_shadowing, p_comprehension_raises_and_restores,
    p_comprehension_walrus, p_comprehension_in_generator_and_closure_over_arg, p_super,
    p_super_two_arg_and_object, p_slices, p_fstrings, p_keyword_calls, p_functions_with_attributes,
    p_comparisons_and_truth, p_unpacking, p_closures_globals_and_del, p_operators_and_loops,
    p_methods_and_class_attributes, p_imports_and_match_free_helpers, p_class_statements,
]  # fmt: skip

#: programs that use what the interpreter leaves to CPython: they run natively, with the same result
NATIVE_PROGRAMS = {p_class_pattern_runs_natively: "MATCH_CLASS"}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_interpreter_equals_cpython(program):
    assert unsupported_in(program) == []  # all of it is interpreted, none runs natively
    assert interpreted_outcome(program) == outcome(program)


@pytest.mark.parametrize("program", list(NATIVE_PROGRAMS), ids=lambda p: p.__name__)
def test_unsupported_constructs_run_natively(program):
    reasons = unsupported_in(program)
    assert reasons and NATIVE_PROGRAMS[program] in " ".join(reasons)
    assert interpreted_outcome(program) == outcome(program)
