"""Comparing outputs and state: equal things pass, and each kind of difference is named."""

from __future__ import annotations

import collections
import dataclasses

import torch
from torch import nn

from jitlab.capture.compare import MISSING, difference, read_state, state_paths


def test_nested_equal_structures_pass():
    value = {"a": [torch.ones(2), (1, 2.5, "x")], "b": None}
    copy = {"a": [torch.ones(2), (1, 2.5, "x")], "b": None}
    assert difference(value, copy) is None
    assert difference(torch.tensor([1.0]), torch.tensor([1.0 + 1e-9])) is None


def test_each_difference_is_described():
    assert "shape" in difference(torch.ones(2), torch.ones(3))
    assert "dtype" in difference(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert "values differ" in difference(torch.ones(2), torch.zeros(2))
    assert "values differ" in difference(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert "length" in difference([1, 2], [1])
    assert "keys" in difference({"a": 1}, {"b": 1})
    assert "Tensor instead of int" in difference(3, torch.tensor(3))
    assert difference((torch.ones(1),), [torch.ones(1)]) == "output: list instead of tuple"
    assert "not kept" in difference(3, MISSING)


def test_namedtuples_and_dataclasses_compare_by_fields():
    A = collections.namedtuple("Out", ["x", "y"])
    B = collections.namedtuple("Out", ["x", "y"])  # e.g. TorchScript's own class of the same name
    C = collections.namedtuple("Out", ["x", "z"])
    assert difference(A(1, 2), B(1, 2)) is None
    assert "namedtuple" in difference(A(1, 2), C(1, 2))

    @dataclasses.dataclass
    class P:
        m: torch.Tensor

    assert difference(P(torch.ones(1)), P(torch.ones(1))) is None
    assert difference(P(torch.ones(1)), P(torch.zeros(1))).startswith("output.m")


def test_state_paths_cover_buffers_and_plain_attributes():
    model = nn.Sequential(nn.BatchNorm1d(2))
    model.counter = 0
    model.config = {"k": 1}
    model.helper = object()  # not plain: left out
    paths = state_paths(model)
    assert "0.running_mean" in paths and "0.num_batches_tracked" in paths
    assert "counter" in paths and "config" in paths and "helper" not in paths
    state = read_state(model, paths + ["nowhere.x"])
    assert state["counter"] == 0 and state["nowhere.x"] == MISSING
    model[0].running_mean.add_(1)
    assert torch.equal(state["0.running_mean"], torch.zeros(2))  # a copy, not the live tensor
