"""Control flow that depends only on Python values, shapes and configuration, not on tensor data.

Tracers that see only tensors (torch.jit.trace) specialise such flow silently; symbolic tracers
(torch.fx) fail when a branch or loop bound depends on a traced value such as a shape.
"""

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


@CORPUS.case("python_loop_fixed", inputs=one(4, 4), tags=("loop",))
def python_loop_fixed():
    def f(x):
        for i in range(3):
            x = x * 0.5 + i
        return x

    return f


@CORPUS.case("loop_bound_from_shape", inputs=one(5, 3), tags=("loop", "shape"))
def loop_bound_from_shape():
    def f(x):
        total = torch.zeros_like(x[0])
        for i in range(x.shape[0]):
            total = total + x[i] * (i + 1)
        return total

    return f


@CORPUS.case("branch_on_shape", inputs=one(6, 4), tags=("branch", "shape"))
def branch_on_shape():
    def f(x):
        if x.shape[0] > 4:
            return x[:4].sum(0)
        return x.sum(0)

    return f


@CORPUS.case("branch_on_dim", inputs=one(2, 3, 4), tags=("branch", "shape"))
def branch_on_dim():
    def f(x):
        if x.dim() == 3:
            x = x.flatten(1)
        return F.relu(x)

    return f


class Flatten(nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1) * 2


@CORPUS.case("view_batch_flatten", inputs=one(3, 2, 5), tags=("shape",))
def view_batch_flatten():
    return Flatten()


@CORPUS.case("shape_arithmetic_reshape", inputs=one(4, 12), tags=("shape",))
def shape_arithmetic_reshape():
    def f(x):
        batch, features = x.shape
        heads = 3
        return x.reshape(batch, heads, features // heads).transpose(0, 1).sum(-1)

    return f


@CORPUS.case("size_method_scalar", inputs=one(3, 7), tags=("shape", "scalar"))
def size_method_scalar():
    def f(x):
        n = x.size(1)
        return x / n + x.numel() / 100.0

    return f


class ConfigBranch(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        if self.config["activation"] == "gelu":
            x = F.gelu(x)
        else:
            x = F.relu(x)
        if self.config.get("residual", False):
            x = x + 1.0
        return x * self.config["scale"]


@CORPUS.case("config_dict_branches", inputs=one(3, 8), tags=("branch", "config"))
def config_dict_branches():
    return ConfigBranch({"activation": "gelu", "residual": True, "scale": 0.5})


class FlagModule(nn.Module):
    def __init__(self, use_bias_shift=True):
        super().__init__()
        self.use_bias_shift = use_bias_shift
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if self.use_bias_shift:
            y = y - y.mean()
        return y


@CORPUS.case("bool_attribute_branch", inputs=one(2, 4), tags=("branch", "attribute"))
def bool_attribute_branch():
    return FlagModule()


@CORPUS.case("while_loop_python_counter", inputs=one(3, 3), tags=("loop",))
def while_loop_python_counter():
    def f(x):
        steps = 0
        while steps < 4:
            x = torch.tanh(x) + 0.1
            steps += 1
        return x

    return f


class MaskedSum(nn.Module):
    def forward(self, x, mask=None):
        if mask is not None:
            x = x.masked_fill(mask == 0, 0.0)
        return x.sum(-1)


@CORPUS.case("none_default_argument", inputs=lambda: ((torch.randn(3, 4),), {}), tags=("branch", "arguments"))
def none_default_argument():
    return MaskedSum()


@CORPUS.case(
    "optional_mask_given", inputs=lambda: ((torch.randn(3, 4), torch.ones(3, 4)), {}), tags=("branch",)
)
def optional_mask_given():
    return MaskedSum()


@CORPUS.case(
    "enumerate_zip_loop", inputs=lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {}), tags=("loop",)
)
def enumerate_zip_loop():
    def f(a, b):
        out = torch.zeros(4)
        for i, (ra, rb) in enumerate(zip(a, b)):
            out = out + ra * rb * (i + 1)
        return out

    return f


@CORPUS.case("early_return_on_shape", inputs=one(1, 8), tags=("branch", "shape"))
def early_return_on_shape():
    def f(x):
        if x.shape[0] == 1:
            return x.squeeze(0) * 2
        return x.mean(0)

    return f
