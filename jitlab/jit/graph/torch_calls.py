"""What the graph recorder needs to know about torch calls and values: which calls only read
metadata, draw random numbers, mutate their inputs or make shapes that depend on tensor data; how
torch.fx can refer to a callable; which tensors a value holds. Kept apart from the recorder
(`jitlab.jit.graph.recorder`) because the speculation and segment code asks the same questions.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

METADATA_ATTRS = {
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_sparse", "is_quantized",
    "is_meta", "layout", "is_leaf", "is_mkldnn", "is_nested", "itemsize", "nbytes", "is_cpu",
}  # fmt: skip
METADATA_METHODS = {
    "size", "dim", "stride", "numel", "nelement", "ndimension", "is_contiguous", "is_floating_point",
    "is_complex", "element_size", "storage_offset", "__len__", "get_device", "is_signed",
    "has_names", "is_inference",
}  # fmt: skip
DATA_DEPENDENT_SHAPE = {
    "nonzero", "unique", "unique_consecutive", "masked_select", "argwhere", "bincount",
    "repeat_interleave", "nonzero_static",
}  # fmt: skip


_FULL_REDUCTIONS = {"sum", "mean", "max", "min", "amax", "amin", "prod", "all", "any", "std", "var", "norm"}


def full_reduction(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether the call reduces one tensor to a 0-d tensor whatever its shape (`x[mask].max()`,
    `t.sum()`: no dim, no other argument but a dtype), so the result's shape depends on no data."""
    return (
        name in _FULL_REDUCTIONS
        and len(args) == 1
        and isinstance(args[0], torch.Tensor)
        and set(kwargs) <= {"dtype"}
    )


def data_dependent_shape(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether the shape of the result of torch function or method `name` depends on tensor data:
    `nonzero`, `unique`, a boolean mask index, and `repeat_interleave` with repeats given as a tensor
    (with a number of repeats, or `output_size`, the shape follows from the input's shape)."""
    if name == "repeat_interleave":
        if "output_size" in kwargs:
            return False
        repeats = kwargs["repeats"] if "repeats" in kwargs else args[1] if len(args) > 1 else None
        return repeats is None or isinstance(repeats, torch.Tensor)
    if name == "__getitem__":
        return has_bool_index(args[1:])
    return name in DATA_DEPENDENT_SHAPE


RANDOM = {
    "rand", "randn", "randint", "randperm", "normal", "bernoulli", "bernoulli_", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "multinomial",
    "rand_like", "randn_like", "randint_like", "uniform_", "normal_", "exponential_", "geometric_",
    "log_normal_", "cauchy_", "random_", "rrelu", "poisson", "native_dropout", "gumbel_softmax",
}  # fmt: skip
MUTATING_FUNCTIONS = {"batch_norm", "instance_norm", "__setitem__"}
AUTOGRAD_HOOKS = {"backward", "register_hook", "retain_grad", "register_post_accumulate_grad_hook"}
SAFE_CONSTANT_TYPES = (
    int, float, bool, str, type(None), complex, torch.dtype, torch.device, torch.layout,
    torch.memory_format, type(Ellipsis),
)  # fmt: skip


def name_of(func: object) -> str:
    return getattr(func, "__name__", "") or ""


def node_op_name(node: fx.Node) -> str:
    """The operation a recorded fx node calls: a method's name, an attribute read's attribute
    (`getattr(t, "data")`), else the callable's `__name__` ("" when it has none)."""
    target = node.target
    if isinstance(target, str):
        return target
    if target is getattr and len(node.args) == 2 and isinstance(node.args[1], str):
        return node.args[1]
    return getattr(target, "__name__", "") or ""


def getter_attr(func: object) -> str | None:
    """For `Tensor.<attr>.__get__`, the attribute name; else None."""
    if name_of(func) == "__get__":
        owner = getattr(func, "__self__", None)
        return getattr(owner, "__name__", None)
    return None


def is_inplace(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__") or name.startswith("__i") and name.endswith("__")


def method_recorded(name: str, args: tuple, kwargs: dict) -> str:
    """The tensor method the graph calls for `args[0].<name>(*args[1:], **kwargs)`. The graph holds a
    `torch.Size` argument as a tuple, which means the same to every method but `new`:
    `x.new(x.size())` is uninitialised memory of that size, `x.new((2, 3))` the tensor `[2, 3]`. So
    `x.new(size)` is recorded as `x.new_empty(size)`, which reads both as a size."""
    if (
        name == "new"
        and len(args) == 2
        and type(args[1]) is torch.Size
        and set(kwargs) <= {"dtype", "device"}
    ):
        return "new_empty"
    return name


#: conversions that return the tensor itself when it already has the dtype and device asked for; the
#: dtype and device of every tensor are fixed by the guards, so whether one returns its input is too
_SAME_OBJECT_CONVERSIONS = {
    "float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char", "to", "type",
    "type_as", "cpu", "cuda",
}  # fmt: skip


def returns_its_input(name: str, args: tuple, kwargs: dict, out: object) -> bool:
    """Whether a conversion returned its input itself (`w.float()` of a float32 parameter): the
    result is the same tensor, so it keeps the input's node. A new node would stand for the
    parameter from then on, and its `.grad` and the compiled part making it would be another
    tensor's (Gemma's RMSNorm `1.0 + self.weight.float()` made a training step's forward an output
    per norm weight, which kept it uncompiled). `memory_format` depends on strides: left out."""
    return (
        name in _SAME_OBJECT_CONVERSIONS
        and "memory_format" not in kwargs
        and bool(args)
        and out is args[0]
        and isinstance(out, torch.Tensor)
    )


def is_tensor_method(func: object, name: str) -> bool:
    if getattr(torch.Tensor, name, None) is func or getattr(torch._C.TensorBase, name, None) is func:
        return True
    # torch._tensor wraps some operators (e.g. __pow__ -> pow) under the wrapped method's name
    return (
        getattr(func, "__module__", None) == "torch._tensor"
        and not resolves(func)
        and hasattr(torch.Tensor, name)
    )


def resolves(func: object) -> bool:
    """Whether fx can refer to `func` by its module and qualified name."""
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return False
    try:
        obj: object = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        return False
    return obj is func


_WRAPPERS: dict[Any, Any] = {}


def nameable(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func`, or a plain wrapper fx can name when torch's code generation could not refer to it."""
    if isinstance(func, (type(len), type(torch.Tensor.add))) or resolves(func):
        return func
    if not str(getattr(func, "__module__", "") or "").startswith("torch"):
        return func
    wrapper = _WRAPPERS.get(func)
    if wrapper is None:

        def wrapper(*args, _func=func, **kwargs):
            return _func(*args, **kwargs)

        wrapper.__name__ = wrapper.__qualname__ = "jit_" + "".join(
            c if c.isalnum() else "_" for c in name_of(func)
        )
        wrapper.__module__ = __name__
        _WRAPPERS[func] = wrapper
    return wrapper


STATIC_METADATA = {"dtype", "device", "requires_grad", "is_cuda", "is_sparse", "is_quantized", "is_meta",
                    "layout", "is_leaf", "is_mkldnn", "is_nested", "itemsize", "is_cpu", "get_device",
                    "is_floating_point", "is_complex", "element_size", "is_signed", "has_names",
                    "is_inference", "dim", "ndimension", "ndim", "type"}  # fmt: skip


def is_metadata_read(getter: str | None, name: str, args: tuple, kwargs: dict) -> bool:
    """A read of a tensor's metadata (shape, dtype, device, ...), not of its data: no graph node.
    `x.type()` without an argument is the name of its dtype and device ('torch.FloatTensor')."""
    if getter is not None:
        return getter in METADATA_ATTRS
    return name in METADATA_METHODS or (name == "type" and len(args) == 1 and not kwargs)


def numbers_only(items: list, count: list[int], depth: int = 0) -> bool:
    """A (nested) list of at most 256 floats and ints, no bools: what `tolist()` may keep lazy."""
    for item in items:
        t = type(item)
        if t is list:
            if depth >= 4 or not numbers_only(item, count, depth + 1):
                return False
        elif t is float or t is int:
            count[0] += 1
            if count[0] > 256:
                return False
        else:
            return False
    return True


def fixed_arity(out: object) -> bool:
    """Named-tuple results of torch (`topk`, `max(dim)`...) always have the same number of items."""
    return type(out).__module__ == "torch.return_types"


def tensors_in(value: object, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and depth < 4:
        return [t for v in value for t in tensors_in(v, depth + 1)]
    if isinstance(value, dict) and depth < 4:
        return [t for v in value.values() for t in tensors_in(v, depth + 1)]
    return []


def shape_of(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def contains_tensor(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(contains_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(contains_tensor(v) for v in value.values())
    return False


def has_bool_index(index: tuple) -> bool:
    for item in index:
        if isinstance(item, torch.Tensor) and item.dtype == torch.bool:
            return True
        if isinstance(item, (tuple, list)) and has_bool_index(tuple(item)):
            return True
    return False


_CONVERSIONS = {"__float__": float, "__int__": int, "__index__": operator.index}


def read_node(graph: fx.Graph, name: str, node: fx.Node) -> fx.Node:
    """The graph's own read of a number from tensor data, as the program read it (`item`, `tolist`,
    `float(t)`, `int(t)`, `operator.index(t)`)."""
    if name in ("item", "tolist"):
        return graph.call_method(name, (node,))
    return graph.call_function(_CONVERSIONS[name], (node,))
