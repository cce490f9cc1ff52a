"""f-strings formatted from symbolic sizes stay unread until their text is used (issue 44,
torchvision's VisionTransformer: `torch._assert(x.dim() == 3, f"... got {x.shape}")` pinned the batch
size). A message of an assertion that holds is never read: one capture more serves every batch. A
text that is used (raised, returned, stored, handed to other code) pins the sizes it shows, and the
program sees what eager code sees, on many calls with changing sizes."""

from __future__ import annotations

import warnings

import pytest
import torch
from test_jit_size_flow import assert_same

from jitlab.jit import jit

BATCHES = [2, 3, 4, 5, 6, 3, 7, 2]


def checked(x):
    """torchvision's EncoderBlock and Encoder: the message shows the whole shape."""
    torch._assert(x.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {x.shape}")
    n, shape = x.dim(), x.shape
    torch._assert(n == 3, f"Expected 3 dims, got {n}: {shape!r} and {shape}")
    return x * 2


def with_specs(x):
    """Format specs and conversions of sizes, in several fields, with other text around."""
    b, t = x.shape[0], x.shape[1]
    shape = x.shape
    torch._assert(x.dim() == 3, f"b={b:>5d} t={t!r} ({b:#x}, {t:08.2f}) {shape!s:>40} {shape!a}")
    return x.sum(1)


def raised(x):
    """The message is raised on some calls: the exception's text must be eager's."""
    b, shape = x.shape[0], x.shape
    torch._assert(b < 5, f"batch {b} too big for {shape} (max {4:d})")
    return x + 1


def keyed(x):
    """The text is used as a key (CALL with two arguments that is no assertion)."""
    out, total = {}, x.sum()
    out.setdefault(f"{x.shape}", total)
    return out


HISTORY: list = []


def remember(value, key):
    HISTORY.append((type(key), key, value))


def stored(x):
    """The text is handed to other code, which stores it outside the call (as the last of two
    arguments, so that it is kept unread up to the call)."""
    remember(1, f"rows={x.shape[0]:03d}")
    return x - 1


def returned(x):
    """The text is returned (its f-string is stored first: formatted and read at once)."""
    text = f"{x.shape} / {x.size(1):>4}"
    return x * 3, text


def tensor_condition(x):
    """A tensor condition is no `True`: the message is read before the call, as natively."""
    torch._assert((x > -100).all(), f"bad values in {x.shape}")
    return x.exp()


def later_call(x):
    """A later field calls code before the assertion: the text counts as read (pinned), as a field
    after the sizes may run anything."""
    torch._assert(x.dim() == 2, f"{x.shape} has {x.size(0)} rows")
    return x.exp()


def bad_spec(x):
    """Formatting fails in eager code: the same error, with the same text (once the sizes are
    symbolic: the first calls do not fail)."""
    b, shape = x.shape[0], x.shape
    if b > 4:
        torch._assert(True, f"{shape!r:d}")  # the shape's repr is a str: no format code d
    if b > 6:
        torch._assert(True, f"{b:s}")
    return x * 2


def run_batches(fn, batches=BATCHES):
    fast = jit(fn, backend="eager")
    for b in batches:
        x = torch.randn(b, 4, 6) if fn is not later_call else torch.randn(b, 4)
        assert_same(fast(x), fn(x), b)
    report = fast.explain()
    assert not report.fallbacks, str(report)  # no internal error made the calls run eagerly
    return report


@pytest.mark.parametrize("fn", [checked, with_specs], ids=lambda f: f.__name__)
def test_message_of_an_assertion_that_holds_pins_no_size(fn):
    report = run_batches(fn)
    assert report.captures == 2, report
    assert report.graphs[1].symbolic_sizes == ("args[0] (*, *, *)",), report
    assert report.graphs[1].size_pins == (), report
    # the symbolic entry serves every call after the two captures: checked first once it served
    # (most recently used first), it also takes the last batch of 2, which entry 0 could serve too
    assert report.graphs[1].hits == len(BATCHES) - 2


def test_raised_message_is_eagers_text():
    fast = jit(raised, backend="eager")
    for b in BATCHES:
        x = torch.randn(b, 3)
        if b < 5:
            assert_same(fast(x), raised(x), b)
            continue
        with pytest.raises(AssertionError) as eager:
            raised(x)
        with pytest.raises(AssertionError) as jitted:
            fast(x)
        assert str(jitted.value) == str(eager.value) == f"batch {b} too big for torch.Size([{b}, 3]) (max 4)"
    # the calls that did not raise share one entry with a symbolic batch
    report = fast.explain()
    assert report.graphs[1].symbolic_sizes == ("args[0] (*, *)",), str(report)
    assert report.graphs[1].size_pins == (), str(report)


def test_text_used_as_a_key_pins_the_sizes_and_is_a_plain_str():
    fast = jit(keyed, backend="eager")
    for b in BATCHES:
        x = torch.randn(b, 4, 6)
        expected, got = keyed(x), fast(x)
        assert list(got) == list(expected) and all(type(k) is str for k in got)
        assert_same(list(got.values()), list(expected.values()), b)
    report = fast.explain()
    assert not report.fallbacks, str(report)
    pins = [pin for g in report.graphs for pin in g.size_pins]
    assert pins and all("formatted into a string whose text is used" in pin for pin in pins), pins
    assert all("test_jit_lazy_texts.py:" in pin for pin in pins), pins


def test_text_stored_outside_is_eagers():
    fast = jit(stored, backend="eager")
    for b in BATCHES:
        x = torch.randn(b, 2)
        HISTORY.clear()
        expected = stored(x)
        eager_history = list(HISTORY)
        HISTORY.clear()
        assert_same(fast(x), expected, b)
        assert HISTORY == eager_history == [(str, f"rows={b:03d}", 1)]
    assert not fast.explain().fallbacks


@pytest.mark.parametrize("fn", [returned, tensor_condition, later_call], ids=lambda f: f.__name__)
def test_text_read_before_the_call_is_eagers(fn):
    report = run_batches(fn)
    assert any(g.size_pins for g in report.graphs), report  # read: the sizes shown are pinned


def test_failing_format_raises_eagers_error():
    fast = jit(bad_spec, backend="eager")
    for b in (2, 3, 4, 5, 7, 3, 8, 6):
        x = torch.randn(b, 2)
        if b <= 4:
            assert_same(fast(x), bad_spec(x), b)
            continue
        with pytest.raises(ValueError) as eager:
            bad_spec(x)
        with pytest.raises(ValueError) as jitted:
            fast(x)
        assert str(jitted.value) == str(eager.value), b
    assert fast.explain().graphs[1].symbolic_sizes == ("args[0] (*, *)",), str(fast.explain())


class Tag:
    """A field whose `__format__` is interpreted code that makes calls of its own."""

    def __format__(self, spec):
        return "tag" + str(len(spec))


def first_of(a, b):
    return a


def inner_calls(x):
    """A later field's `__format__` makes calls while the first field's text waits for the outer
    call: that call must still get a plain str, as eager code does."""
    n, tag = x.shape[0], Tag()
    text = first_of(f"{n}", f"{tag}")
    return x * 2, text, type(text).__name__


CALLED_TEXT = '''
def called_text(x):
    """`f"{n}"(a, b)` (a missing comma): eager's TypeError names a str."""
    n, a = x.shape[0], 1
    try:
        f"{n}"(a, a)
    except TypeError as error:
        return x + 1, str(error)
    return x, ""
'''
with warnings.catch_warnings():  # Python warns of the str it calls, which is the point here
    warnings.simplefilter("ignore", SyntaxWarning)
    NAMESPACE: dict = {}
    exec(compile(CALLED_TEXT, __file__, "exec"), globals(), NAMESPACE)
called_text = NAMESPACE["called_text"]


@pytest.mark.parametrize("fn", [inner_calls, called_text], ids=lambda f: f.__name__)
def test_text_taken_by_a_call_is_a_plain_str(fn):
    fast = jit(fn, backend="eager")
    for b in BATCHES:
        x = torch.randn(b, 3)
        expected, got = fn(x), fast(x)
        assert_same(got[0], expected[0], b)
        assert [type(v) for v in got[1:]] == [type(v) for v in expected[1:]] == [str] * (len(got) - 1)
        assert got[1:] == expected[1:], (b, got, expected)
    assert not fast.explain().fallbacks, str(fast.explain())
