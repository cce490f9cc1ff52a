"""`contextlib.contextmanager` and `logging` inside a jitted call.

Before, a `with` block of a user's `@contextmanager` sent the whole call to eager: contextlib ran
natively, so the user's generator was "user code run natively by library code" (and
`functools.wraps` made contextlib's helper claim the user's module, so no trace rule could tell it
apart). contextlib is now interpreted. A logging call also sent the whole call to eager; it is now a
graph break. And a break call ran from jitlab's frames: a log record of the capture call said
`book.py:241 call_break` and those of later calls `<jitlab.jit entry>:17 entry` where eager code
logs the user's file, line and function (the same holds for `warnings.warn`, which attributes a
warning to its caller). A break call now runs from a frame that carries the user's place.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings

import pytest
import torch

from jitlab.jit import explain_rule, jit

EVENTS: list = []


@contextlib.contextmanager
def section(name):
    EVENTS.append(f"enter {name}")
    try:
        yield name.upper()
    finally:
        EVENTS.append(f"exit {name}")


@contextlib.contextmanager
def swallow_value_errors():
    try:
        yield
    except ValueError as exc:
        EVENTS.append(f"swallowed {exc}")


def item_in_section(x):
    with section("stats") as label:
        y = x.exp()
        EVENTS.append((label, round(y.mean().item(), 4)))
    return y.log1p()


def raise_in_swallowing_section(x):
    with swallow_value_errors():
        if x.shape[0] > 2:
            raise ValueError(f"too many rows: {x.shape[0]}")
        x = x * 2
    return x + 1


def raise_through_section(x):
    with section("outer"):
        y = x.relu()
        if x.shape[0] > 2:
            raise KeyError("rows")
    return y


@section("decorated")
def decorated(x):
    return x.sin() * 2


def stdlib_managers(x):
    table = {"a": 1.0}
    with contextlib.suppress(KeyError):
        x = x * table["b"]
    with contextlib.nullcontext(3.0) as scale:
        x = x * scale
    with contextlib.ExitStack() as stack:
        stack.callback(EVENTS.append, "stack closed")
        x = x + table["a"]
    return x


def _compare(fn, shapes, *, events=True):
    """Call `fn` jitted and eagerly on inputs of `shapes`; results, raised exceptions and EVENTS must
    be equal. Returns the jitted callable."""
    jitted = jit(fn, backend="eager")
    for n, shape in enumerate(shapes):
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(n))
        results = []
        for runner in (fn, jitted):
            EVENTS.clear()
            try:
                out = ("returned", runner(x.clone()))
            except Exception as exc:  # compared with the other run
                out = ("raised", type(exc), str(exc))
            results.append((out, list(EVENTS)))
        (eager_out, eager_events), (jit_out, jit_events) = results
        assert eager_out[0] == jit_out[0], (eager_out, jit_out)
        if eager_out[0] == "returned":
            assert torch.equal(eager_out[1], jit_out[1])
        else:
            assert eager_out == jit_out
        if events:
            assert eager_events == jit_events
    return jitted


def test_contextmanager_around_item_is_one_graph():
    jitted = _compare(item_in_section, [(3, 2)] * 4)
    report = jitted.explain()
    assert not report.fallbacks, str(report)
    assert report.graph_count == 1 and report.graphs[0].hits == 3, str(report)


def test_contextmanager_that_swallows_an_exception():
    jitted = _compare(raise_in_swallowing_section, [(2, 3), (2, 3), (4, 3), (4, 3), (2, 3)])
    report = jitted.explain()
    assert not report.fallbacks, str(report)


def test_exception_through_contextmanager_runs_its_finally():
    jitted = _compare(raise_through_section, [(2, 3), (5, 3), (2, 3)])
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 1, str(report)


def test_contextmanager_as_decorator():
    jitted = _compare(decorated, [(3,)] * 3)
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 2, str(report)


def test_standard_library_context_managers():
    jitted = _compare(stdlib_managers, [(3,)] * 3)
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 2, str(report)


def test_trace_rule_of_a_contextmanager_helper_names_contextlib():
    # functools.wraps gives the helper the user's __module__; the rule looks at where its code lives
    assert explain_rule(section).startswith("interpreted: @contextmanager"), explain_rule(section)


# --------------------------------------------------------------------------- logging
class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[str] = []

    def emit(self, record):
        self.records.append(self.format(record))


@pytest.fixture
def logger():
    handler = ListHandler()
    handler.setFormatter(logging.Formatter("%(filename)s:%(lineno)d %(funcName)s %(levelname)s %(message)s"))
    log = logging.getLogger("jitlab.tests.jit.logging")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    yield log, handler
    log.removeHandler(handler)


def test_logging_call_is_a_break_and_records_the_users_line(logger):
    log, handler = logger

    def norm_logged(x):
        y = x.relu()
        log.info("norm %.4f", y.norm().item())
        return y * 2 - 1

    jitted = jit(norm_logged, backend="eager")
    for n in range(4):
        x = torch.randn(3, 3, generator=torch.Generator().manual_seed(n))
        if n == 2:
            log.setLevel(logging.WARNING)  # later calls log nothing, as eager code does
        handler.records.clear()
        expected = norm_logged(x)
        eager_records = list(handler.records)
        handler.records.clear()
        assert torch.equal(jitted(x), expected)
        assert handler.records == eager_records
        if n < 2:
            assert eager_records and "norm_logged INFO norm" in eager_records[0], eager_records
    report = jitted.explain()
    assert not report.fallbacks, str(report)
    assert [b.kind for b in report.graph_breaks] == ["call"], str(report)
    assert "logging's Logger.info" in report.graph_breaks[0].reason, str(report)


def test_warning_from_a_break_is_attributed_to_the_users_line():
    def warn_natively(x):
        y = x * 2
        # a class pattern cannot be interpreted: the helper is a call break
        helper(y)
        return y + 1

    def helper(t):
        match t:
            case torch.Tensor():  # MATCH_CLASS: the interpreter runs this function natively
                pass
        warnings.warn("from the helper", UserWarning, stacklevel=2)
        return t

    jitted = jit(warn_natively, backend="eager")
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            jitted(torch.ones(2))
        assert [(w.filename, w.lineno) for w in caught] == [
            (__file__, warn_natively.__code__.co_firstlineno + 3)
        ]
    assert jitted.explain().graph_breaks, str(jitted.explain())


def test_exc_info_inside_an_except_block_is_the_programs():
    def handled(x):
        try:
            raise ValueError("inner")
        except ValueError:
            kind, exc, _tb = sys.exc_info()
            EVENTS.append((kind.__name__, str(exc), type(sys.exception()).__name__))
        EVENTS.append(sys.exc_info())
        return x + 1

    jitted = _compare(handled, [(2,)] * 3)
    assert EVENTS == [("ValueError", "inner", "ValueError"), (None, None, None)]
    assert jitted.explain().graphs[0].hits == 2, str(jitted.explain())


def _warn_two_up(t):
    match t:
        case torch.Tensor():  # MATCH_CLASS: the interpreter runs this function natively, as a break
            pass
    warnings.warn("from two frames up", UserWarning, stacklevel=3)
    return t


def _calls_the_warning_helper(y):
    return _warn_two_up(y) * 3


def test_warning_with_stacklevel_sees_every_interpreted_frame():
    def outer(x):
        y = x + 1
        z = _calls_the_warning_helper(y)
        return z - 1

    jitted = jit(outer, backend="eager")
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            jitted(torch.ones(2))
        # stacklevel=3: past the helper and its caller, the line of `outer` that called them
        assert [(w.filename, w.lineno) for w in caught] == [(__file__, outer.__code__.co_firstlineno + 2)]


def test_warning_in_the_jitted_function_shows_on_every_call_as_eager():
    def warns(x):
        warnings.warn("careful", UserWarning, stacklevel=1)
        return x * 2

    jitted = jit(warns, backend="eager")
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert torch.equal(jitted(torch.ones(2)), torch.full((2,), 2.0))
        assert [(str(w.message), w.filename, w.lineno) for w in caught] == [
            ("careful", __file__, warns.__code__.co_firstlineno + 1)
        ]
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 2, str(report)
