"""What ParityBench's generated files import from `_paritybench_helpers`, written for jitlab.

The generated files start with `from _paritybench_helpers import _mock_config, patch_functional`
(and `_mock_layer, _paritybench_base, _fails_compile` before their test classes). ParityBench's own
module also imports its test harness and TorchDynamo's test utilities; this one holds only what the
programs and their TESTCASES use, with the behaviour their arguments were generated against:

- `_mock_config(**values)`: a dict whose keys read as attributes (a missing one raises KeyError);
- `_mock_layer(in_features, out_features)`: a Linear when both sizes are given, else a ReLU-like
  block with `expansion = 1` (what crawled code expects of a residual block class);
- `patch_functional()`: makes `torch.functional` and `torch.nn.functional` hold each other's
  lower-case names, since crawled projects import either as `F`.
"""

from __future__ import annotations

import functools
import re
import unittest
from typing import Any

import torch


class DummyBlock(torch.nn.ReLU):
    """A stand-in layer passed where a program expects a block class or instance."""

    expansion = 1

    def __str__(self) -> str:
        return "_mock_layer()"

    __repr__ = __str__


def _mock_layer(
    in_features: int | None = None, out_features: int | None = None, *args: Any, **kwargs: Any
) -> Any:
    if in_features and out_features:
        return torch.nn.Linear(in_features, out_features, **kwargs)
    return DummyBlock()


class _mock_config(dict):  # noqa: N801 - the name the generated files import
    """Configuration objects of crawled projects (argparse namespaces, yaml dicts) as one dict."""

    def __getattr__(self, name: str) -> Any:
        return self[name]


@functools.cache
def patch_functional() -> None:
    """Give `torch.functional` and `torch.nn.functional` each other's public lower-case names
    (once per process)."""
    first, second = torch.functional, torch.nn.functional
    names1 = {n for n in dir(first) if re.match(r"^[a-z]", n)}
    names2 = {n for n in dir(second) if re.match(r"^[a-z]", n)}
    for name in names1 - names2:
        setattr(second, name, getattr(first, name))
    for name in names2 - names1:
        setattr(first, name, getattr(second, name))


class _paritybench_base(unittest.TestCase):  # noqa: N801 - the name the generated files import
    """Base of the generated files' unittest classes; jitlab runs TESTCASES itself, never these."""


def _fails_compile() -> Any:
    return unittest.skip("jit compile fails")
