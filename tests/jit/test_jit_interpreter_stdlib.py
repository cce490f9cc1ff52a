"""Differential test of the interpreter on code nobody wrote for it: parts of the standard library.

Hooks that step into every Python function of the standard library make the interpreter run a few
hundred of them (textwrap, difflib, shlex, json's pure-Python encoder, the regular-expression parser,
tokenize, ...), each instruction checked against CPython's stack effects. Stepping into jitlab's own
code as well makes the interpreter run itself: a generator looping over another one goes through
InterpretedGenerator.__next__ and the interpreter loop, interpreted. Results must equal CPython's on
every supported version.
"""

from __future__ import annotations

import difflib
import fractions
import io
import ipaddress
import json
import pprint
import re
import shlex
import statistics
import string
import textwrap
import tokenize
import urllib.parse

import pytest
from interp_checking import CheckingInterpreter, outcome

from jitlab.jit.interpreter import Hooks


class StandardLibrary(Hooks):
    def step_into(self, func):
        return "jitlab" not in func.__code__.co_filename


class EveryFunction(Hooks):
    def step_into(self, func):
        return True


CASES = {
    "textwrap": lambda: (textwrap.fill("hello world " * 20, width=33), textwrap.dedent("   a\n     b")),
    "difflib": lambda: list(difflib.unified_diff(["a\n", "b\n", "c\n"], ["a\n", "c\n", "d\n"])),
    "statistics": lambda: (statistics.median([3, 1, 4, 1, 5]), statistics.stdev([1.0, 2.0, 4.0])),
    "fractions": lambda: str(fractions.Fraction(3, 4) + fractions.Fraction("1/3") * 2),
    "string.Template": lambda: string.Template("$a and ${b}").substitute(a=1, b="x"),
    "shlex": lambda: shlex.split('a "b c" d\\ e'),
    "pprint": lambda: pprint.pformat({"a": [1, 2, {"b": (3, 4)}] * 3}, width=30),
    "urllib.parse": lambda: (
        urllib.parse.urlsplit("http://u:p@h:8/p?q=1#f").port,
        urllib.parse.quote("a b/c"),
    ),
    "ipaddress": lambda: [str(h) for h in ipaddress.ip_network("10.0.0.0/29").hosts()],
    "json": lambda: json.dumps({"a": [1, 2.5, None, True], "b": {"c": "d"}}, indent=2, sort_keys=True),
    "re": lambda: re.compile(r"(?P<x>a+)(b|c)*\d{2,3}[^xyz]{1,}$").groupindex["x"],
    "tokenize": lambda: [t.string for t in tokenize.generate_tokens(io.StringIO("x = (1 + 2)\n").readline)],
}


@pytest.mark.parametrize("name", list(CASES))
def test_standard_library_runs_as_in_cpython(name):
    case = CASES[name]
    re.purge()  # the pattern is parsed (in Python) on each run, not taken from re's cache
    expected = outcome(case)
    re.purge()
    assert outcome(lambda: CheckingInterpreter(StandardLibrary()).call(case, (), {})) == expected


def _numbers(n):
    for i in range(n):  # noqa: UP028 - a loop of yields on purpose
        yield i


def _squares(xs):
    for x in xs:
        yield x * x


def _pipeline():
    return list(_squares(_numbers(4))), sum(_squares(_numbers(3))), sorted(x for x in _numbers(3))


def test_the_interpreter_runs_itself():
    stepped = set()

    class Recording(CheckingInterpreter):
        def call_function(self, fn, args, kwargs):
            stepped.add(fn.__qualname__)
            return super().call_function(fn, args, kwargs)

    assert Recording(EveryFunction()).call(_pipeline, (), {}) == _pipeline()
    assert {"InterpretedGenerator.__next__", "Interpreter.run_frame"} <= stepped
