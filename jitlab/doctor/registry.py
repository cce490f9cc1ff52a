"""The doctor's checks, one family per module, registered by decorator.

A check is a function `check(ctx: DoctorContext) -> list[Finding]`. Registering a second check
under a name already taken is an error, so two modules cannot silently replace each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext
    from jitlab.doctor.findings import Finding

Check = Callable[["DoctorContext"], "list[Finding]"]

_CHECKS: dict[str, Check] = {}

#: modules whose import registers the built-in checks, in the order they run
CHECK_MODULES = (
    "jitlab.doctor.sync",
    "jitlab.doctor.loops",
    "jitlab.doctor.graph_breaks",
    "jitlab.doctor.jit_view",
)


def register_check(name: str) -> Callable[[Check], Check]:
    def decorate(function: Check) -> Check:
        if name in _CHECKS and _CHECKS[name] is not function:
            raise ValueError(f"a doctor check named {name!r} is registered already")
        _CHECKS[name] = function
        return function

    return decorate


def all_checks() -> dict[str, Check]:
    """Every registered check by name, in registration order (built-ins first)."""
    import importlib

    for module in CHECK_MODULES:
        importlib.import_module(module)
    # the built-ins in CHECK_MODULES' order, whichever was imported first (a test, a user's code),
    # then the user's checks in registration order
    rank = {module: n for n, module in enumerate(CHECK_MODULES)}
    order = sorted(_CHECKS, key=lambda name: rank.get(_CHECKS[name].__module__, len(rank)))
    return {name: _CHECKS[name] for name in order}
