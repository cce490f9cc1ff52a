"""The interpreter on the constructs whose bytecode differs between CPython 3.11, 3.12 and 3.13.

Every program runs in CPython and under the (stack-effect checking) interpreter, and the outcomes must
be equal; all of a program must be interpreted unless it is one of the deliberately native ones. Run on
each supported Python (`make test-jit-matrix`): the same source compiles to each version's bytecode.
"""

from __future__ import annotations

import dataclasses
import dis
import functools
import importlib.util
import inspect
import sys
import textwrap

import pytest
import test_jit_interpreter
from interp_checking import EXECUTED, CheckingInterpreter, interpreted_outcome, outcome, unsupported_in

from jitlab.jit.interpreter import HANDLERS, Interpreter, coverage, unsupported_reason
from jitlab.jit.interpreter.frame import exception_table
from jitlab.jit.interpreter.opcodes import NB_OPS, OPNAMES, SUPPORTED_VERSIONS
from jitlab.jit.interpreter.registry import TABLES, handler

RUNNING = sys.version_info[:2]


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


def p_class_level_code_runs_natively():
    base = 3

    class Local:
        scale = base * 2

        def get(self):
            return self.scale + base

    return Local().get(), Local.scale


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
    p_generator_send, p_generator_throw_and_close, p_yield_from_delegation,
    p_yield_from_throw_stopiteration, p_generator_stopiteration_becomes_runtime_error,
    p_generator_expressions, p_generator_finalized_when_dropped, p_generator_keeps_its_own_handled_exception, p_try_with_nesting,
    p_finally_overrides, p_exception_context_and_cause, p_comparisons_and_truth, p_unpacking,
    p_closures_globals_and_del, p_operators_and_loops, p_methods_and_class_attributes,
    p_imports_and_match_free_helpers,
]  # fmt: skip

#: programs that use what the interpreter leaves to CPython: they run natively, with the same result
NATIVE_PROGRAMS = {p_class_level_code_runs_natively: "LOAD_BUILD_CLASS"}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_interpreter_equals_cpython(program):
    assert unsupported_in(program) == []  # all of it is interpreted, none runs natively
    assert interpreted_outcome(program) == outcome(program)


@pytest.mark.parametrize("program", list(NATIVE_PROGRAMS), ids=lambda p: p.__name__)
def test_unsupported_constructs_run_natively(program):
    reasons = unsupported_in(program)
    assert reasons and NATIVE_PROGRAMS[program] in " ".join(reasons)
    assert interpreted_outcome(program) == outcome(program)


def test_every_handler_of_this_python_is_exercised():
    """Run after the differential programs of both interpreter test files: each handled opcode of the
    running Python must have run (and passed the stack-effect check) at least once."""
    others = [test_jit_interpreter.p_imports_inside, test_jit_interpreter.p_user_operators]
    for program in [*PROGRAMS, *test_jit_interpreter.PROGRAMS, *others]:
        interpreted_outcome(program)
    # Not run on their own: END_FOR (3.12, 3.13) is jumped over by FOR_ITER, SET_FUNCTION_ATTRIBUTE
    # (3.13) is run by the MAKE_FUNCTION before it. EXTENDED_ARG and LOAD_ASSERTION_ERROR (pytest
    # rewrites the asserts of test modules) are exercised by tests with modules of their own below.
    never_alone = {"END_FOR", "SET_FUNCTION_ATTRIBUTE", "EXTENDED_ARG", "LOAD_ASSERTION_ERROR"}
    missing = sorted(set(HANDLERS) - EXECUTED - never_alone)
    assert missing == []


# ================================================================== the handler tables themselves
def test_opcode_lists_match_this_python():
    assert OPNAMES[RUNNING] == set(dis.opmap)
    nb_ops = getattr(dis, "_nb_ops", None)
    if nb_ops is not None:
        assert tuple(symbol for _name, symbol in nb_ops) == NB_OPS


def test_every_opcode_is_handled_or_explained():
    report = coverage()
    assert report["unknown"] == []
    assert set(report["handled"]) == set(HANDLERS)
    for name in report["unsupported"]:
        assert name not in HANDLERS


def test_each_version_has_its_own_table():
    for version in SUPPORTED_VERSIONS:
        assert set(TABLES[version]) <= OPNAMES[version]
    assert "PRECALL" in TABLES[(3, 11)] and "PRECALL" not in TABLES[(3, 12)]
    assert "RETURN_CONST" in TABLES[(3, 12)] and "CALL_KW" in TABLES[(3, 13)]
    assert TABLES[(3, 12)]["CALL"].handler is TABLES[(3, 11)]["CALL"].handler  # NULL below the callable
    assert TABLES[(3, 13)]["CALL"].handler is not TABLES[(3, 12)]["CALL"].handler  # NULL above it
    assert HANDLERS is TABLES[RUNNING]


def test_registry_rejects_bad_registrations():
    with pytest.raises(ValueError, match="not an opcode of Python 3.13"):
        handler("UNARY_POSITIVE", versions=[(3, 13)])(lambda interp, frame, instr: None)
    with pytest.raises(ValueError, match="not an opcode"):
        handler("LOAD_FAST_LOAD_FASTT")(lambda interp, frame, instr: None)
    with pytest.raises(ValueError, match="duplicate handler for LOAD_FAST"):
        handler("LOAD_FAST")(lambda interp, frame, instr: None)
    with pytest.raises(ValueError, match="not a supported version"):
        handler("NOP", versions=[(3, 10)])(lambda interp, frame, instr: None)


def test_exception_table_decoding_matches_dis():
    for program in PROGRAMS:
        for code in [program.__code__, *(c for c in program.__code__.co_consts if hasattr(c, "co_code"))]:
            ours = [tuple(entry) for entry in exception_table(code)]
            theirs = [(e.start, e.end, e.target, e.depth, e.lasti) for e in dis._parse_exception_table(code)]
            assert ours == theirs


# ================================================================== what stays native, by version
def _module_from_source(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_assert_statements(tmp_path):
    module = _module_from_source(
        tmp_path,
        "assert_module",
        """
        def check(x):
            assert x > 0, f"{x} is not positive"
            assert x < 10
            return x
        """,
    )
    for x in (3, -1, 12):
        assert interpreted_outcome(module.check, x) == outcome(lambda: module.check(x))  # noqa: B023
    assert "LOAD_ASSERTION_ERROR" in EXECUTED


def test_extended_arg_jumps_and_many_constants(tmp_path):
    body = "\n".join(f"    v{i} = x + {i}" for i in range(300))
    source = f"def big(x):\n{body}\n    if x > 0:\n        return v0 + v299\n    return [v{299}, v{150}]\n"
    module = _module_from_source(tmp_path, "big_module", source)
    assert "EXTENDED_ARG" in {i.opname for i in dis.get_instructions(module.big)}
    assert unsupported_reason(module.big.__code__) is None
    for x in (1, -1):
        assert CheckingInterpreter().call(module.big, (x,), {}) == module.big(x)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameter syntax is Python 3.12+")
def test_type_parameters_run_natively(tmp_path):
    module = _module_from_source(
        tmp_path,
        "generic_module",
        """
        def outer():
            def ident[T](x: T) -> T:
                return x
            return ident(3), [p.__name__ for p in ident.__type_params__]
        """,
    )
    # `outer` is interpreted; the hidden function that makes the type parameter runs natively
    assert "INTRINSIC_TYPEVAR" in " ".join(unsupported_in(module.outer))
    assert Interpreter().call(module.outer, (), {}) == module.outer() == (3, ["T"])


def test_pattern_matching_async_and_except_star_run_natively(tmp_path):
    module = _module_from_source(
        tmp_path,
        "native_module",
        """
        def matcher(x):
            match x:
                case [a, b]:
                    return a + b
                case {"k": v}:
                    return v
                case _:
                    return None

        async def coroutine():
            return 1

        def except_star():
            caught = []
            try:
                raise ExceptionGroup("g", [ValueError(1), KeyError(2)])
            except* ValueError as group:
                caught += [repr(e) for e in group.exceptions]
            except* KeyError:
                caught.append("key")
            return caught
        """,
    )
    assert "except*" in unsupported_reason(module.except_star.__code__)
    assert Interpreter().call(module.except_star, (), {}) == module.except_star() == ["ValueError(1)", "key"]
    assert "pattern matching" in unsupported_reason(module.matcher.__code__)
    assert "coroutines" in unsupported_reason(module.coroutine.__code__)
    assert [Interpreter().call(module.matcher, (v,), {}) for v in ([1, 2], {"k": 3}, 0)] == [3, 3, None]


def _loop(xs):
    total = 0
    for x in xs:
        total += x
    return total


def test_instruction_checks_refuse_shapes_they_do_not_know():
    """The per-instruction checks of the running Python's table report an unexpected bytecode shape
    (the function then runs natively) instead of letting a handler guess."""
    instrs = tuple(i for i in dis.get_instructions(_loop) if i.opname != "CACHE")
    for_iter = next(n for n, i in enumerate(instrs) if i.opname == "FOR_ITER")
    check = HANDLERS["FOR_ITER"].check
    if RUNNING >= (3, 12):
        assert check(instrs[for_iter], instrs, for_iter) is None
        moved = instrs[for_iter]._replace(argval=instrs[for_iter + 1].offset)  # not at END_FOR
        assert "does not jump to END_FOR" in check(moved, instrs, for_iter)
    else:
        assert check is None  # 3.11's FOR_ITER jumps past the loop: nothing to verify
    if RUNNING >= (3, 13):
        set_attr = HANDLERS["SET_FUNCTION_ATTRIBUTE"].check
        alone = instrs[for_iter]._replace(opname="SET_FUNCTION_ATTRIBUTE", arg=1)
        assert "does not follow MAKE_FUNCTION" in set_attr(alone, (instrs[0], alone), 1)
        odd = instrs[0]._replace(opname="LOAD_FAST_LOAD_FAST", argval=("a",))
        assert "unexpected operand" in HANDLERS["LOAD_FAST_LOAD_FAST"].check(odd, (odd,), 0)
    if RUNNING >= (3, 12):
        intrinsic = instrs[0]._replace(opname="CALL_INTRINSIC_1", arg=2)
        assert "INTRINSIC_IMPORT_STAR" in HANDLERS["CALL_INTRINSIC_1"].check(intrinsic, (intrinsic,), 0)


def raises_in_try_finally(x):
    try:
        raise ValueError(x)  # raised here
    finally:
        x = None


def raises_in_comprehension_in_with(x):
    with Resource([], "r"):
        return [{}[k] for k in x]  # raised here


def reraises_bare():
    try:
        {}["k"]  # raised here
    except KeyError:
        raise  # a bare re-raise keeps the first line


@pytest.mark.parametrize("program, args", [
    (raises_in_try_finally, (1,)), (raises_in_comprehension_in_with, ("a",)), (reraises_bare, ()),
])  # fmt: skip
def test_exception_notes_name_the_line_that_raised(program, args):
    """Cleanup handlers (finally, with, 3.12's inlined comprehensions) re-raise: the line reported for
    an interpreted frame is the one that raised first, as in CPython's traceback."""
    from jitlab.jit.interpreter.core import USER_FRAMES_ATTR

    lines, first = inspect.getsourcelines(program)
    expected = first + next(n for n, text in enumerate(lines) if "# raised here" in text)
    with pytest.raises(Exception) as caught:
        Interpreter().call(program, args, {})
    (filename, line, name), *_ = caught.value.__dict__[USER_FRAMES_ATTR]  # innermost first
    with pytest.raises(type(caught.value)) as native:
        program(*args)
    innermost = native.traceback[-1]  # in <listcomp> on 3.11, inlined from 3.12 on
    assert (line, name) == (expected, innermost.name) == (innermost.lineno + 1, innermost.name)
