"""The click command group and the consoles shared by all commands."""

from __future__ import annotations

import click
from rich.console import Console, ConsoleDimensions
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jitlab.store.outages import DEFAULT_RETRY_S, duration

#: columns of output sent to a file or a pipe (rich's default there is 80, which wraps table cells,
#: progress lines and findings); $COLUMNS still decides when set
FILE_WIDTH = 200


class OutputConsole(Console):
    """A rich console that is as wide as the terminal, or `FILE_WIDTH` columns when its output goes to a
    file or a pipe, so that what a CI log or `> out.txt` keeps reads as it would in a wide terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if (
            self._width is None
            and "COLUMNS" not in self._environ
            and not self.is_terminal
            and not self.is_jupyter
        ):
            return ConsoleDimensions(FILE_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


console = OutputConsole()
err_console = OutputConsole(stderr=True)

STORE_HELP = "results store: a SQLite file or postgresql://USER@HOST/DB; default $JITLAB_STORE or .jitlab/results.sqlite"
RUN_HELP = "a run's number in the store, or the start of its UUID"

store_option = click.option("--store", "store_path", default=None, metavar="PATH|URL", help=STORE_HELP)
store_retry_option = click.option(
    "--store-retry",
    "store_retry",
    type=float,
    default=DEFAULT_RETRY_S,
    show_default=True,
    metavar="SECONDS",
    help="how long to wait for a store server that went away before stopping (0: not at all)",
)
json_option = click.option("--json", "as_json", is_flag=True, help="print one JSON object on stdout")


@click.group(name="jitlab", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jitlab")
def app() -> None:
    """A lab for JIT compilers: measure the same workload on every backend, honestly.

    Add --debug anywhere to see tracebacks of errors.
    """


def progress_bar(label: str, console: Console = err_console) -> Progress:
    """The progress bar every long command shows on stderr: label, bar, count, elapsed, current item."""
    return Progress(
        TextColumn(f"[bold]{label}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    )


def say_store_waits(seconds_left: float, reason: str) -> None:
    """What a command prints on stderr while its store is unreachable (a `Store`'s `on_wait`)."""
    err_console.print(
        f"store unreachable, retrying for {duration(seconds_left)} ({reason})",
        style="yellow",
        highlight=False,
        markup=False,
        soft_wrap=True,  # one line however narrow the terminal
    )


def command_options() -> dict:
    """The current command's options as parsed (for the `options` of its JSON output)."""
    context = click.get_current_context(silent=True)
    if context is None:
        return {}
    return {name: value for name, value in context.params.items() if name != "as_json"}


def with_envelope(
    kind: str, payload: dict, machine: dict | None = None, machines: list | None = None
) -> dict:
    """`payload` in the envelope every `--json` output carries (see `jitlab.report.envelope`)."""
    from jitlab.report.envelope import envelope

    return envelope(kind, payload, command_options(), machine=machine, machines=machines)


def current_machine() -> dict:
    """This machine's metadata, for commands whose JSON is not about stored runs."""
    from jitlab.store.machine import machine_info

    return machine_info()


def cell_machines(cells: list) -> list[dict]:
    """The metadata of the machines that measured `cells` (for the envelope's `machines`)."""
    from jitlab.report.envelope import cell_machines as machines_of

    return machines_of(cells)
