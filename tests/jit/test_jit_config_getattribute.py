"""A configuration object whose class defines `__getattribute__` in Python, as transformers'
`PreTrainedConfig` does (its `attribute_map`): reading it inside a jitted model is captured and
guarded, and `isinstance` checks that jitlab.jit makes on it (which read `__class__` through that
`__getattribute__`) are not mistaken for the program's code running natively."""

from __future__ import annotations

import torch
from torch import nn

import jitlab


class MappedConfig:
    """transformers' pattern: some names are aliases of others."""

    attribute_map = {"hidden": "width"}

    def __init__(self) -> None:
        self.width = 4
        self.scale = 2.0

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


class Layered(MappedConfig):
    """A second Python `__getattribute__` below the first (transformers' heterogeneity mixin)."""

    def __getattribute__(self, key):
        if key == "shift":
            return super().__getattribute__("width") * 0.5
        return super().__getattribute__(key)


class Configured(nn.Module):
    def __init__(self, config: MappedConfig) -> None:
        super().__init__()
        self.config = config
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        out = self.lin(x) * self.config.scale + self.config.hidden
        if isinstance(self.config, Layered):
            out = out - self.config.shift
        return out


def _calls(model: nn.Module, fast, rows: list[int]) -> None:
    for seed, n in enumerate(rows):
        x = torch.randn(n, 4, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(fast(x), model(x))


def test_a_config_with_its_own_getattribute_is_captured_once_and_hit():
    for config in (MappedConfig(), Layered()):
        model = Configured(config)
        fast = jitlab.jit(model, backend="eager")
        _calls(model, fast, [3, 3, 3, 3])
        report = fast.explain()
        assert report.fallbacks == () and report.disabled is None, str(report)
        assert report.captures == 1 and sum(g.hits for g in report.graphs) == 3


def test_a_changed_config_value_is_seen_by_the_next_call():
    model = Configured(Layered())
    fast = jitlab.jit(model, backend="eager")
    _calls(model, fast, [3, 3])
    model.config.scale = 5.0
    model.config.width = 6  # `hidden` and `shift` follow it through the class's __getattribute__
    _calls(model, fast, [3, 3])
    report = fast.explain()
    assert report.disabled is None and report.captures == 2, str(report)
