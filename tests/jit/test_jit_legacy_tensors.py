"""Legacy tensor constructors (`torch.FloatTensor(x.size())`, `torch.Tensor(2, 3)`,
`torch.LongTensor([1, 2])`) and `Variable(t)`, as crawled models (ParityBench) use them: recorded as
the factory calls they stand for, so the call is one graph, equal to eager call after call."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program
from torch.autograd import Variable

from jitlab.jit import jit


class GANLoss(nn.Module):
    """Target labels built with the tensor type given to the constructor, kept between calls."""

    def __init__(self, tensor=torch.FloatTensor):
        super().__init__()
        self.Tensor = tensor
        self.loss = nn.MSELoss()

    def forward(self, x):
        target = Variable(self.Tensor(x.size()).fill_(1.0), requires_grad=False)
        return self.loss(x, target)


def sizes_and_data(x):
    zeros = torch.Tensor(2, x.shape[1]).zero_()
    index = torch.LongTensor([0, 1])
    weights = torch.Tensor((0.5, 2.0))
    return (x[index] + zeros) * weights[:, None], index, torch.DoubleTensor().shape


def test_legacy_constructors_are_one_graph():
    inputs = [((torch.randn(4, 3),), {}) for _ in range(3)]
    jitted = check_program(lambda: sizes_and_data, inputs)
    assert_one_graph(jitted)
    _, index, empty = jitted(torch.randn(4, 3))
    assert index.dtype == torch.int64 and index.tolist() == [0, 1] and empty == (0,)


def test_gan_loss_targets_are_one_graph():
    jitted = check_program(GANLoss, [((torch.rand(4, 4),), {}) for _ in range(3)])
    assert_one_graph(jitted)


def test_variable_is_detach():
    def f(w):
        y = w * 2
        return (Variable(y) * w).sum()

    jitted = jit(f)
    for _ in range(3):
        eager_w = torch.randn(3, requires_grad=True)
        jit_w = eager_w.detach().clone().requires_grad_(True)
        f(eager_w).backward()
        jitted(jit_w).backward()
        assert torch.allclose(jit_w.grad, 2 * eager_w.detach())  # no gradient through the Variable
        assert torch.allclose(eager_w.grad, jit_w.grad)
    assert_one_graph(jitted)


def test_other_forms_still_run_natively_and_equal():
    def f(x):
        same = torch.FloatTensor(x)  # a tensor argument: left native
        grad = Variable(x * 1, requires_grad=True)
        return same + grad

    check_program(lambda: f, [((torch.randn(3),), {}) for _ in range(3)])


def gauss_kernel(size: int, sigma: float, channels: int) -> torch.Tensor:
    """As Zooming-Slow-Mo's LapLoss: a kernel built with numpy, made a tensor by a legacy type."""
    grid = np.float32(np.mgrid[0:size, 0:size].T)
    kernel = np.sum(np.exp((grid - size // 2) ** 2 / (-2 * sigma**2)) ** 2, axis=2)
    kernel /= np.sum(kernel)
    kernel = np.tile(kernel, (channels, 1, 1))
    return Variable(torch.FloatTensor(kernel[:, None, :, :]), requires_grad=False)


def blurred(x):
    kernel = gauss_kernel(5, 2.0, x.shape[1])
    scaled = torch.DoubleTensor(np.arange(3.0)) * 2  # float64 array to float64: shared
    counts = torch.LongTensor(np.array([1.7, 2.2]))  # float64 array to int64: converted
    return torch.nn.functional.conv2d(x, kernel, padding=2, groups=x.shape[1]), scaled, counts


def test_legacy_types_of_numpy_arrays_are_one_graph():
    jitted = check_program(lambda: blurred, [((torch.randn(2, 3, 8, 8),), {}) for _ in range(3)])
    assert_one_graph(jitted)
    _, scaled, counts = jitted(torch.randn(1, 3, 8, 8))
    assert scaled.dtype == torch.float64 and counts.tolist() == [1, 2]


def gaussian_of_numpy_numbers(x, sigma):
    """As benchmark_VAE's MSSSIM: a list of `np.float64`s (and other NumPy numbers) given to a
    legacy type; it used to make a tensor of unknown origin, and the call ran eagerly."""
    gauss = torch.Tensor([np.exp(-((k - 2) ** 2) / float(2 * sigma**2)) for k in range(5)])
    mixed = torch.LongTensor([np.int64(3), np.float64(2.7), np.uint8(1), 4])
    return x * (gauss / gauss.sum()), mixed


def test_legacy_types_of_numpy_numbers_are_one_graph():
    inputs = [((torch.randn(2, 5), 1.5), {}) for _ in range(3)]
    jitted = check_program(lambda: gaussian_of_numpy_numbers, inputs)
    assert_one_graph(jitted)
    _, mixed = jitted(torch.randn(2, 5), 1.5)
    assert mixed.dtype == torch.int64 and mixed.tolist() == [3, 2, 1, 4]


def rejected_numbers(x):
    return x + torch.LongTensor([np.float32(2.7)])


def test_numpy_numbers_a_legacy_type_rejects_raise_as_eagerly():
    jitted = jit(rejected_numbers, backend="eager")
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        jitted(torch.ones(1))


def pick_styles(out, y):
    """As stargan-v2's StyleEncoder: row indices made with a legacy type of a range."""
    idx = torch.LongTensor(range(y.size(0)))
    return out[idx, y], torch.FloatTensor(range(2, 9, 3))


def test_legacy_types_of_ranges_are_one_graph():
    inputs = [((torch.randn(4, 3, 2), torch.randint(0, 3, (4,))), {}) for _ in range(3)]
    jitted = check_program(lambda: pick_styles, inputs)
    assert_one_graph(jitted)
    assert jitted(torch.randn(2, 3, 2), torch.tensor([0, 1]))[1].tolist() == [2.0, 5.0, 8.0]


def scaled_by_batch(x, batch_shape):
    """As nflows' PointwiseAffineTransform: `torch.Size(shape).numel()`."""
    return x * torch.Size(batch_shape).numel()


def test_a_size_made_in_the_call_is_the_calls_own():
    inputs = [((torch.randn(3), (2, 3)), {}), ((torch.randn(3), (2, 3)), {}), ((torch.randn(3), (4, 1)), {})]
    jitted = check_program(lambda: scaled_by_batch, inputs)
    assert jitted.explain().fallbacks == () and jitted.explain().captures == 2


def _noise_like(mu, logvar):
    """xrenaa/DisCo's reparametrize: `std.data.new(std.size()).normal_()`."""
    std = logvar.div(2).exp()
    eps = Variable(std.data.new(std.size()).normal_())
    return mu + std * eps


def _filled(x):
    return x.new(x.size()).fill_(1.0) + x.new(x.shape[0], 3).zero_().sum() + x.new((2.0, 3.0)).sum()


def test_new_of_a_size_is_uninitialised_memory_of_that_size():
    """The graph holds a `torch.Size` argument as a tuple, and `x.new((2, 3))` is the tensor
    `[2, 3]`: a cache hit of `x.new(x.size())` made a tensor of the wrong shape and raised where
    eager code does not (a crash older than this fix)."""
    jitted = check_program(
        lambda: _noise_like, [((torch.randn(4, 3), torch.randn(4, 3)), {}) for _ in range(3)]
    )
    assert_one_graph(jitted)
    jitted = check_program(lambda: _filled, [((torch.randn(2, 3),), {}) for _ in range(3)])
    assert_one_graph(jitted)
