"""A logger's methods (`logger.warning`, transformers' `logger.warning_once`, an lru_cache'd method)
split the graph where they are called, as logging's functions do, instead of keeping the call out of
the cache; a dataclass the call made, live at such a break, is made again when a call resumes there
(Longformer: a model output is live at `logger.warning_once` when the input needs padding)."""

from __future__ import annotations

import dataclasses
import functools
import logging

import torch

from jitlab.jit import jit

log = logging.getLogger("jitlab.tests.logger_breaks")


class OnceLogger(logging.Logger):
    @functools.lru_cache(None)  # noqa: B019 - as transformers' logger.warning_once
    def warning_once(self, *args):
        self.warning(*args)


once = OnceLogger("jitlab.tests.once")


@dataclasses.dataclass
class Output:
    hidden: torch.Tensor
    extra: torch.Tensor | None = None


def pad(x):
    out = Output(x * 2)
    if x.shape[-1] % 4:
        once.warning_once("padding to a multiple of 4")
        log.warning("padded %d", 1)
        x = torch.nn.functional.pad(x, (0, 4 - x.shape[-1] % 4))
    return out.hidden.sum() + x.sum(-1)


def test_logger_methods_split_the_graph_and_log_on_every_call(caplog):
    fast = jit(pad, backend="eager")
    with caplog.at_level(logging.WARNING):
        for n in (5, 5, 6, 8, 5, 7):
            x = torch.randn(2, n)
            assert torch.allclose(fast(x), pad(x)), n
    report = fast.explain()
    assert not report.fallbacks, str(report)
    assert any("logging's Logger.warning" in b.reason for b in report.graph_breaks), str(report)
    # eager and jitted calls logged alike: one "padded" per call that padded (5 of 6), twice (eager and jit)
    assert sum("padded 1" in r.getMessage() for r in caplog.records) == 2 * 5
