"""Replayed side effects see values as they were when the program made the effect.

On a cache hit the effects run after the graph, but `print(lst)` followed by `lst.append(...)` must
print the list as it was at the print, and `log.extend(items)` followed by a change of `items` must
extend the log by the old items only. Every test compares the jitted program with eager code, on
the first call (the capture) and on cache hits (the replay), printed text included."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn as nn
from jit_helpers import check_program


def inputs(*shapes, calls=4):
    out = []
    for n in range(calls):
        gen = torch.Generator().manual_seed(n)
        out.append(((*(torch.randn(*s, generator=gen) for s in shapes),), {}))
    return out


def assert_hits(jitted, graphs=1):
    report = jitted.explain()
    assert report.graph_count == graphs, str(report)
    assert sum(g.hits for g in report.graphs) >= 2, str(report)


def prints_list_then_appends(x):
    seen = [1, x.sum()]
    print("seen", seen)
    seen.append(x.mean())
    seen[0] = 5
    print("later", seen)
    return x * 2


def test_a_printed_list_changed_later_prints_as_it_was(capsys):
    def make():
        return prints_list_then_appends

    jitted = check_program(make, inputs((3,)))
    assert_hits(jitted)
    x = torch.tensor([1.0, 2.0, 3.0])
    capsys.readouterr()
    for _ in range(3):  # the first call captures, the others replay
        jitted(x)
    out = capsys.readouterr().out
    assert out == ("seen [1, tensor(6.)]\nlater [5, tensor(6.), tensor(2.)]\n") * 3


def prints_dict_set_and_nested(x):
    d = {"a": [x.sum()], "b": 1}
    s = {1, 2}
    print(d, s)
    d["a"].append(3)
    d["c"] = x.max()
    s.add(7)
    print(d, sorted(s))
    return x + 1


def test_printed_dicts_sets_and_nested_lists_changed_later_print_as_they_were():
    assert_hits(check_program(lambda: prints_dict_set_and_nested, inputs((4,))))


def prints_tensor_then_changes_it(x):
    y = x * 2
    print("y", y)
    y.add_(1)
    print("y again", y)
    z = y.relu()
    z.mul_(3)
    return y + z


def test_a_printed_tensor_changed_in_place_later_prints_as_it_was(capsys):
    jitted = check_program(lambda: prints_tensor_then_changes_it, inputs((3,)))
    assert_hits(jitted)
    capsys.readouterr()
    for _ in range(3):
        jitted(torch.ones(2))
    out = capsys.readouterr().out
    assert out == "y tensor([2., 2.])\ny again tensor([3., 3.])\n" * 3


def prints_input_then_changes_it(x):
    print("x", x)
    x.add_(1)
    return x * 2


def test_a_printed_argument_changed_in_place_later_prints_as_it_was():
    assert_hits(check_program(lambda: prints_input_then_changes_it, inputs((3,))))


def prints_a_view_then_changes_the_base(x):
    y = x * 1
    row = y[0]
    print("row", row)
    y.mul_(2)
    return y


def test_a_printed_view_whose_base_changes_later_prints_as_it_was():
    assert_hits(check_program(lambda: prints_a_view_then_changes_the_base, inputs((2, 3))))


class ExtendsLog(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.log: list = []
        self.table: dict = {}

    def forward(self, x):
        y = self.fc(x)
        items = [y.sum(), 1]
        self.log.extend(items)
        items.append(2)  # after the extend: not in the log
        items[0] = -1
        pairs = [("n", 1)]
        self.table.update(pairs)
        pairs.append(("m", 2))  # after the update: not in the table
        fresh = {"k": y.mean()}
        self.table.update(fresh)
        fresh["late"] = 0
        return y


def test_extend_and_update_copy_the_items_as_they_were():
    jitted = check_program(ExtendsLog, inputs((2, 3)), observe=lambda m: (m.log, m.table))
    assert_hits(jitted)


class ExtendsWithSharedInner(nn.Module):
    """The items copied keep their identity: a list inside them changed later is changed in the log."""

    def __init__(self):
        super().__init__()
        self.log: list = []

    def forward(self, x):
        inner = [x.sum()]
        self.log.extend([inner])
        inner.append(x.max())
        return x + 1


def test_items_copied_by_extend_keep_their_identity():
    jitted = check_program(ExtendsWithSharedInner, inputs((3,)), observe=lambda m: m.log)
    assert_hits(jitted)


class KeepsThenPrints(nn.Module):
    def __init__(self):
        super().__init__()
        self.history: list = []

    def forward(self, x):
        entry = [x.sum()]
        self.history.append(entry)
        print("history", len(self.history), self.history[-1])
        entry.append(x.max())  # kept by reference: the history sees it, the print did not
        return x * 3


def test_a_kept_list_changed_later_is_final_in_the_outside_object_and_old_in_the_print():
    check_program(KeepsThenPrints, inputs((3,)), observe=lambda m: m.history)


def prints_outside_list_holding_a_fresh_list(log, x):
    inner = [1]
    log.append(inner)
    print("log", log)
    inner.append(2)
    return x + len(log)


def test_an_outside_list_printed_before_a_fresh_item_changes_prints_as_it_was():
    calls = [(([], torch.ones(2) * n), {}) for n in range(4)]
    check_program(lambda: prints_outside_list_holding_a_fresh_list, calls)


def prints_then_changes_grad_tensor(x, w):
    y = x * w
    print("y", y)
    return y.sum()


def test_a_printed_tensor_requiring_grad_prints_its_grad_fn_as_eager():
    calls = [((torch.ones(2) * n, torch.ones(2, requires_grad=True)), {}) for n in range(4)]
    jitted = check_program(lambda: prints_then_changes_grad_tensor, calls)
    assert_hits(jitted)


def prints_then_changes_leaf_in_no_grad(x, w):
    print("w", w)
    with torch.no_grad():
        w.add_(1)
    return (x * w).sum()


def test_a_printed_tensor_requiring_grad_changed_later_is_never_wrong():
    calls = [((torch.ones(2) * n, torch.ones(2, requires_grad=True)), {}) for n in range(4)]
    check_program(lambda: prints_then_changes_leaf_in_no_grad, calls)


@torch.compiler.disable  # runs eagerly: a graph break
def uninterpretable(t):
    k = 2
    return t * k


def prints_around_a_break(x):
    acc = [x.sum()]
    print("before", acc)
    acc.append(x.max())
    y = uninterpretable(x)
    acc.append(y.sum())
    print("after", acc)
    acc.append(0)
    y.add_(1)
    print("y", y)
    y.mul_(2)
    return y, acc


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_effects_around_a_graph_break_print_values_as_they_were(backend):
    jitted = check_program(lambda: prints_around_a_break, inputs((3,)), backend=backend)
    report = jitted.explain()
    assert report.graph_breaks and report.graphs[0].hits >= 2, str(report)


def prints_then_branches_on_data(x):
    seen = [x.sum()]
    print("seen", seen)
    seen.append(1)
    if x.sum() > 0:  # a decision on tensor data after an effect
        return x * 2, seen
    return x - 1, seen


def test_effects_before_a_decision_on_tensor_data_print_values_as_they_were():
    calls = [((torch.ones(2) * s,), {}) for s in (1.0, 2.0, -1.0, 3.0, -2.0, 1.0)]
    check_program(lambda: prints_then_branches_on_data, calls)


@torch.compiler.disable  # runs eagerly: a graph break
def count_positive(t):
    return int((t > 0).sum())


def prints_and_resumes(x):
    acc = [x.sum()]
    print("a", acc)
    acc.append(1)
    k = count_positive(x)  # a break whose Python result is checked after it
    acc.append(k)
    print("b", acc)
    acc.append(2)
    y = x * k
    print("y", y)
    y.add_(1)
    return y, acc


def test_effects_of_a_call_resumed_after_a_failed_check_print_values_as_they_were():
    calls = [((torch.tensor([1.0, s, -1.0]),), {}) for s in (1.0, 2.0, -1.0, 3.0, -2.0, 1.0)]
    jitted = check_program(lambda: prints_and_resumes, calls)
    report = jitted.explain()
    assert report.graph_breaks and report.deopts >= 1, str(report)


@dataclass
class Record:
    items: list
    name: str


def _with_record(x):
    rec = Record(items=[x.sum()], name="r")
    print("rec", rec)
    rec.items.append(1)
    rec.name = "changed"
    return x + 1, rec


def test_a_printed_dataclass_changed_later_prints_as_it_was():
    assert_hits(check_program(lambda: _with_record, inputs((3,))))


class SliceWriteAndKeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.log: list = [0, 0]
        self.last = None

    def forward(self, x):
        items = [x.sum(), 1]
        self.log[0:1] = items  # copies the items now
        items.append(2)
        kept = [x.max()]
        self.last = kept  # keeps the list itself: later changes show in self.last
        y = uninterpretable(x)  # a graph break between the writes and the changes
        kept.append(y.sum())
        items.append(3)
        print("kept", kept, "items", items)
        return y


def test_a_slice_assignment_copies_the_items_and_a_kept_list_stays_shared_across_a_break():
    jitted = check_program(SliceWriteAndKeep, inputs((3,)), observe=lambda m: (m.log, m.last))
    report = jitted.explain()
    assert report.graph_breaks and report.graphs[0].hits >= 2, str(report)


class PrintsOutsideHoldingFreshObjects(nn.Module):
    def __init__(self):
        super().__init__()
        self.log: list = []
        self.table: dict = {}

    def forward(self, x):
        rec = Record(items=[1], name="a")
        self.log.append(rec)
        inner = [x.sum()]
        self.table["k"] = inner
        print("log", self.log, self.table)
        rec.name = "b"  # what the print showed must not change
        inner.append(1)
        return x + 1


def test_objects_put_in_a_printed_outside_container_and_changed_later_are_never_wrong():
    jitted = check_program(PrintsOutsideHoldingFreshObjects, inputs((3,)), observe=lambda m: (m.log, m.table))
    assert jitted.explain().fallbacks, str(jitted.explain())


def prints_tensors_changed_in_place_later(x):
    print("x", x)
    y = x * 2
    row = y[0]
    print("y", y, "row", row)
    x.add_(1)
    y.mul_(3)
    return x + y


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_compiled_graphs_print_tensors_as_they_were(backend):
    jitted = check_program(lambda: prints_tensors_changed_in_place_later, inputs((2, 3)), backend=backend)
    assert_hits(jitted)


def prints_a_growing_list_in_a_loop(x):
    acc = []
    for i in range(x.shape[0]):
        acc.append(x[i].sum())
        print(i, acc)
    return torch.stack(acc)


def test_a_list_printed_in_every_iteration_of_a_loop_prints_each_state():
    assert_hits(check_program(lambda: prints_a_growing_list_in_a_loop, inputs((3, 2))))
