"""Python language features around tensor code: arguments, containers, closures, classes, errors."""

import collections
import dataclasses
import functools

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()

OFFSET = 0.25


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


@CORPUS.case("closure_over_tensor", inputs=one(3, 3), tags=("closure",))
def closure_over_tensor():
    weight = torch.randn(3, 3)

    def f(x):
        return x @ weight

    return f


@CORPUS.case("closure_over_python_values", inputs=one(2, 4), tags=("closure",))
def closure_over_python_values():
    power, shift = 2, 0.5

    def f(x):
        return x.abs() ** power + shift

    return f


@CORPUS.case("nested_closure_factory", inputs=one(4), tags=("closure",))
def nested_closure_factory():
    def make_scaler(factor):
        def scale(t):
            return t * factor

        return scale

    double, triple = make_scaler(2.0), make_scaler(3.0)

    def f(x):
        return double(x) + triple(x)

    return f


@CORPUS.case("global_function_and_constant", inputs=one(3, 3), tags=("global",))
def global_function_and_constant():
    def f(x):
        return _helper(x) + OFFSET

    return f


def _helper(x):
    return torch.sin(x) * 2


@CORPUS.case(
    "keyword_arguments",
    inputs=lambda: ((torch.randn(3, 4),), {"bias": torch.randn(4), "scale": 2.0}),
    tags=("arguments", "kwargs"),
)
def keyword_arguments():
    def f(x, bias=None, scale=1.0):
        if bias is not None:
            x = x + bias
        return x * scale

    return f


@CORPUS.case(
    "variadic_args",
    inputs=lambda: ((torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)), {}),
    tags=("arguments", "varargs"),
)
def variadic_args():
    def f(*tensors):
        return sum(tensors) / len(tensors)

    return f


@CORPUS.case(
    "variadic_kwargs",
    inputs=lambda: ((torch.randn(2, 2),), {"alpha": torch.randn(2, 2), "beta": torch.randn(2, 2)}),
    tags=("arguments", "varargs", "kwargs"),
)
def variadic_kwargs():
    def f(x, **extras):
        for name in sorted(extras):
            x = x + extras[name] * len(name)
        return x

    return f


@CORPUS.case(
    "list_of_tensors_input", inputs=lambda: (([torch.randn(2, 3) for _ in range(3)],), {}), tags=("list",)
)
def list_of_tensors_input():
    def f(xs):
        return torch.stack([x.relu() for x in xs]).sum(0)

    return f


@CORPUS.case(
    "dict_of_tensors_input_and_output",
    inputs=lambda: (({"a": torch.randn(3), "b": torch.randn(3)},), {}),
    tags=("dict",),
)
def dict_of_tensors_input_and_output():
    def f(batch):
        return {"sum": batch["a"] + batch["b"], "prod": batch["a"] * batch["b"]}

    return f


@CORPUS.case("tuple_output_unpacking", inputs=one(4, 4), tags=("tuple",))
def tuple_output_unpacking():
    def f(x):
        q, r = torch.linalg.qr(x)
        return r.abs(), q.sum()

    return f


@CORPUS.case("list_output_comprehension", inputs=one(3, 6), tags=("list", "comprehension"))
def list_output_comprehension():
    def f(x):
        return [chunk * i for i, chunk in enumerate(x.chunk(3, dim=1))]

    return f


Output = collections.namedtuple("Output", ["logits", "loss"])


class NamedTupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, target):
        logits = self.fc(x)
        return Output(logits, F.cross_entropy(logits, target))


@CORPUS.case(
    "namedtuple_output_loss",
    inputs=lambda: ((torch.randn(5, 4), torch.randint(0, 3, (5,))), {}),
    tags=("namedtuple", "model"),
)
def namedtuple_output_loss():
    return NamedTupleOut()


@dataclasses.dataclass
class Config:
    hidden: int = 8
    activation: str = "relu"
    scale: float = 0.5


class ConfiguredMLP(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.fc = nn.Linear(4, config.hidden)

    def forward(self, x):
        h = self.fc(x)
        h = F.relu(h) if self.config.activation == "relu" else torch.tanh(h)
        return h * self.config.scale


@CORPUS.case("dataclass_config", inputs=one(3, 4), tags=("dataclass", "config"))
def dataclass_config():
    return ConfiguredMLP(Config())


@dataclasses.dataclass
class Prediction:
    mean: torch.Tensor
    spread: torch.Tensor


@CORPUS.case("dataclass_output", inputs=one(4, 5), tags=("dataclass",))
def dataclass_output():
    def f(x):
        return Prediction(mean=x.mean(1), spread=x.std(1))

    return f


class Named(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.prefix = "layer"

    def forward(self, x):
        name = f"{self.prefix}_{x.shape[0]}"
        if name.endswith("_2"):
            return self.fc(x)
        return self.fc(x) * 0.5


@CORPUS.case("fstring_in_forward", inputs=one(2, 3), tags=("fstring", "string"))
def fstring_in_forward():
    return Named()


class Safe(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def check(self, x):
        if x.shape[-1] != 4:
            raise ValueError(f"expected 4 features, got {x.shape[-1]}")

    def forward(self, x):
        try:
            self.check(x[..., :3])
        except ValueError:
            x = x * 2
        return self.fc(x)


@CORPUS.case("exception_raised_and_caught", inputs=one(2, 4), tags=("exception",))
def exception_raised_and_caught():
    return Safe()


@CORPUS.case("try_finally_no_exception", inputs=one(3, 3), tags=("exception",))
def try_finally_no_exception():
    def f(x):
        out = x
        try:
            out = out.exp()
        finally:
            out = out + 1
        return out

    return f


@CORPUS.case("key_error_fallback_default", inputs=one(2, 2), tags=("exception", "dict"))
def key_error_fallback_default():
    table = {"a": 1.0}

    def f(x):
        try:
            factor = table["b"]
        except KeyError:
            factor = 3.0
        return x * factor

    return f


class TreeSum(nn.Module):
    def forward(self, x):
        return self.reduce(x, 0)

    def reduce(self, x, depth: int):
        if x.shape[0] == 1 or depth > 4:
            return x[0]
        half = x.shape[0] // 2
        return self.reduce(x[:half], depth + 1) + self.reduce(x[half:], depth + 1)


@CORPUS.case("recursion_on_shape", inputs=one(8, 3), tags=("recursion", "shape"))
def recursion_on_shape():
    return TreeSum()


def _power(x, n):
    return x if n == 1 else x * _power(x, n - 1)


@CORPUS.case("recursive_python_function", inputs=one(3), tags=("recursion",))
def recursive_python_function():
    def f(x):
        return _power(x, 4)

    return f


@CORPUS.case(
    "isinstance_dispatch",
    inputs=lambda: ((torch.randn(3), [torch.randn(3), torch.randn(3)]), {}),
    tags=("isinstance", "list"),
)
def isinstance_dispatch():
    def f(a, b):
        def total(v):
            if isinstance(v, (list, tuple)):
                return sum(total(e) for e in v)
            return v.sum()

        return total(a) + total(b)

    return f


@CORPUS.case(
    "no_grad_block", inputs=lambda: ((torch.randn(3, 3, requires_grad=True),), {}), tags=("no_grad",)
)
def no_grad_block():
    def f(x):
        with torch.no_grad():
            stats = x.mean() + x.std()
        return (x - stats) * 2

    return f


@CORPUS.case("generator_expression_sum", inputs=one(4, 4), tags=("comprehension", "generator"))
def generator_expression_sum():
    def f(x):
        return sum(x[i] * w for i, w in enumerate([0.1, 0.2, 0.3, 0.4]))

    return f


@CORPUS.case("functools_partial_and_lambda", inputs=one(3, 3), tags=("partial", "lambda"))
def functools_partial_and_lambda():
    act = functools.partial(F.leaky_relu, negative_slope=0.2)
    post = lambda t: t * 3  # noqa: E731

    def f(x):
        return post(act(x))

    return f


@CORPUS.case("python_scalars_from_shape", inputs=one(4, 6), tags=("shape", "scalar"))
def python_scalars_from_shape():
    def f(x):
        rows, cols = x.shape
        ratio = rows / cols
        return x * ratio + torch.arange(cols) * (1.0 / rows)

    return f


@CORPUS.case(
    "string_keyed_config_argument",
    inputs=lambda: ((torch.randn(3, 3), {"mode": "max", "temperature": 0.5}), {}),
    tags=("config", "dict", "string"),
)
def string_keyed_config_argument():
    def f(x, config):
        x = x / config["temperature"]
        if config["mode"] == "max":
            return x.amax(-1)
        return x.mean(-1)

    return f


@CORPUS.case(
    "dtype_conversion",
    inputs=lambda: ((torch.randint(0, 10, (4,)),), {}),
    tags=("dtype",),
)
def dtype_conversion():
    def f(x):
        return x.float() / 10 + x.to(torch.float64).mean().float()

    return f
