"""The `jitlab` command line. Each group of commands lives in its own module and registers on `app`.

Errors that are the user's to fix (`UserError`) print one line and exit with code 2; `--debug`
(anywhere on the command line) or JITLAB_DEBUG=1 shows the traceback as well. A store that stayed
unreachable (`StoreUnreachable`) is not bad input: one line and exit code 4. Any other exception
is a bug in jitlab: its traceback is printed and the exit code is 3, so that CI can tell it from a
failed check (1). The codes are listed in `jitlab.cli.exit_codes` and docs/automation.md.
Every message and traceback printed here has its secrets masked (`jitlab.secrets`).
"""

from __future__ import annotations

import os
import sys
import traceback

import click

# command modules register themselves on `app`
from jitlab.cli import (  # noqa: E402,F401,I001
    backends_cmd,
    capture_cmd,
    compare_cmd,
    doctor_cmd,
    exit_codes,
    explain_cmd,
    fuzz_cmd,
    history_cmd,
    import_cmd,
    machine_cmd,
    report_cmd,
    results_cmd,
    run_cmd,
    selfcheck_cmd,
)
from jitlab.cli.app import app, err_console
from jitlab.errors import UserError
from jitlab.secrets import mask_text
from jitlab.store.outages import StoreUnreachable


def _error(message: str) -> None:
    # click.echo, not rich: an error stays on one line however narrow the terminal
    click.echo(click.style("jitlab: error: ", fg="red", bold=True) + mask_text(message), err=True)


def _traceback() -> None:
    """The traceback of the exception being handled, on stderr, with its secrets masked."""
    sys.stderr.write(mask_text(traceback.format_exc()))
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("JITLAB_DEBUG") == "1"
    args = [a for a in args if a != "--debug"]
    if debug:  # commands (and the workers they start) read it: e.g. `jitlab run` prints failed cells' logs
        os.environ["JITLAB_DEBUG"] = "1"
    try:
        result = app.main(args=args, prog_name="jitlab", standalone_mode=False)
    except UserError as exc:
        if debug:
            _traceback()
        _error(str(exc))
        return exit_codes.BAD_INPUT
    except StoreUnreachable as exc:
        if debug:
            _traceback()
        _error(f"{exc}; {exc.advice}")
        return exit_codes.STORE_UNREACHABLE
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        err_console.print("interrupted")
        return exit_codes.INTERRUPTED
    except Exception:
        _traceback()
        click.echo(
            click.style("jitlab: internal error: ", fg="red", bold=True)
            + "this is a bug in jitlab, not in your input; please report it with the traceback above",
            err=True,
        )
        return exit_codes.INTERNAL_ERROR
    return result if isinstance(result, int) else exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
