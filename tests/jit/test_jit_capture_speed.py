"""What makes a capture of a large model cheap (benchmarks/capture_time.py measures it): sources keep
their hash and description, the guard builder finds a tensor input already guarded without scanning,
placeholder names look at a description's tail only. Each test checks the behaviour stays the same
and that the shortcut is taken (no wall-clock times)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn as nn

from jitlab.jit import jit
from jitlab.jit.graph.placeholder_names import placeholder_name
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import AttrSource, ConstSource, ItemSource, Source


@dataclass(frozen=True, eq=False)
class CountingSource(Source):
    """A root source that counts how often it is hashed, compared and rendered."""

    counts: dict
    key: int = 0

    def __hash__(self) -> int:
        self.counts["hash"] = self.counts.get("hash", 0) + 1
        return self.key

    def __eq__(self, other: object) -> bool:
        self.counts["eq"] = self.counts.get("eq", 0) + 1
        return type(other) is CountingSource and other.key == self.key

    def expr(self, name: object) -> str:
        self.counts["expr"] = self.counts.get("expr", 0) + 1
        return "root"


def test_source_hash_and_description_are_computed_once():
    counts: dict = {}
    root = CountingSource(counts)
    leaf = ItemSource(AttrSource(AttrSource(root, "layer1"), "_modules"), "0")
    assert (
        hash(leaf) == hash(leaf) == hash(ItemSource(AttrSource(AttrSource(root, "layer1"), "_modules"), "0"))
    )
    assert counts["hash"] == 2  # once per distinct chain, not once per hash() of the leaf
    assert leaf.describe() == leaf.describe() == "root.layer1._modules['0']"
    assert counts["expr"] == 1
    # the kept values are no fields: equality, repr and the generated code are as before
    other = ItemSource(AttrSource(AttrSource(root, "layer1"), "_modules"), "0")
    assert leaf == other and "_hash" not in repr(leaf) and "_described" not in repr(leaf)
    assert leaf.expr(lambda s: s.describe()) == "root.layer1._modules['0']"


def test_sliced_item_sources_hash_equal_sources_alike():
    base = ConstSource("SELF")
    assert hash(ItemSource(base, slice(1, None))) == hash(ItemSource(base, slice(1, None)))
    assert ItemSource(base, (1, slice(None, 2))) == ItemSource(base, (1, slice(None, 2)))
    assert {ItemSource(base, 1), ItemSource(base, True)} == {ItemSource(base, 1)}  # 1 == True, as dicts do


def test_tensor_input_already_guarded_is_found_without_comparing_sources():
    counts: dict = {}
    builder = GuardBuilder()
    tensors = [torch.zeros(2) for _ in range(50)]
    for i, t in enumerate(tensors):
        builder.tensor_match(CountingSource(counts, i), t)
    counts.clear()
    for i, t in enumerate(tensors):  # read again from equal sources (other objects): nothing new
        builder.tensor_match(CountingSource(counts, i), t)
    assert len(builder.tensor_sources) == len(builder.tensor_meta) == 50
    assert [g.kind for g in builder.guards].count("TENSOR_MATCH") == 50
    # one comparison per lookup; a scan of the list compared each source with the earlier ones (1275)
    assert counts["eq"] == 50


def _reference_name(label: str) -> str:
    """The placeholder name as it was computed before placeholder_name (the whole label)."""
    return "".join(c if c.isalnum() else "_" for c in label).strip("_")[-40:].strip("_") or "input"


def test_placeholder_name_equals_the_whole_label_rule():
    rng = random.Random(0)
    alphabet = "ab1_.[]'é ß"
    labels = ["", "_", "x", "self.a" * 30, "_" * 70 + "w", "w" + "_" * 70, "a" + "." * 60 + "bcd" * 10]
    labels += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 150))) for _ in range(2000)]
    for label in labels:
        assert placeholder_name(label) == _reference_name(label), label


class Deep(nn.Module):
    """A module tree whose guards describe long attribute chains (as a large model's do)."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.inner = Deep(depth - 1) if depth > 0 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.lin(x)
        return self.inner(x) if self.inner is not None else x


def test_deep_module_tree_captures_and_serves_unchanged():
    model = Deep(12)
    fast = jit(model, backend="eager")
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(fast(x), model(x))
        assert torch.equal(fast(x), model(x))
        model.inner.inner.lin.weight.mul_(2)  # in place: same tensor, still served, new values
        assert torch.equal(fast(x), model(x))
    report = fast.explain()
    assert report.captures == 1 and report.graphs[0].hits == 2 and not report.fallbacks


def test_equal_key_lists_share_one_constant_and_one_guard():
    builder = GuardBuilder()
    source = AttrSource(ConstSource("SELF"), "_modules")
    builder.expr(source, "list({v})", ["conv", "bn"])
    builder.expr(source, "list({v})", ["conv", "bn"])  # a new list, equal: read again from an outer loop
    builder.expr(source, "list({v})", ["conv"])
    builder.expr(source, "list({v})", [1])
    builder.expr(source, "list({v})", [True])  # equal to [1], but not the same types: its own constant
    assert len(builder.guards) == 4
    assert [v for v in builder.constants.values() if isinstance(v, list)] == [
        ["conv", "bn"],
        ["conv"],
        [1],
        [True],
    ]


class Stage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), nn.Sequential(nn.Linear(3, 3)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:  # each level iterates its own Sequential: the tables are read again
            for layer in block:
                x = layer(x)
        return x


def test_nested_sequentials_give_no_duplicate_guards_and_still_see_changes():
    model = nn.Sequential(Stage(), Stage())
    fast = jit(model, backend="eager")
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(fast(x), model(x))
        guards = fast.explain().graphs[0].guards
        assert len(guards) == len(set(guards))
        assert torch.equal(fast(x), model(x))
        model[1].blocks[0].append(
            nn.Tanh()
        )  # a table read at two levels changes: a miss, then eager's result
        assert torch.equal(fast(x), model(x))
    report = fast.explain()
    assert report.captures == 2 and report.graphs[0].hits == 1


class WholeReadStage(Stage):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # vars() is native code handed each Sequential: it reads it as a whole, at every level
        for block in vars(self.blocks)["_modules"].values():
            for layer in vars(block)["_modules"].values():
                x = layer(x)
        return x


def test_module_tables_read_again_reuse_their_source_objects(monkeypatch):
    from jitlab.jit.tracing import whole_reads

    made: list[Source] = []

    def counting(cls: type) -> object:
        def build(*args: object) -> Source:
            made.append(cls(*args))
            return made[-1]

        return build

    monkeypatch.setattr(whole_reads, "AttrSource", counting(AttrSource))
    monkeypatch.setattr(whole_reads, "ItemSource", counting(ItemSource))
    model = nn.Sequential(WholeReadStage(), WholeReadStage())
    fast = jit(model, backend="eager")
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(fast(x), model(x))
    # (the counting wrapper is user code run by the tracer, so this capture is not cached; the
    # sources were made while it ran)
    assert made and len(made) == len(set(made))  # each table and item source built once per capture
