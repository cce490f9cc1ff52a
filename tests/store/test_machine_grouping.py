"""Cells grouped by machine in one place (`jitlab.store.identity`): a machine is named only where
several measured the cells, and a group keeps the cells' order."""

from types import SimpleNamespace

from jitlab.store.identity import by_machine, machine_naming


def cell(name: str, n: int) -> SimpleNamespace:
    return SimpleNamespace(machine={"name": name}, n=n)


def test_one_machine_is_one_group_named_nothing() -> None:
    cells = [cell("a", 1), cell("a", 2)]
    assert by_machine(cells) == {"": cells}
    assert [machine_naming(cells)(c) for c in cells] == ["", ""]
    assert by_machine([]) == {"": []}


def test_several_machines_are_named_in_first_seen_order() -> None:
    cells = [cell("b", 1), cell("a", 2), cell("b", 3)]
    assert by_machine(iter(cells)) == {"b": [cells[0], cells[2]], "a": [cells[1]]}
    assert [machine_naming(cells)(c) for c in cells] == ["b", "a", "b"]
