"""torch.Generator objects the caller passes (`pipe(prompt, generator=torch.Generator().manual_seed(0))`).
The graph draws from the call's own generator, put in a slot by the entry's guards, so a new
generator on every call is served by one entry; its numbers, and where it is left, are eager code's.
What reads the generator itself (`g.initial_seed()`, native code handed it, a draw after a graph
break) keeps it guarded by identity, as before."""

from __future__ import annotations

import threading

import pytest
import torch

from jitlab.jit import jit


def _one_draw(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return x * 2 + torch.randn(x.shape, generator=g)


def _mixed_draws(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    noise = torch.empty(x.shape).normal_(generator=g)  # in place, on a tensor made in the call
    order = torch.randperm(x.shape[0], generator=g)
    picked = torch.multinomial(x.softmax(0), 2, generator=g)
    unseeded = torch.rand(x.shape)  # torch's default generator, between the others' draws
    return (x + noise)[order] + picked.sum() + unseeded + torch.rand(x.shape, generator=g)


def _two_generators(x: torch.Tensor, a: torch.Generator, b: torch.Generator) -> torch.Tensor:
    return x + torch.rand(x.shape, generator=a) - torch.rand(x.shape, generator=b) * (2 if a is b else 1)


def _seed_read(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return x * (g.initial_seed() % 3) + torch.randn(x.shape, generator=g)


@torch.compiler.disable  # runs eagerly: a graph break
def _break(y: torch.Tensor) -> torch.Tensor:
    return y + 1


def _draw_after_break(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    y = _break(x * 2)
    return y + torch.randn(x.shape, generator=g)


def _series(fn, backend: str, generators, extra=()):
    """Calls through jit and eagerly, each with fresh generators seeded alike; the results, the
    numbers the generators draw next (where the call left them), and the report."""
    jitted = jit(fn, backend=backend)
    got, expected = [], []
    for i, seeds in enumerate(generators):
        x = torch.linspace(-1, 1, 6) + i
        for target, out in ((jitted, got), (fn, expected)):
            gens = [torch.Generator().manual_seed(s) for s in seeds]
            torch.manual_seed(100 + i)
            result = target(x, *gens, *extra)
            out.append((result, [torch.rand(2, generator=g) for g in gens]))
    return got, expected, jitted.explain()


def _assert_equal(got, expected) -> None:
    for i, ((a, after_a), (b, after_b)) in enumerate(zip(got, expected, strict=True)):
        assert torch.equal(a, b), f"call {i}: {a} vs {b}"
        for x, y in zip(after_a, after_b, strict=True):
            assert torch.equal(x, y), f"call {i}: the generator was left elsewhere than eager code leaves it"


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [_one_draw, _mixed_draws], ids=["one", "mixed"])
def test_a_new_generator_per_call_is_served_by_one_entry(fn, backend):
    got, expected, report = _series(fn, backend, [(s,) for s in (0, 1, 2, 3, 3, 7)])
    _assert_equal(got, expected)
    assert len({tuple(r.flatten().tolist()) for r, _ in expected}) == 6  # each call draws its own numbers
    assert report.captures == 1 and report.disabled is None, report.miss_reasons
    assert report.graphs[0].hits == 5
    assert not any("<Generator at" in g for g in report.graphs[0].guards)


def test_inductor_draws_from_the_call_generator():
    got, expected, report = _series(_one_draw, "inductor", [(s,) for s in (4, 5, 6)])
    _assert_equal(got, expected)
    assert report.captures == 1 and report.graphs[0].hits == 2, report.miss_reasons


def test_two_generators_one_object_on_some_calls():
    """The entry keeps distinct generators distinct (a guard), so `a is b` and the order of draws
    from one object under two names are eager code's."""
    got, expected, report = _series(_two_generators, "eager", [(1, 2), (3, 4), (5, 6)])
    _assert_equal(got, expected)
    assert report.captures == 1 and report.graphs[0].hits == 2
    jitted = jit(_two_generators, backend="eager")
    for i in range(4):
        shared = torch.Generator().manual_seed(i)
        x = torch.ones(3) * i
        a, b = (shared, shared) if i % 2 else (shared, torch.Generator().manual_seed(9))
        eager_gens = [torch.Generator().manual_seed(i)]
        eager_gens.append(eager_gens[0] if i % 2 else torch.Generator().manual_seed(9))
        assert torch.equal(jitted(x, a, b), _two_generators(x, *eager_gens)), i
        assert torch.equal(shared.get_state(), eager_gens[0].get_state()), i


@pytest.mark.parametrize(
    ("fn", "kept"),
    [(_seed_read, "initial_seed"), (_draw_after_break, "after a break")],
    ids=["seed", "break"],
)
def test_what_reads_the_generator_itself_keeps_it_by_identity(fn, kept):
    got, expected, report = _series(fn, "eager", [(s,) for s in (0, 1, 2)])
    _assert_equal(got, expected)
    assert report.captures == 3, kept  # each call's new generator misses its identity guard
    same = torch.Generator().manual_seed(0)
    jitted = jit(fn, backend="eager")
    other = torch.Generator().manual_seed(0)
    for i in range(3):
        assert torch.equal(jitted(torch.ones(6) * i, same), fn(torch.ones(6) * i, other)), i
    assert jitted.explain().captures == 1 and jitted.explain().graphs[0].hits == 2


@pytest.mark.parametrize("drawn_before", [True, False], ids=["drawn-before-too", "read-after"])
def test_a_reentrant_call_between_the_guard_and_the_draw(drawn_before):
    """A call break that calls the jitted function again with another generator: the draws after
    the break must still be from the outer call's generator. A generator guarded before a break and
    drawn from after it is kept by identity: code between the two may change what its source names."""

    @torch.compiler.disable
    def inner(y, depth):
        if depth:
            return y + fast(y, torch.Generator().manual_seed(50 + depth), depth - 1)
        return y

    def body(x, g, depth):
        first = torch.rand(x.shape, generator=g) if drawn_before else 0.0
        y = inner(x * 2, depth)
        return y + first + torch.rand(x.shape, generator=g)

    def plain(x, g, depth):  # body with the inner calls eager too
        first = torch.rand(x.shape, generator=g) if drawn_before else 0.0
        y = x * 2
        if depth:
            y = y + plain(y, torch.Generator().manual_seed(50 + depth), depth - 1)
        return y + first + torch.rand(x.shape, generator=g)

    fast = jit(body, backend="eager")
    for i in range(4):
        got = fast(torch.ones(3) * i, torch.Generator().manual_seed(i), 1)
        assert torch.equal(got, plain(torch.ones(3) * i, torch.Generator().manual_seed(i), 1)), i
    report = fast.explain()
    assert report.disabled is None and report.graph_breaks, report


def test_threads_draw_from_their_own_generators():
    jitted = jit(_one_draw, backend="eager")
    jitted(torch.ones(4), torch.Generator().manual_seed(0))  # captured before the threads start
    results: dict[tuple[int, int], torch.Tensor] = {}

    def work(t: int) -> None:
        for i in range(50):
            results[t, i] = jitted(torch.ones(4) * i, torch.Generator().manual_seed(t * 1000 + i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for (t, i), got in results.items():
        assert torch.equal(got, _one_draw(torch.ones(4) * i, torch.Generator().manual_seed(t * 1000 + i))), (
            t,
            i,
        )
    assert jitted.explain().captures == 1


#: (batch, length) of ten calls: the sizes a draw takes vary
_SHAPES = [(2, 5), (3, 5), (4, 7), (2, 9), (5, 3), (3, 8), (6, 6), (2, 2), (3, 11), (4, 4)]

_KEPT = torch.Generator().manual_seed(5)  # a generator the program keeps outside: guarded by identity


def _draws_of_unpacked_sizes(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    b, t = x.shape
    noise = torch.randn((b, t), generator=g)
    return x.view(b, t, 1).squeeze(-1) * 2 + noise + torch.empty(b).normal_(generator=g).unsqueeze(1)


def _draws_of_a_kept_generator(x: torch.Tensor, _g: torch.Generator) -> torch.Tensor:
    b, t = x.shape
    return torch.randn(b * 2, t, generator=_KEPT)[:b] + x


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize(
    "fn", [_draws_of_unpacked_sizes, _draws_of_a_kept_generator], ids=["call-generator", "kept-generator"]
)
def test_draws_keep_symbolic_sizes(fn, backend):
    """A draw's size computed from the input's unpacked shape stays symbolic: torch's kernel of
    `randn(size, generator=g)` takes no symbolic size, which pinned every size of such a graph (8
    captures in 10 calls, then eager for good), and a compiled part got the sizes with no example
    value ("backend failed"). Now at most 2 captures (3 for compilers, which specialise a size of 1
    as TorchDynamo does; no shape here has 1), no backend failure, numbers equal to eager's."""
    jitted = jit(fn, backend=backend)
    for i, (b, t) in enumerate(_SHAPES):
        x = torch.randn(b, t)
        state = _KEPT.get_state()
        got = jitted(x, torch.Generator().manual_seed(i))
        left = _KEPT.get_state()
        _KEPT.set_state(state)
        expected = fn(x, torch.Generator().manual_seed(i))
        assert torch.equal(left, _KEPT.get_state()), f"call {i}: the kept generator was left elsewhere"
        if backend == "inductor":  # inductor's rounding of `x * 2 + noise`
            torch.testing.assert_close(got, expected)
        else:
            assert torch.equal(got, expected), f"call {i}"
    report = jitted.explain()
    assert report.captures <= 2 and report.disabled is None, report.miss_reasons
    assert sum(g.hits for g in report.graphs) == len(_SHAPES) - report.captures
    assert not [g.backend_note for g in report.graphs if g.backend_note], report.graphs[-1].backend_note
