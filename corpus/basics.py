"""Basics: plain functions and small modules made of tensor operations only.

Every tool should capture most of these; they are the baseline the other themes are measured against.
"""

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


def two(shape_a, shape_b):
    return lambda: ((torch.randn(*shape_a), torch.randn(*shape_b)), {})


@CORPUS.case("add_mul_fn", inputs=two((4, 8), (4, 8)), tags=("function",))
def add_mul_fn():
    def f(x, y):
        return (x + y) * y - x / 2

    return f


@CORPUS.case("pointwise_chain_fn", inputs=one(16, 16), tags=("function",))
def pointwise_chain_fn():
    def f(x):
        return torch.tanh(torch.sin(x) * torch.exp(-x.abs())) + x.sigmoid()

    return f


@CORPUS.case("reductions_fn", inputs=one(6, 10), tags=("function",))
def reductions_fn():
    def f(x):
        return x.sum(dim=1) + x.mean(dim=1) - x.amax(dim=1) + x.std(dim=1)

    return f


@CORPUS.case("matmul_softmax_fn", inputs=two((4, 8), (8, 5)), tags=("function",))
def matmul_softmax_fn():
    def f(a, b):
        return F.softmax(a @ b, dim=-1)

    return f


@CORPUS.case("tensor_methods_vs_functions", inputs=one(3, 4), tags=("function", "methods"))
def tensor_methods_vs_functions():
    def f(x):
        a = x.relu().clamp(max=1.0).pow(2)
        b = torch.clamp(torch.relu(x), max=1.0) ** 2
        return a - b + x.transpose(0, 1).contiguous().t()

    return f


@CORPUS.case("linear_module", inputs=one(5, 8), tags=("module",))
def linear_module():
    return nn.Linear(8, 3)


@CORPUS.case("mlp_sequential", inputs=one(4, 16), tags=("module", "model"))
def mlp_sequential():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 4))


class MLP(nn.Module):
    def __init__(self, sizes=(8, 16, 16, 2)):
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])
        self.fc3 = nn.Linear(sizes[2], sizes[3])

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


@CORPUS.case("mlp_class", inputs=one(4, 8), tags=("module", "model"))
def mlp_class():
    return MLP()


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.head(torch.flatten(x, 1))


@CORPUS.case("small_cnn", inputs=one(2, 1, 8, 8), tags=("module", "model"))
def small_cnn():
    return SmallCNN()


@CORPUS.case("broadcast_where_fn", inputs=two((4, 1), (1, 5)), tags=("function",))
def broadcast_where_fn():
    def f(a, b):
        s = a + b
        return torch.where(s > 0, s, torch.zeros_like(s))

    return f


@CORPUS.case("cat_stack_split_fn", inputs=two((4, 6), (4, 6)), tags=("function",))
def cat_stack_split_fn():
    def f(a, b):
        c = torch.cat([a, b], dim=1)
        left, right = c.split(6, dim=1)
        return torch.stack([left * 2, right], dim=0).sum(0)

    return f


@CORPUS.case("indexing_slicing_fn", inputs=one(6, 8), tags=("function",))
def indexing_slicing_fn():
    def f(x):
        return x[1:4, ::2] * x[:3, 1::2] + x[-1, None, :4]

    return f


@CORPUS.case("python_constant_math", inputs=one(4, 4), tags=("function",))
def python_constant_math():
    scale = 2.0**0.5

    def f(x):
        return x * scale + 3 // 2 - abs(-1.5)

    return f


class LayerNormByHand(nn.Module):
    def __init__(self, dim=16, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


@CORPUS.case("layer_norm_by_hand", inputs=one(3, 16), tags=("module", "model"))
def layer_norm_by_hand():
    return LayerNormByHand()


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, tokens):
        return self.out(self.emb(tokens).mean(dim=1))


@CORPUS.case("embedding_bag_of_words", inputs=lambda: ((torch.randint(0, 20, (3, 5)),), {}), tags=("module",))
def embedding_bag_of_words():
    return BagOfWords()
