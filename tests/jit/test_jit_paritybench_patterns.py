"""Patterns met in ParityBench's crawled programs that TorchDynamo captures as one graph and
jitlab.jit used to fall back on. Each program here is a small one written for the pattern; each test
asserts one graph serving several calls with changing inputs, equal to eager code (results, grad mode,
requires_grad, gradients, exceptions)."""

from __future__ import annotations

import enum
import typing

import numpy as np
import pytest
import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program, same

from jitlab.jit import jit

# ---------------------------------------------------------------- grad mode switched by a call


class FocalWeights(nn.Module):
    """Weights computed between `torch.set_grad_enabled(False)` and `(True)`, as plain calls."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        torch.set_grad_enabled(False)
        w = torch.sigmoid(h) ** 2
        torch.set_grad_enabled(True)
        return (h * w).sum(), w, h * 2


def _leaves_grad_off(x):
    y = x * 2
    torch.set_grad_enabled(False)
    return y + 1, x * 3


def _branch_after_switch(x):
    z = x * 3  # requires grad as the mode the call started in says
    torch.set_grad_enabled(mode=False)
    y = x * 2
    if y.sum() > 0:  # re-checked after the graph: a miss must leave grad mode as the call found it
        return y + 1, z
    return y - 1, z


def _grad_state_calls(fn, backend: str, calls: int = 5) -> object:
    jitted = jit(fn, backend=backend)
    for n in range(calls):
        torch.set_grad_enabled(True)
        x = (torch.rand(3, 4) + 0.1) * (1 if n % 2 else -1)
        x.requires_grad_(True)
        try:
            expected = fn(x)
            eager_mode = torch.is_grad_enabled()
            torch.set_grad_enabled(True)
            got = jitted(x)
            assert torch.is_grad_enabled() == eager_mode
        finally:
            torch.set_grad_enabled(True)
        assert same(expected, got), (expected, got)
    return jitted


def test_set_grad_enabled_calls_are_one_graph():
    torch.manual_seed(0)
    inputs = [((torch.randn(3, 4),), {}) for _ in range(4)]
    jitted = check_program(FocalWeights, inputs)
    assert_one_graph(jitted, hits=3)
    loss, w, h2 = jitted(torch.randn(3, 4))
    assert loss.requires_grad and not w.requires_grad and h2.requires_grad
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_set_grad_enabled_gradients_equal_eager(backend):
    torch.manual_seed(0)
    eager = FocalWeights()
    model = FocalWeights()
    model.load_state_dict(eager.state_dict())
    jitted = jit(model, backend=backend)
    for _ in range(3):
        x = torch.randn(3, 4)
        expected, got = eager(x), jitted(x)
        assert same(expected, got)
        expected[0].backward()
        got[0].backward()
        for a, b in zip(eager.parameters(), model.parameters()):
            assert torch.allclose(a.grad, b.grad)
    assert_one_graph(jitted, hits=2)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_grad_mode_left_off_at_exit_as_eager(backend):
    jitted = _grad_state_calls(_leaves_grad_off, backend)
    assert_one_graph(jitted, hits=4)


def test_grad_mode_restored_when_a_check_after_the_graph_fails():
    jitted = _grad_state_calls(_branch_after_switch, "eager", calls=6)
    assert jitted.explain().fallbacks == ()


def test_data_dependent_grad_mode_still_falls_back():
    def f(x):
        torch.set_grad_enabled(x)  # not a bool: torch's own error, as eager
        return x

    jitted = jit(f, backend="eager")
    with pytest.raises(TypeError):
        jitted(torch.ones(()))
    assert torch.is_grad_enabled()


# ---------------------------------------------------------------- lists made by native operators


def _index_like(x, dim):
    """A shape built with list operators and then written, as crawled sparsemax code does."""
    view = [1] * x.dim()
    view[0] = -1
    rho = torch.arange(1, x.size(dim) + 1, dtype=x.dtype)
    return rho.view(view).transpose(0, dim)


class ShapeEdits(nn.Module):
    def forward(self, x):
        weights = _index_like(x, 1)
        dims = [0] + [d for d in range(1, x.dim())]
        dims[0], dims[1] = dims[1], dims[0]
        names = "rows,cols".split(",")
        names[0] = names[0].upper()
        merged = {"scale": 2.0} | {"shift": 1.0}
        merged["scale"] = 3.0
        values = x[0, :2].tolist()
        values[0] = 0.5
        return (x * weights).permute(*dims) * merged["scale"], dims, names, merged, values


def test_lists_made_by_native_operators_are_the_calls_own():
    inputs = [((torch.randn(3, n, 2),), {}) for n in (4, 4, 5, 5)]
    jitted = check_program(ShapeEdits, inputs)
    assert_one_graph(jitted, hits=2)


def test_a_list_operator_on_an_outside_list_still_guards_it():
    table = [1.0, 2.0]

    def f(x):
        scaled = table * 2
        scaled[0] = 5.0
        return x * sum(scaled)

    jitted = jit(f, backend="eager")
    for value in (1.0, 1.0, 4.0):
        table[1] = value
        assert torch.allclose(jitted(torch.ones(2)), f(torch.ones(2)))
    assert table == [1.0, 4.0]
    assert jitted.explain().fallbacks == ()


# ---------------------------------------------------------------- objects of native constructors


@pytest.fixture
def validating():
    """Distributions validate their parameters (the default, which other tests may have changed)."""
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


class PolicyHead(nn.Module):
    """Returns torch distributions built from graph values, as actor-critic networks do."""

    def __init__(self) -> None:
        super().__init__()
        self.actor = nn.Linear(3, 4)
        self.log_std = nn.Parameter(torch.zeros(4))

    def forward(self, obs):
        probs = torch.softmax(self.actor(obs), dim=1)
        mean = self.actor(obs)
        normal = torch.distributions.Normal(mean, self.log_std.exp().expand_as(mean))
        independent = torch.distributions.Independent(normal, 1)
        return torch.distributions.Categorical(probs), independent, (mean * 2).sum()


def _same_distribution(a, b) -> bool:
    if type(a) is not type(b) or a.batch_shape != b.batch_shape or a.event_shape != b.event_shape:
        return False
    if isinstance(a, torch.distributions.Independent):
        return _same_distribution(a.base_dist, b.base_dist)
    params = [k for k in type(a).arg_constraints if k in vars(a)]
    return all(same(getattr(a, k), getattr(b, k)) for k in params) and same(a.mean, b.mean)


def test_distributions_built_from_graph_values_are_rebuilt(validating):
    torch.manual_seed(0)
    eager = PolicyHead()
    model = PolicyHead()
    model.load_state_dict(eager.state_dict())
    jitted = jit(model, backend="eager")
    for _ in range(4):
        obs = torch.randn(2, 3)
        expected, got = eager(obs), jitted(obs)
        for a, b in zip(expected[:2], got[:2]):
            assert _same_distribution(a, b)
        assert same(expected[2], got[2])
        action = torch.tensor([1, 3])
        assert same(expected[0].log_prob(action), got[0].log_prob(action))
    assert_one_graph(jitted, hits=3)
    assert jitted.explain().graphs[0].checks  # the validation of the parameters, re-checked


class FixedCategorical(torch.distributions.Categorical):
    """ikostrikov/pytorch-a2c-ppo-acktr-gail's subclass: methods added, the constructor torch's."""

    def sample(self):
        return super().sample().unsqueeze(-1)

    def log_probs(self, actions):
        return super().log_prob(actions.squeeze(-1)).view(actions.size(0), -1).sum(-1).unsqueeze(-1)

    def mode(self):
        return self.probs.argmax(dim=-1, keepdim=True)


class CheckedNormal(torch.distributions.Normal):
    """Overrides what torch's constructor reads (`arg_constraints`): not rebuilt by calling it."""

    arg_constraints = {"loc": torch.distributions.constraints.real}


class FixedHead(nn.Module):
    def __init__(self, cls) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.cls = cls

    def forward(self, x):
        out = self.linear(x)
        if self.cls is FixedCategorical:
            return FixedCategorical(logits=out)
        return CheckedNormal(out, out.exp())


def test_program_subclasses_of_distributions_that_add_methods_are_rebuilt(validating):
    torch.manual_seed(0)
    eager = FixedHead(FixedCategorical)
    model = FixedHead(FixedCategorical)
    model.load_state_dict(eager.state_dict())
    jitted = jit(model, backend="eager")
    actions = torch.tensor([[1], [3]])
    for _ in range(3):
        x = torch.randn(2, 3)
        expected, got = eager(x), jitted(x)
        assert type(got) is FixedCategorical and _same_distribution(expected, got)
        assert same(expected.log_probs(actions), got.log_probs(actions))
        assert same(expected.mode(), got.mode())
    assert_one_graph(jitted, hits=2)
    checked = jit(FixedHead(CheckedNormal), backend="eager")
    x = torch.randn(2, 3)
    assert type(checked(x)) is CheckedNormal
    assert "CheckedNormal that jitlab.jit cannot rebuild" in " ".join(checked.explain().fallbacks)


def _categorical(logits_or_probs):
    return torch.distributions.Categorical(probs=logits_or_probs * 1.0)


def test_distribution_validation_raises_as_eager(validating):
    jitted = jit(_categorical, backend="eager")
    good = torch.tensor([[0.2, 0.8], [0.5, 0.5]])
    for _ in range(2):
        assert same(jitted(good).probs, _categorical(good).probs)
    bad = torch.tensor([[-0.2, 0.8], [0.5, 0.5]])
    with pytest.raises(ValueError) as eager_error:
        _categorical(bad)
    with pytest.raises(ValueError) as jit_error:
        jitted(bad)
    assert str(jit_error.value) == str(eager_error.value)
    assert same(jitted(good).probs, _categorical(good).probs)
    assert_one_graph(jitted, hits=2)


def _changed_after(x):
    probs = torch.softmax(x, 0)
    dist = torch.distributions.Categorical(probs)
    probs.mul_(2)  # the constructor saw the old values: calling it again would not
    return dist


def _given_an_attribute(x):
    dist = torch.distributions.Categorical(logits=x * 1)
    dist.note = "set after"
    return dist


@pytest.mark.parametrize(
    ("fn", "reason"),
    [(_changed_after, "changed in place afterwards"), (_given_an_attribute, "attribute write .note")],
)
def test_objects_changed_after_they_were_made_fall_back(fn, reason):
    jitted = jit(fn, backend="eager")
    for _ in range(2):
        x = torch.randn(3)
        assert _same_distribution(jitted(x), fn(x))
    assert reason in " ".join(jitted.explain().fallbacks), jitted.explain().fallbacks


class OrderLoss(nn.Module):
    """Returns (does not raise) an exception object on a configuration it does not support."""

    def __init__(self, order: int) -> None:
        super().__init__()
        self.order = order

    def forward(self, params, target):
        diff = params - target
        if self.order == 1:
            return (diff**2).mean()
        return NotImplementedError(f"order {self.order} is not implemented", self.order)


def test_returned_exception_objects_are_rebuilt():
    inputs = [((torch.randn(3, 2), torch.randn(3, 2)), {}) for _ in range(3)]
    model = OrderLoss(3)
    jitted = jit(model, backend="eager")
    results = []
    for args, _ in inputs:
        got, expected = jitted(*args), OrderLoss(3)(*args)
        assert type(got) is type(expected) and got.args == expected.args
        assert got.__traceback__ is None and got.__context__ is None
        results.append(got)
    assert results[1] is not results[2]  # a new object per call, as eager code makes
    assert_one_graph(jitted, hits=2)


def test_raised_exception_objects_are_not_rebuilt():
    def f(x):
        try:
            raise ValueError("inside")
        except ValueError as exc:
            error = exc
        return x * 2, error

    jitted = jit(f, backend="eager")
    for _ in range(2):
        y, error = jitted(torch.ones(2))
        assert type(error) is ValueError and error.__traceback__ is not None
    assert jitted.explain().fallbacks


# ---------------------------------------------------------------- max(1, t.item()) in the graph


class MaskedMAE(nn.Module):
    """Normalises by `max(1, count)` where the count is read with `.item()` (an int or a float)."""

    def forward(self, pred, target, valid):
        dims = pred.shape[-1]
        loss = torch.sum(torch.abs(target - pred) * valid)
        return loss / (dims * max(1, torch.sum(valid).item())), min(valid.max().item(), 0.5) * pred


def _mae_inputs(scales):
    torch.manual_seed(0)
    return [((torch.rand(2, 3), torch.rand(2, 3), torch.rand(2, 3) * s), {}) for s in scales]


def test_max_of_an_item_stays_in_the_graph():
    # valid sums from about 0.1 (max gives the int 1) to about 6 (it gives the float)
    jitted = check_program(MaskedMAE, _mae_inputs([2.0, 2.0, 0.05, 1.0, 0.01, 3.0]))
    assert_one_graph(jitted, hits=5)


def _reads_type(x):
    m = max(1, x.sum().item())
    if isinstance(m, int):  # looks at the type only: the value must be re-checked
        return x * 0
    return x / m


def test_a_type_read_of_max_is_re_checked():
    calls = [torch.full((3,), v) for v in (1.0, 1.0, 0.1, 0.1, 2.0)]
    jitted = jit(_reads_type, backend="eager")
    for x in calls:
        assert same(jitted(x), _reads_type(x))
    assert any("item" in s for s in jitted.explain().breaks)  # specialised on the value


def test_type_of_max_is_eagers():
    def f(x):
        m = max(1, x.sum().item())
        return type(m).__name__, m * x

    jitted = jit(f, backend="eager")
    for v in (1.0, 1.0, 0.1, 2.0):
        x = torch.full((3,), v)
        assert same(jitted(x), f(x))


# ---------------------------------------------------------------- assert on tensor data


# compiled here, not in this module: pytest rewrites the assert statements of test modules
_ONE_HOT = """
@torch.no_grad()
def one_hot(labels, classes, ignore=-1):
    size = list(labels.size())
    size.insert(1, classes)
    assert labels[labels != ignore].max() < classes, "too few classes"
    return torch.zeros(size).scatter_(1, labels.clamp(min=0).unsqueeze(1), 1)
"""
_namespace: dict = {"torch": torch}
exec(compile(_ONE_HOT, "<one_hot>", "exec"), _namespace)
_one_hot = _namespace["one_hot"]


class OneHotLoss(nn.Module):
    def forward(self, logits, labels):
        target = _one_hot(labels, logits.shape[1]).detach()
        return nn.functional.binary_cross_entropy_with_logits(logits, target)


def _labels(n_ignored: int, top: int = 3) -> torch.Tensor:
    labels = torch.arange(12).remainder(top + 1).view(3, 4)
    labels.view(-1)[:n_ignored] = -1
    return labels


def test_assert_on_tensor_data_is_a_check_not_a_specialisation():
    torch.manual_seed(0)
    inputs = [((torch.randn(3, 4, 4), _labels(k)), {}) for k in (0, 0, 2, 5, 1)]
    jitted = check_program(OneHotLoss, inputs)
    assert_one_graph(jitted, hits=4)  # the masked selection's size changes: it stays in the graph
    (checks,) = [g.checks for g in jitted.explain().graphs]
    assert any("assert" in c for c in checks)


def test_failing_assert_raises_as_eager():
    model = OneHotLoss()
    jitted = jit(OneHotLoss(), backend="eager")
    logits = torch.randn(3, 4, 4)
    for _ in range(2):
        assert same(jitted(logits, _labels(1)), model(logits, _labels(1)))
    with pytest.raises(AssertionError, match="too few classes"):
        model(logits, _labels(1, top=4))
    with pytest.raises(AssertionError, match="too few classes"):
        jitted(logits, _labels(1, top=4))
    assert same(jitted(logits, _labels(2)), model(logits, _labels(2)))
    assert_one_graph(jitted, hits=2)


def test_other_decisions_that_raise_stay_specialisations():
    def f(x):
        if not (x > 0).all():  # not an assert statement: reported as a specialisation
            raise ValueError("negative")
        return x.log()

    jitted = jit(f, backend="eager")
    for _ in range(2):
        jitted(torch.rand(3) + 0.1)
    assert jitted.explain().breaks and not jitted.explain().graphs[0].checks


# ---------------------------------------------------------------- inference graph with a re-check


class NoGradBranch(nn.Module):
    """A forward wholly under no_grad (compiled for inference) that branches on tensor data."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            y = self.lin(x)
            if y.sum() > 0:
                return y * 2
            return y - 1


def test_inference_entry_with_a_speculation_is_built():
    # the entry's code used to be invalid (IndentationError: an internal error, the call ran eagerly)
    torch.manual_seed(0)
    inputs = [((torch.randn(2, 3),), {}) for _ in range(6)]
    jitted = check_program(NoGradBranch, inputs, backend="aot_eager")
    explanation = jitted.explain()
    assert explanation.fallbacks == () and sum(g.hits for g in explanation.graphs) >= 3


# ---------------------------------------------------------------- an OrderedDict built and returned


class FeatureMaps(nn.Module):
    """Detection backbones (RetinaFace's MnasNet, torchvision's IntermediateLayerGetter): the feature
    maps returned in an OrderedDict made in the call, filled item by item or from pairs."""

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        from collections import OrderedDict

        maps = OrderedDict()
        for i, stage in enumerate(self.stages):
            x = stage(x)
            maps[i] = x
        named = OrderedDict([(f"p{i}", v * 2) for i, v in maps.items()])
        return maps, named


def test_an_ordered_dict_made_in_the_call_is_returned_from_one_graph():
    from collections import OrderedDict

    inputs = [((torch.randn(2, 4),), {}) for _ in range(3)]
    jitted = check_program(FeatureMaps, inputs)
    assert_one_graph(jitted, hits=2)
    maps, named = jitted(torch.randn(2, 4))
    again, _ = jitted(torch.randn(2, 4))
    assert type(maps) is OrderedDict and list(maps) == [0, 1, 2] and list(named) == ["p0", "p1", "p2"]
    assert again is not maps  # each call gets its own dict


# ---------------------------------------------------------------- torch functions without tensors


class SupConMask(nn.Module):
    """As HobbitLong's SupConLoss: a device picked with `torch.device(...)` (a torch function a
    `TorchFunctionMode` sees, whose arguments hold no tensor) and shapes combined with
    `torch.broadcast_shapes`."""

    def forward(self, features):
        device = torch.device("cuda") if features.is_cuda else torch.device("cpu")
        shape = torch.broadcast_shapes((features.shape[0], 1), (1, features.shape[1]))
        mask = torch.eye(features.shape[0], dtype=torch.float32).to(device)
        return (features @ features.T) * mask, shape, device


def test_torch_functions_without_tensor_arguments_are_plain_python_values():
    jitted = check_program(SupConMask, [((torch.randn(4, 3),), {}) for _ in range(3)])
    assert_one_graph(jitted)
    _, shape, device = jitted(torch.randn(5, 2))
    assert shape == (5, 2) and device == torch.device("cpu")


class IouLoss(nn.Module):
    """As PPYOLOE's IOUloss: `x.type()` (the name of its dtype and device) used to cast a mask."""

    def forward(self, pred, target):
        tl = torch.max(pred[:, :2], target[:, :2])
        br = torch.min(pred[:, 2:], target[:, 2:])
        inside = (tl < br).type(tl.type()).prod(dim=1)
        return inside * (br - tl).prod(dim=1), tl.type()


def test_type_name_of_a_tensor_is_metadata_not_a_speculation():
    inputs = [((torch.rand(5, 4), torch.rand(5, 4)), {}) for _ in range(3)]
    jitted = check_program(IouLoss, inputs)
    assert_one_graph(jitted)
    out, name = jitted(torch.rand(5, 4, dtype=torch.float64), torch.rand(5, 4, dtype=torch.float64))
    assert name == "torch.DoubleTensor" and out.dtype == torch.float64


class ProfiledMapping(nn.Module):
    """As lama-cleaner's MappingNet: a `record_function` range around part of the forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        with torch.autograd.profiler.record_function("mapping"):
            x = self.lin(x)
        return torch.relu(x)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_record_function_ranges_are_entered_and_exited_by_the_graph(backend):
    jitted = check_program(ProfiledMapping, [((torch.randn(2, 4),), {}) for _ in range(3)], backend=backend)
    assert_one_graph(jitted)
    code = jitted.explain().graphs[0].code
    # the handle the exit gets is the one the graph's enter made on this call, not the capture's
    assert "_record_function_enter_new" in code and "_jit_const" not in code


# ---------------------------------------------------------------- requires_grad set on a made tensor


def causal_mask(x):
    """As MuseMorphose's `generate_causal_mask`: a flag set to what it already is."""
    mask = (torch.triu(torch.ones(x.shape[-1], x.shape[-1])) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
    mask.requires_grad = False
    return torch.softmax(x + mask, dim=-1)


def zero_conv(x):
    """As AutoGL's ZeroConv: a new tensor made to require grad."""
    out = torch.zeros_like(x)
    out.requires_grad = True
    return out


def after_an_operation(x):
    y = x * 2
    y.requires_grad = False  # eager code raises when x requires grad (y is no leaf then)
    return y


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_requires_grad_left_as_it_is_on_a_made_tensor_is_one_graph(backend, requires_grad):
    inputs = [((torch.randn(4, 4, requires_grad=requires_grad),), {}) for _ in range(3)]
    assert_one_graph(check_program(lambda: causal_mask, inputs, backend=backend))


def test_requires_grad_set_on_a_made_tensor_is_one_graph_with_the_eager_backend():
    jitted = check_program(lambda: zero_conv, [((torch.randn(3, 2),), {}) for _ in range(3)])
    assert_one_graph(jitted)
    out = jitted(torch.randn(3, 2))
    assert out.requires_grad and out.is_leaf
    out.sum().backward()
    assert torch.equal(out.grad, torch.ones(3, 2))


def test_requires_grad_set_with_a_compiling_backend_runs_eagerly_with_the_reason():
    jitted = check_program(
        lambda: zero_conv, [((torch.randn(3, 2),), {}) for _ in range(3)], backend="aot_eager"
    )
    assert jitted.explain().fallbacks == ("attribute write .requires_grad on a tensor",)


def test_requires_grad_on_a_tensor_with_history_raises_as_eager():
    # check_program compares the exception eager code raises with the jitted call's
    check_program(lambda: after_an_operation, [((torch.randn(2, requires_grad=True),), {}) for _ in range(2)])
    assert_one_graph(check_program(lambda: after_an_operation, [((torch.randn(2),), {}) for _ in range(3)]))


# ---------------------------------------------------------------- numpy numbers stored


class HaarJacobian(nn.Module):
    """As InvDN's HaarDownsampling: a numpy number computed from shapes, stored on the module."""

    def forward(self, x):
        self.elements = x.shape[1] * x.shape[2] * x.shape[3]
        self.last_jac = self.elements / 4 * np.log(1 / 16.0)
        return x * 2, self.last_jac


def test_a_numpy_number_stored_and_returned_is_rebuilt_as_a_constant():
    observe = lambda m: (m.last_jac, type(m.last_jac))  # noqa: E731
    inputs = [((torch.randn(2, 3, 4, 4),), {}) for _ in range(3)] + [((torch.randn(2, 5, 4, 4),), {})]
    jitted = check_program(HaarJacobian, inputs, observe=observe)
    assert jitted.explain().fallbacks == () and jitted.explain().captures == 2
    _, jac = jitted(torch.randn(2, 5, 4, 4))
    assert type(jac) is np.float64 and jac == 5 * 4 * 4 / 4 * np.log(1 / 16.0)


# ---------------------------------------------------------------- str() of a str subclass


class StrEnum(str, enum.Enum):
    """As MONAI's: an enum of strings whose `__str__` is its value."""

    def __str__(self):
        return self.value


class Weighting(StrEnum):
    SQUARE = "square"
    SIMPLE = "simple"


class WeightedLoss(nn.Module):
    def __init__(self, w_type: Weighting) -> None:
        super().__init__()
        self.w_type = w_type

    def forward(self, x):
        if self.w_type == str(Weighting.SIMPLE):
            return x.reciprocal(), str(self.w_type)
        return x * x, str(self.w_type)


def test_str_of_a_str_subclass_runs_its_own_str_interpreted():
    for w_type in Weighting:
        jitted = check_program(
            lambda w=w_type: WeightedLoss(w), [((torch.rand(3) + 1,), {}) for _ in range(3)]
        )
        assert_one_graph(jitted)
        assert jitted(torch.ones(2))[1] == w_type.value


def _by_domain(x, label):
    """easezyc/deep_transfer_learning's WideAndDeepModel compares its label argument, a tensor in
    ParityBench's inputs, with a string: `Tensor.__eq__` returns NotImplemented, and the comparison
    is False whatever the tensor holds."""
    if label == "src":
        return x * 2
    return x - 1


def test_comparing_a_tensor_with_a_string_is_no_decision_on_data():
    jitted = check_program(lambda: _by_domain, [((torch.randn(3), torch.randn(2)), {}) for _ in range(3)])
    assert_one_graph(jitted)
    assert jitted.explain().graphs[0].speculations == ()


def _tags_a_made_tensor(x):
    """frotms/PaddleOCR2Pytorch sets Paddle's `stop_gradient` on the tensors it makes."""
    enc = torch.tanh(x)
    enc.stop_gradient = True
    return enc * 2 if enc.stop_gradient else enc


def _returns_a_tagged_tensor(x):
    out = x * 2
    out.stop_gradient = True
    return out


def _tags_its_argument(x):
    """mit-han-lab/bevfusion's RemoveGrid: `x.grid = None` on its input."""
    before = getattr(x, "grid", "unset")
    x.grid = None
    return x + 1 if before is None else x - 1


def test_attributes_written_on_tensors():
    jitted = check_program(lambda: _tags_a_made_tensor, [((torch.randn(3),), {}) for _ in range(3)])
    assert_one_graph(jitted)
    returned = jit(_returns_a_tagged_tensor, backend="eager")
    for _ in range(2):
        out = returned(torch.randn(3))
        assert out.stop_gradient is True
    assert "leaves it with attributes set on it (stop_gradient)" in " ".join(returned.explain().fallbacks)
    tagged = jit(_tags_its_argument, backend="eager")
    x = torch.randn(3)
    assert torch.equal(tagged(x), x - 1) and x.grid is None  # first call: no grid before
    assert torch.equal(tagged(x), x + 1) and x.grid is None  # the attribute read is guarded
    y = torch.randn(3)
    assert torch.equal(tagged(y), y - 1) and y.grid is None  # a hit replays the write
    assert tagged.explain().fallbacks == ()
    assert sum(g.hits for g in tagged.explain().graphs) >= 1


# ---------------------------------------------------------------- a queue of past inputs


class DelayQueue(nn.Module):
    """spikingjelly's `Delay`: each call appends its input to a list attribute and, once the list
    holds more than `steps` tensors, pops the oldest and returns it (an input of an earlier call).
    The length is read through the slot wrapper `self.queue.__len__()`."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.queue: list = []

    def forward(self, x):
        self.queue.append(x)
        if self.queue.__len__() > self.steps:
            return self.queue.pop(0) * 1.0, len(self.queue)
        return torch.zeros_like(x), len(self.queue)


@pytest.mark.parametrize("steps", [1, 2])
def test_a_queue_of_past_inputs_popped_is_one_graph_per_length(steps):
    inputs = [((torch.randn(3, 2),), {}) for _ in range(7)]
    jitted = check_program(lambda: DelayQueue(steps), inputs, observe=lambda m: list(m.queue))
    assert_one_graph(jitted, hits=6 - steps - 1)  # one capture per length the queue starts with


class ReturnsTheOldest(DelayQueue):
    def forward(self, x):
        self.queue.append(x)
        return self.queue.pop(0) if len(self.queue) > self.steps else x


def test_the_popped_tensor_is_the_earlier_call_s_input_itself():
    """As in eager code, the result is the tensor object an earlier call put in the queue (a graph
    input handed back), and the queue holds the later inputs themselves."""
    jitted = jit(ReturnsTheOldest(1), backend="eager")
    inputs = [torch.randn(2) for _ in range(5)]
    assert jitted(inputs[0]) is inputs[0]
    for n in range(1, 5):
        assert jitted(inputs[n]) is inputs[n - 1]
        assert len(jitted.module.queue) == 1 and jitted.module.queue[0] is inputs[n]
    assert_one_graph(jitted, hits=2)


# ---------------------------------------------------------------- dicts keyed by Enum members and classes


class Mode(enum.Enum):
    PLAIN = enum.auto()
    DOUBLED = enum.auto()


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class ForwardPerMode(nn.Module):
    """nncf's `ThreeConvModel`: `forward` picks a bound method from a dict keyed by an `Enum` member
    held in an attribute (`self._forward_fn_per_mode[self.mode]`); the dict is also read with `get`,
    `in` and as a whole (`len`, iteration)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.mode = Mode.PLAIN
        self.level = Level.LOW
        self.per_mode = {Mode.PLAIN: self.plain, Mode.DOUBLED: self.doubled}
        self.scale = {Level.LOW: 0.5, Level.HIGH: 2.0, nn.ReLU: 3.0}

    def plain(self, x):
        return self.lin(x)

    def doubled(self, x):
        return self.lin(x) * 2

    def forward(self, x):
        y = self.per_mode[self.mode](x) * self.scale.get(self.level, 1.0)
        if nn.ReLU in self.scale:
            y = y + self.scale[nn.ReLU]
        return y + len(self.per_mode) + sum(1 for _ in self.scale)


def test_a_dict_keyed_by_enum_members_and_classes_is_one_graph_guarded_on_its_items():
    jitted = check_program(ForwardPerMode, [((torch.randn(2, 3),), {}) for _ in range(3)])
    assert_one_graph(jitted, hits=2)
    guards = str(jitted.explain())
    assert "self.per_mode[Mode.PLAIN] is" in guards and "self.scale[ReLU] == 3.0" in guards
    assert "<class 'torch.nn.modules.activation.ReLU'> in self.scale == True" in guards


def test_changing_the_enum_attribute_or_the_dict_is_seen():
    module = ForwardPerMode()
    eager = ForwardPerMode()
    eager.load_state_dict(module.state_dict())
    jitted = jit(module, backend="eager")
    x = torch.randn(2, 3)

    def both(change):
        change(module)
        change(eager)
        assert torch.equal(jitted(x), eager(x))

    both(lambda m: None)
    both(lambda m: setattr(m, "mode", Mode.DOUBLED))
    both(lambda m: setattr(m, "level", Level.HIGH))
    both(lambda m: m.scale.__setitem__(Level.HIGH, 4.0))
    both(lambda m: m.scale.pop(nn.ReLU))
    both(lambda m: m.per_mode.__setitem__(Mode.DOUBLED, m.plain))
    both(lambda m: None)
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 6 and sum(g.hits for g in report.graphs) == 1


# ---------------------------------------------------------------- objects of classes without __init__


class NoTrace:
    """nncf's `no_jit_trace`: a context manager with no `__init__` that keeps state on itself."""

    def __enter__(self):
        self.state = torch._C._get_tracing_state()
        torch._C._set_tracing_state(None)

    def __exit__(self, *args):
        torch._C._set_tracing_state(self.state)
        self.state = None


class NormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        with NoTrace():
            norm = x.pow(2).sum(dim=1, keepdim=True).sqrt() + eps
            return weight * torch.div(x, norm)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


class NormWithoutTracing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(4))
        self.eps = 1e-6

    def forward(self, x):
        made = Record()
        made.scale = 2.0
        return NormFunction.apply(x, self.weight, self.eps) * made.scale


class Record:
    pass


def test_objects_of_classes_without_init_are_made_by_the_call():
    """They used to be "of unknown origin": an attribute written on one ran the call eagerly."""
    jitted = check_program(NormWithoutTracing, [((torch.randn(3, 4),), {}) for _ in range(3)])
    assert_one_graph(jitted, hits=2)


def make_record_with_arguments(x):
    Record(x)
    return x


def test_a_class_without_init_given_arguments_raises_as_in_eager_code():
    jitted = jit(make_record_with_arguments, backend="eager")
    with pytest.raises(TypeError, match="Record\\(\\) takes no arguments"):
        jitted(torch.ones(2))
    with pytest.raises(TypeError, match="Record\\(\\) takes no arguments"):
        make_record_with_arguments(torch.ones(2))


HANDLERS: dict = {nn.ReLU: 2.0, Mode.PLAIN: 3.0}


def scale_if_handled(x):
    if nn.ReLU in HANDLERS:
        x = x * 2
    if Mode.DOUBLED in HANDLERS:
        x = x + 1
    return x


def test_a_constant_key_tested_with_in_is_guarded_both_ways():
    """Only `in` reads the dict: the guard is on the membership itself (present, then absent)."""
    jitted = jit(scale_if_handled, backend="eager")
    x = torch.ones(2)
    for handlers in ({nn.ReLU: 2.0}, {nn.ReLU: 2.0}, {}, {}, {Mode.DOUBLED: 1.0}, {nn.ReLU: 1.0}):
        HANDLERS.clear()
        HANDLERS.update(handlers)
        assert torch.equal(jitted(x), scale_if_handled(x)), handlers
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 3 and sum(g.hits for g in report.graphs) == 3


# ---------------------------------------------------------------- classes with their own __new__


class QuantBase(typing.NamedTuple):
    value: torch.Tensor
    scale: torch.Tensor | None
    bit_width: torch.Tensor | None


class QuantValue(QuantBase):
    """brevitas's `QuantTensor`: a named tuple whose `__new__` turns numbers into tensors before
    `super().__new__(cls, ...)`, with properties over its fields."""

    def __new__(cls, value, scale=None, bit_width=None):
        if scale is not None and not isinstance(scale, torch.Tensor):
            scale = torch.tensor(scale, dtype=torch.float)
        if bit_width is not None and not isinstance(bit_width, torch.Tensor):
            bit_width = torch.tensor(bit_width, dtype=torch.float)
        return super().__new__(cls, value, scale, bit_width)

    @property
    def tensor(self):
        return self.value * self.scale


class QuantIdentity(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.25

    def forward(self, x):
        q = QuantValue(torch.round(x / self.scale), self.scale, 8)
        return q.tensor + 1, q


class Counted:
    """A plain class whose `__new__` sets an attribute on `object.__new__`'s instance, and whose
    `__init__` runs after it with the same arguments."""

    def __new__(cls, scale):
        made = super().__new__(cls)
        made.doubled = scale * 2
        return made

    def __init__(self, scale):
        self.offset = scale


class Unwrapped:
    """`__new__` returns something that is no instance: `__init__` is not called."""

    def __new__(cls, x):
        return x * 3

    def __init__(self, x):
        raise AssertionError("__init__ runs only on an instance of the class")


def made_with_new(x):
    counted = Counted(0.5)
    return x * counted.doubled + counted.offset + Unwrapped(x), counted


def test_a_named_tuple_with_its_own_new_is_one_graph_rebuilt_on_a_hit():
    jitted = check_program(QuantIdentity, [((torch.randn(2, 3),), {}) for _ in range(3)])
    assert_one_graph(jitted, hits=2)
    _, q = jitted(torch.randn(2, 3))
    assert type(q) is QuantValue and q.bit_width.dtype == torch.float32 and float(q.scale) == 0.25


def test_objects_made_by_a_python_new_are_the_call_s_own_and_rebuilt():
    jitted = jit(made_with_new, backend="eager")
    made = []
    for _ in range(3):
        x = torch.randn(3)
        (out, counted), (expected, eager_counted) = jitted(x), made_with_new(x)
        assert torch.equal(out, expected)
        assert type(counted) is Counted and vars(counted) == vars(eager_counted) == {
            "doubled": 1.0,
            "offset": 0.5,
        }
        made.append(counted)
    assert len({id(c) for c in made}) == 3  # a new object on every call, as eagerly
    assert_one_graph(jitted, hits=2)


def test_a_new_replaced_on_the_class_between_calls_is_seen(monkeypatch):
    jitted = jit(made_with_new, backend="eager")
    x = torch.ones(3)
    assert torch.equal(jitted(x)[0], made_with_new(x)[0])

    def tripled(cls, scale):
        made = object.__new__(cls)
        made.doubled = scale * 3
        return made

    monkeypatch.setattr(Counted, "__new__", tripled)
    assert torch.equal(jitted(x)[0], made_with_new(x)[0])
    assert torch.equal(made_with_new(x)[0], torch.full((3,), 5.0))
