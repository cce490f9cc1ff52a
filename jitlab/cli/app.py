"""The click command group and the consoles shared by all commands."""

from __future__ import annotations

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()
err_console = Console(stderr=True)

STORE_HELP = "results store: a SQLite file or postgresql://USER@HOST/DB; default $JITLAB_STORE or .jitlab/results.sqlite"
RUN_HELP = "a run's number in the store, or the start of its UUID"

store_option = click.option("--store", "store_path", default=None, metavar="PATH|URL", help=STORE_HELP)
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
