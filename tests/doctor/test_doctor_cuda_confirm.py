"""The CUDA confirmation machinery, exercised on the CPU with real torch: C++ warnings raised inside
an operator run from a dispatch mode reach Python only after the user's call returns (the cause of
the "not flagged" bug), and the profiler's events are attributed to the user's function."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from doctor_helpers import line_of, program
from torch.utils._python_dispatch import TorchDispatchMode

from jitlab.doctor.cuda_confirm import SYNC_WARNING, capture_sync_warnings, profile_syncs, summarise
from jitlab.doctor.findings import Finding
from jitlab.doctor.sync import SyncEvent, sync_finding, unexplained_syncs
from jitlab.doctor.target import resolve_inputs, resolve_target

SAMPLER = program("sampler.py")
RESIZED = "An output with one or more elements was resized"


class RunsOperators(TorchDispatchMode):
    """Runs every operator itself, as the doctor's dispatch spy does, and records whether a warning
    showed up while the operator ran."""

    def __init__(self) -> None:
        super().__init__()
        self.caught_inside: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = func(*args, **(kwargs or {}))
        self.caught_inside += [str(w.message) for w in caught]
        return out


def resize_an_output(a: torch.Tensor) -> torch.Tensor:
    out = torch.ones(5)
    torch.add(a, a, out=out)  # marker: resize
    return out


def marker_line(marker: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if text.rstrip().endswith(f"# marker: {marker}"))


def test_a_cxx_warning_from_a_dispatched_operator_is_shown_at_the_users_line():
    mode = RunsOperators()
    with capture_sync_warnings(message=RESIZED) as found, mode:
        resize_an_output(torch.ones(3))
    # not while the operator ran (what the doctor used to look at) ...
    assert not any(RESIZED in text for text in mode.caught_inside)
    # ... but once the user's torch.add returned, at the user's line
    assert found.flagged((__file__, marker_line("resize")))


def test_other_warnings_are_still_shown():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with capture_sync_warnings() as found:
            warnings.warn("something else", UserWarning, stacklevel=1)
            warnings.warn(SYNC_WARNING, UserWarning, stacklevel=1)
    assert [str(w.message) for w in shown] == ["something else"]
    assert sum(found.lines.values()) == 1


def test_profiler_events_are_attributed_to_the_users_function():
    target = resolve_target(f"{SAMPLER}:naive_sample")
    inputs = resolve_inputs("make_labels", target)
    syncs = profile_syncs(
        lambda: target.function(*inputs.args), {"sampler.py"}, is_sync=lambda name: name == "aten::nonzero"
    )
    first_line = target.function.__code__.co_firstlineno
    assert summarise(syncs) == {("sampler.py", first_line, "naive_sample"): {"aten::nonzero": 2}}


def test_only_events_inside_the_profiled_call_are_attributed():
    """The profiler's own exit synchronises the device on CUDA, under the frames of whoever started
    the profiler. Here those frames are this test file's, a user file: its events must not count
    (on an H100 they were reported as waits "in test_control_flow_and_mask_indexing()")."""
    target = resolve_target(f"{SAMPLER}:naive_sample")
    inputs = resolve_inputs("make_labels", target)
    this_file = Path(__file__).name

    def is_sync(name: str) -> bool:  # the profiler's own exit, and the operator inside the call
        return name == "aten::nonzero" or name.endswith(": __exit__")

    syncs = profile_syncs(lambda: target.function(*inputs.args), {"sampler.py", this_file}, is_sync)
    first_line = target.function.__code__.co_firstlineno
    assert summarise(syncs) == {("sampler.py", first_line, "naive_sample"): {"aten::nonzero": 2}}


def test_profiled_syncs_confirm_events_and_reveal_unexplained_ones():
    line = line_of(SAMPLER, "nonzero-positives")
    event = SyncEvent("sync", "item", ((SAMPLER, line),), True, ((SAMPLER, 10, "naive_sample"),))
    profiled = {("sampler.py", 10, "naive_sample"): {"cudaStreamSynchronize": 2}}
    finding = sync_finding(event, profiled)
    assert "confirmed on CUDA" in finding.detail
    assert "the profiler saw cudaStreamSynchronize x2 in naive_sample()" in finding.detail
    assert unexplained_syncs([event], profiled, {"sampler.py": SAMPLER}) == []
    other = {("sampler.py", 21, "static_sample"): {"cudaDeviceSynchronize": 1}}
    (extra,) = unexplained_syncs([event], other, {"sampler.py": SAMPLER})
    assert isinstance(extra, Finding) and extra.kind == "sync" and extra.line == 21
    assert "cudaDeviceSynchronize x1" in extra.detail and "static_sample()" in extra.detail
