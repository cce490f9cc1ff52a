"""Running the doctor: resolve the target, call it once plainly, run the checks, measure the regime.

The plain first call comes first so that an exception in the user's code is reported as theirs
(before any interception layer is active) and so that one-time costs (imports, allocator warm-up)
are out of the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jitlab.doctor.context import DoctorContext
from jitlab.doctor.findings import Finding, FindingSet
from jitlab.doctor.registry import all_checks
from jitlab.doctor.target import resolve_inputs, resolve_target
from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.doctor.regime import Regime
    from jitlab.machine.peaks import MachinePeaks

REGIME = "regime"


@dataclass
class Diagnosis:
    target: str
    inputs: str | None
    checks: list[str]
    findings: list[Finding] = field(default_factory=list)
    regime: Regime | None = None
    graph: dict[str, Any] | None = None
    jit: dict[str, Any] | None = None
    trace: dict[str, Any] | None = None

    def kinds(self) -> set[str]:
        """Every kind seen, the views' included."""
        return {kind for finding in self.findings for kind in finding.kinds}


def check_names() -> list[str]:
    return [*all_checks(), REGIME]


def diagnose(
    target: str,
    inputs: str | None = None,
    checks: list[str] | None = None,
    peaks: MachinePeaks | None = None,
    trace: str | None = None,
) -> Diagnosis:
    """Diagnose `target` (`path.py:function` or `package.module:function`).

    `checks` limits the check families (default: all, see `check_names()`); `peaks` defaults to
    `load_peaks()` (measured once per machine and cached). Raises `UserError` for bad input and
    `UserCodeFailed` when the user's code raises.
    """
    from jitlab.backends.install import require

    require("torch", "torch", "jitlab doctor diagnoses PyTorch code")
    available = check_names()
    chosen = list(checks) if checks else available
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise UserError(f"unknown check {', '.join(unknown)}: choose from {', '.join(available)}")
    resolved = resolve_target(target)
    ctx = DoctorContext(resolved, resolve_inputs(inputs, resolved))
    ctx.call(during="running it once")
    found = FindingSet()
    registry = all_checks()
    for name in chosen:
        if name in registry:
            found.extend(registry[name](ctx))
    diagnosis = Diagnosis(target=target, inputs=inputs, checks=chosen, findings=found.grouped())
    diagnosis.graph = ctx._cache.get("graph_summary")
    diagnosis.jit = ctx._cache.get("jit_summary")
    if REGIME in chosen:
        from jitlab.doctor.regime import diagnose_regime

        if peaks is None:
            from jitlab.machine.peaks import load_peaks

            peaks = load_peaks()
        diagnosis.regime = diagnose_regime(ctx, peaks)
        breaks = sum("graph-break" in f.kinds for f in diagnosis.findings)
        if diagnosis.regime.verdict == "overhead" and breaks:
            # "compile the function" alone would ignore the findings above it
            diagnosis.regime.suggestion += (
                f"; torch.compile breaks this function at {breaks} line(s) (the findings above): "
                "fix those first, or compile the parts between them"
            )
    if trace is not None:
        from jitlab.doctor.trace import write_trace

        diagnosis.trace = write_trace(ctx, trace)
    return diagnosis
