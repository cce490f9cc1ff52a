"""A program that raises under jitlab.jit raises the same exception as eager, shown from the user's
code: the interpreter's own frames are not in the traceback, the user's lines are named."""

import traceback

import pytest
import torch

import jitlab


class RaisesOnLongInputs(torch.nn.Module):
    def forward(self, x):
        y = self.double(x)
        return y

    def double(self, x):
        if x.shape[0] > 2:
            raise ValueError("too many rows")  # the line the user must see
        return x * 2


def test_user_exception_is_the_same_and_points_at_user_code():
    model = jitlab.jit(RaisesOnLongInputs(), backend="eager")
    assert torch.equal(model(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(ValueError, match="too many rows") as caught:
        model(torch.ones(3))
    text = "".join(traceback.format_exception(caught.value))
    assert "jitlab/jit/interpreter" not in text
    assert 'raise ValueError("too many rows")  # the line the user must see' in text
    assert "in double" in text and "in forward" in text
    # eager raises the same type with the same message
    with pytest.raises(ValueError, match="too many rows"):
        RaisesOnLongInputs()(torch.ones(3))
