"""`--measure wall|instructions` of `jitlab run`: what a cell's figure is, and the checks that
counting instructions under Valgrind needs before anything is measured."""

from __future__ import annotations

from collections.abc import Sequence

import click

from jitlab.engine import valgrind
from jitlab.engine.spec import MEASURES, WALL
from jitlab.errors import UserError

measure_option = click.option(
    "--measure",
    type=click.Choice(MEASURES),
    default=WALL,
    show_default=True,
    help="wall: time the calls; instructions: count them under Valgrind (Callgrind), a figure load "
    "does not change, for regression gates on shared machines (one thread, much slower to measure)",
)


def check_instruction_counting(backends: Sequence[str] | None, cluster: str | None) -> None:
    """Refuse, before anything is measured, what counting cannot do: no Valgrind here, a backend
    named in --backends that cannot run under it, or a cluster."""
    if valgrind.valgrind_path() is None:
        raise UserError(
            f"--measure instructions needs Valgrind, which is not installed: {valgrind.INSTALL_HINT}"
        )
    for name in backends or ():
        reason = valgrind.cannot_count(name)
        if reason:
            raise UserError(f"{reason}; measure it with --measure wall, or leave it out of --backends")
    if cluster:
        raise UserError("--measure instructions counts on this machine: drop --cluster")
