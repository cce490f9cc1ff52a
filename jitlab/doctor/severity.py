"""How bad each kind of doctor finding is, for `jitlab doctor --fail-on LEVEL` and the JSON output.

- `error`: torch.compile cannot compile the function at all (`compile-error`).
- `warning`: a structural cost paid on every call or a lost optimisation: a synchronisation inside a
  loop (`blocking-in-loop`), a data-dependent shape (a sync that also breaks graphs and batching),
  a `graph-break` (torch.compile's) or `jit-break` (jitlab.jit's), a `recompile`.
- `info`: a single synchronisation outside any loop (`sync`): reading one result back at the end
  of a function is often what the program is for.
"""

from __future__ import annotations

#: levels from the least to the most severe
LEVELS = ("info", "warning", "error")

SEVERITY = {
    "sync": "info",
    "data-dependent-shape": "warning",
    "blocking-in-loop": "warning",
    "graph-break": "warning",
    "jit-break": "warning",
    "recompile": "warning",
    "compile-error": "error",
}


def severity(kind: str) -> str:
    """The level of a finding kind (an unknown kind counts as a warning)."""
    return SEVERITY.get(kind, "warning")


def at_least(kind: str, level: str) -> bool:
    """Whether a finding of `kind` is at `level` or above."""
    return LEVELS.index(severity(kind)) >= LEVELS.index(level)
