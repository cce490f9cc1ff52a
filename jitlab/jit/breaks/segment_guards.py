"""The guards of a capture split by graph breaks: `SegmentGuardBuilder` keeps one segment's guards
(segment 0's are checked before anything runs, a later segment's right after the call break that
opens it), `LocalSource` names a value of the entry's own function (a break's result), and
`global_guards` checks that no global module hook appeared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from jitlab.jit.graph.autocast_nodes import autocast_state, autocast_summary
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Namer, Source

GLOBAL_HOOK_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks", "_global_module_registration_hooks",
                      "_global_parameter_registration_hooks", "_global_buffer_registration_hooks")  # fmt: skip


@dataclass(frozen=True)
class LocalSource(Source):
    """A local variable of the cache entry's function: a break's result (`b0`) or an object made
    during the call and handed to a break (`r3`), read again by guards after the break."""

    name: str

    def expr(self, name: Namer) -> str:
        return self.name


class SegmentGuardBuilder(GuardBuilder):
    """The guards of one segment: those of segment 0 are checked before anything runs; those of a
    later segment right after the call break that opens it. Constants are shared by all segments;
    variables are the segment's own (`g1v0`...), since the break may have changed what a source
    yields. A tensor the program knew before the break and reads again is checked by identity."""

    def __init__(self, segment: int = 0, previous: SegmentGuardBuilder | None = None) -> None:
        super().__init__()
        self.segment = segment
        self.previous = previous
        # the expression of a tensor known before (or None), once a break has opened this segment
        self.known: Callable[[torch.Tensor], str | None] | None = None
        if previous is not None:
            self.constants = previous.constants
            self._const_ids = previous._const_ids

    def var(self, source: Source) -> str:
        if self.segment == 0 or self.has_var(source):
            return super().var(source)
        expr = source.expr(self.var)
        name = f"g{self.segment}v{len(self._var_of)}"
        self._var_of[source] = name
        self._lines.append(f"{name} = {expr}")
        return name

    dynamic_vars: dict[str, frozenset[int]] = {}  # noqa: RUF012 - set per instance by shapes.plan_shapes

    def render(self) -> list[str]:
        """As GuardBuilder.render, but sizes made symbolic are not checked by the tensor guards;
        such inputs must be contiguous (their strides follow from the sizes)."""
        if not self.dynamic_vars:
            return super().render()
        from torch._C._dynamo.guards import TensorGuards

        from jitlab.jit.graph.fake_run import tensor_guard_args
        from jitlab.jit.guards.builder import _template

        lines = list(self._lines)
        names = [self.var(s) for s in self.tensor_sources]
        dims = [self.dynamic_vars.get(name, frozenset()) for name in names]
        sizes, strides = tensor_guard_args(self.tensor_meta, dims)
        checker = TensorGuards(
            *(_template(*meta) for meta in self.tensor_meta),
            dynamic_dims_sizes=sizes,
            dynamic_dims_strides=strides,
        )
        lines.append(f"if not {self.const(checker.check, 'TG')}({', '.join(names)}): return MISS")
        lines += [f"if not {name}.is_contiguous(): return MISS" for name, d in zip(names, dims) if d]
        return lines

    def tensor_match(self, source: Source, value: torch.Tensor) -> None:
        old = self.known(value) if self.known is not None else None
        if old is not None:
            self.check(source, "{v} is " + old, "{v} is the tensor read before the break")
            return
        super().tensor_match(source, value)

    def chain(self) -> list[SegmentGuardBuilder]:
        out, builder = [], self
        while builder is not None:
            out.append(builder)
            builder = builder.previous
        return out


def global_guards(builder: GuardBuilder) -> None:
    """Grad mode, autocast and global module hooks, as they are now."""
    grad = builder.const(torch.is_grad_enabled, "GRAD")
    builder.global_state(f"{grad}() is {torch.is_grad_enabled()}", f"grad mode is {torch.is_grad_enabled()}")
    autocast = builder.const(torch._C._is_any_autocast_enabled, "AUTOCAST")
    if torch._C._is_any_autocast_enabled():  # called inside `with torch.autocast(...)`: its whole state
        state = autocast_state()
        builder.global_state(
            f"{builder.const(autocast_state, 'AUTOCAST_STATE')}() == {builder.const(state, 'AC')}",
            f"autocast is on as now ({autocast_summary(state)})",
        )
    else:
        builder.global_state(f"not {autocast}()", "autocast is off")
    import torch.nn.modules.module as module_mod

    names = [builder.const(getattr(module_mod, n), "H") for n in GLOBAL_HOOK_DICTS if hasattr(module_mod, n)]
    builder.global_state("not (" + " or ".join(names) + ")", "no global module hooks")
