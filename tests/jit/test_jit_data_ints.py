"""Data-dependent ints (`.item()` of integer tensors, `int(t)`, sizes of `nonzero` results) with the
eager backend: kept in the graph while only tensor operations read them, re-checked once Python code
does. Every program runs eagerly and through `jitlab.jit` on data that changes the int call after call."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
from jit_helpers import same

from jitlab.jit import jit
from jitlab.jit.graph.data_values import DataInt


def _inputs(shape: tuple[int, ...], calls: int = 6) -> list[torch.Tensor]:
    return [torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) for seed in range(calls)]


def _check(fn, inputs, backend: str = "eager"):
    jitted = jit(fn, backend=backend)
    for x in inputs:
        expected, got = fn(x), jitted(x)
        assert same(expected, got), (expected, got)
    return jitted.explain()


def _one_graph(report) -> None:
    assert report.graph_count == 1 and report.breaks == () and report.fallbacks == ()


def test_argmax_int_indexes_inside_the_graph():
    def f(x):
        best = int(x.sum(1).argmax())
        return x[best] * 2

    inputs = _inputs((4, 6))
    assert len({int(x.sum(1).argmax()) for x in inputs}) > 1  # the data really changes the int
    report = _check(f, inputs)
    _one_graph(report)
    assert report.graphs[0].hits == len(inputs) - 1


def test_topk_k_from_item_changes_every_call():
    def f(x):
        k = int((x > 0).sum().item()) + 1
        return torch.topk(x, k).values.sum(), torch.topk(x, k=k).indices

    inputs = _inputs((10,))
    assert len({int((x > 0).sum()) for x in inputs}) > 1
    _one_graph(_check(f, inputs))


def test_nonzero_count_shape_math_and_len():
    def f(x):
        positive = torch.nonzero(x > 0)
        n = positive.shape[0]
        return x * n + len(positive) - positive.size(0) // 2, positive.numel()

    _one_graph(_check(f, _inputs((8,))))


def test_sizes_arange_narrow_view_from_data():
    def f(x):
        k = int((x > 0).sum()) // 2 * 2  # even, possibly 0
        head = x.narrow(0, 0, k)
        pairs = head.view(k // 2, 2)
        return pairs.sum(1), torch.arange(k) * 1.5, x[:k].shape[0] * x[-1]

    _one_graph(_check(f, _inputs((9,))))


def test_shape_of_a_tensor_sliced_by_a_data_int_stays_correct():
    def f(x):
        k = int((x > 0).sum().item())
        y = x[:k]
        m = y.shape[0]
        return x * m, y

    _one_graph(_check(f, _inputs((7,))))


def test_python_branch_and_loop_on_a_data_int_are_rechecked():
    def f(x):
        k = int((x > 0).sum().item())
        total = x.new_zeros(())
        for i in range(k):  # Python reads k: specialise and re-check
            total = total + x[i]
        return total * 2 if k > 3 else total

    report = _check(f, _inputs((6,), calls=8))
    assert report.breaks and all("item" in b for b in report.breaks)


def test_data_int_read_by_library_code_is_rechecked():
    def f(x):
        k = int((x > 0).sum())
        return x * math.factorial(k), str(k)

    report = _check(f, _inputs((5,)))
    assert report.breaks


def test_small_int_literals_are_not_confused_with_data_ints():
    def f(x):
        k = int(x.argmax())  # often 1 or 2, the same objects as the literals below
        return x[k] + 1, x[1] * 2, x[2] - k

    inputs = [torch.tensor(v) for v in ([0.0, 5.0, 1.0], [0.0, 1.0, 5.0], [9.0, 1.0, 2.0], [0.0, 5.0, 1.0])]
    _one_graph(_check(f, inputs))


def test_returned_and_stored_data_ints_are_plain_ints_with_the_new_value():
    class Keep(nn.Module):
        def forward(self, x):
            k = int((x > 0).sum().item())
            self.last = k
            return x[:k], k, k + 1

    model = Keep()
    jitted = jit(model, backend="eager")
    for x in _inputs((6,)):
        expected = Keep()(x)
        got = jitted(x)
        assert same(expected, got)
        assert type(got[1]) is int and type(got[2]) is int
        assert model.last == expected[1]
    _one_graph(jitted.explain())


def test_data_int_as_dict_key_is_rechecked():
    def f(x):
        k = int((x > 0).sum())
        table = {k: 1.0, 3: 2.0}
        return x * table[3]

    report = _check(f, _inputs((5,)))
    assert report.breaks  # the value became a dict key: Python read it, so the entry re-checks it


def test_compiling_backend_specialises_data_ints():
    def f(x):
        k = int((x > 0).sum().item()) + 1
        return torch.topk(x, k).values.sum()

    report = _check(f, _inputs((10,), calls=4), backend="aot_eager")
    assert report.breaks


def test_data_int_type_looks_like_int_to_the_program():
    def f(x):
        k = int((x > 0).sum())
        return x * 2 if type(k) is int and isinstance(k, int) else x

    _check(f, _inputs((4,), calls=3))
    assert issubclass(DataInt, int)


def test_tolist_values_summed_in_python_stay_in_the_graph():
    def f(x):
        total = 0.0
        for value in x.tolist():
            total += value * value
        counts = (x > 0).int().tolist()
        return x * total, x[: sum(counts)], len(counts)

    _one_graph(_check(f, _inputs((5,))))


def test_nested_tolist_handed_back_to_torch():
    def f(x):
        rows = x.tolist()
        return torch.tensor(rows) * rows[0][1], len(rows)

    _one_graph(_check(f, _inputs((2, 3))))


def test_tolist_value_read_by_python_is_rechecked():
    def f(x):
        return [v * 2 for v in x.tolist() if v > 0]

    report = _check(f, _inputs((4,)))
    assert report.breaks


def test_data_ints_written_outside_are_plain_ints_after_the_capture_call():
    log: list = []
    state: dict = {}

    class Keep(nn.Module):
        def forward(self, x):
            k = int((x > 0).sum().item())
            self.last = k
            log.append(k)
            state["k"] = [k, k * 2]
            return [x[:k], k]

    model = Keep()
    jitted = jit(model, backend="eager")
    for x in _inputs((6,), calls=4):
        n = int((x > 0).sum())
        out = jitted(x)
        assert type(out[1]) is int and out[1] == n
        assert type(model.last) is int and model.last == n
        assert type(log[-1]) is int and log[-1] == n
        assert [type(v) for v in state["k"]] == [int, int] and state["k"] == [n, 2 * n]
    assert len(log) == 4
    _one_graph(jitted.explain())


def test_tensor_item_write_with_a_data_int_index():
    def f(x):
        y = x.clone()
        y[int(x.argmin())] = 0.0
        return y

    _one_graph(_check(f, _inputs((5,))))


def test_shape_of_nonzero_returned_and_unpacked():
    def f(x):
        idx = torch.nonzero(x > 0)
        rows, cols = idx.shape
        return idx.shape, rows * cols, x.new_zeros(idx.shape[0], 2)

    jitted = jit(f, backend="eager")
    for x in _inputs((3, 4)):
        expected, got = f(x), jitted(x)
        assert same(expected, got) and type(got[0]) is torch.Size
        assert all(type(v) is int for v in got[0]) and type(got[1]) is int
    _one_graph(jitted.explain())


def test_float_scaled_tensor_shape_read_does_not_recheck_the_float():
    def f(x):
        y = x / x.abs().max().item()
        return y * 2 if y.shape[0] > 2 else y

    _one_graph(_check(f, _inputs((4,))))


def test_arange_with_a_data_float_end_has_a_data_dependent_shape():
    def f(x):
        r = torch.arange(x.abs().sum().item())
        return r * 2 if r.shape[0] > 3 else r

    report = _check(f, [torch.tensor([v, 0.5]) for v in (0.2, 4.0, 1.0, 6.0)])
    assert report.breaks


def test_int_of_a_data_float_sizes_a_slice():
    def f(x):
        k = math.ceil(x.abs().max().item())  # a float from the data turned into an int
        j = int(x.abs().sum().item()) % 3
        return x[:k], x.roll(j), float(k) * x

    inputs = [torch.tensor(v) for v in ([0.5, 1.5, -2.5, 0.1], [3.2, 0.1, 0.2, 0.3], [0.9, 0.8, 0.1, 0.2])]
    _one_graph(_check(f, inputs))


def test_data_ints_appended_to_a_list_stay_in_the_graph():
    def f(x):
        k = int(x.argmax())
        sizes = []
        sizes.append(k)
        sizes.extend([k, k + 1])
        return x * sizes[0], sizes, tuple(sizes)

    _one_graph(_check(f, _inputs((6,))))


def test_list_method_reading_data_ints_is_rechecked():
    def f(x):
        values = [int(x.argmax()), 2]
        values.sort()
        return x * values[0]

    report = _check(f, _inputs((6,), calls=8))
    assert report.breaks


def test_data_int_handed_to_a_torch_call_that_does_not_record_it_is_rechecked():
    def f(x):
        k = int(x.argmax()) % 2
        return x.view(2, 3) * x.view(2, 3).size(k)  # size(k) is read natively: specialise on k

    report = _check(f, _inputs((6,), calls=8))
    assert report.breaks
