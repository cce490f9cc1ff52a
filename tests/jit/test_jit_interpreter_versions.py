"""The interpreter's handler tables for CPython 3.11, 3.12 and 3.13, and what they leave to CPython.

The tables must cover the running Python's opcodes (each handled, unsupported with a reason, or never
part of a function's bytecode), every handler must run in the differential programs of the
test_jit_interpreter*.py files, per-instruction checks must refuse bytecode shapes a handler does not
know, and what is unsupported must still run (natively) with CPython's result.
"""

from __future__ import annotations

import dis
import importlib.util
import inspect
import sys
import textwrap

import pytest
import test_jit_interpreter
import test_jit_interpreter_constructs
import test_jit_interpreter_generators
from interp_checking import EXECUTED, CheckingInterpreter, interpreted_outcome, outcome, unsupported_in

from jitlab.jit.interpreter import HANDLERS, Interpreter, coverage, unsupported_reason
from jitlab.jit.interpreter.frame import exception_table
from jitlab.jit.interpreter.opcodes import NB_OPS, OPNAMES, SUPPORTED_VERSIONS
from jitlab.jit.interpreter.registry import TABLES, handler

RUNNING = sys.version_info[:2]
PROGRAMS = [
    *test_jit_interpreter_constructs.PROGRAMS,
    *test_jit_interpreter_generators.PROGRAMS,
    *test_jit_interpreter.PROGRAMS,
    test_jit_interpreter.p_imports_inside,
    test_jit_interpreter.p_user_operators,
]


def test_every_handler_of_this_python_is_exercised():
    """Each handled opcode of the running Python must run (and pass the stack-effect check) in the
    differential programs at least once."""
    for program in PROGRAMS:
        interpreted_outcome(program)
    # Not run on their own: END_FOR (3.12, 3.13) is jumped over by FOR_ITER, SET_FUNCTION_ATTRIBUTE
    # (3.13) is run by the MAKE_FUNCTION before it. EXTENDED_ARG and LOAD_ASSERTION_ERROR (pytest
    # rewrites the asserts of test modules) are exercised by tests with modules of their own below.
    never_alone = {"END_FOR", "SET_FUNCTION_ATTRIBUTE", "EXTENDED_ARG", "LOAD_ASSERTION_ERROR"}
    missing = sorted(set(HANDLERS) - EXECUTED - never_alone)
    assert missing == []


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
    with test_jit_interpreter_generators.Resource([], "r"):
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
