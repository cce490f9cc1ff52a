"""`jitlab backends`: what is installed, versions and devices (each asked in its own process, once:
the answers are kept until the interpreter, the backend's installed version or the device setup
change; see jitlab.engine.probe_cache)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import click
from rich.table import Table

from jitlab.backends import all_backends
from jitlab.cli.app import app, console, current_machine, err_console, json_option, with_envelope
from jitlab.engine.probe_cache import cached_probe, keep_probes
from jitlab.engine.runner import probe_backend


@app.command("backends")
@click.option("--refresh", is_flag=True, help="ask every backend again instead of reusing the kept answers")
@json_option
def backends_command(refresh: bool, as_json: bool) -> None:
    """List the backends: installed or not (with the install command), version, devices."""
    backends = all_backends()
    kept = {b.name: None if refresh else cached_probe(b) for b in backends}
    asked = [b for b in backends if kept[b.name] is None]
    with ThreadPoolExecutor(max_workers=3) as pool:
        fresh = dict(zip((b.name for b in asked), pool.map(lambda b: probe_backend(b.name), asked)))
    if fresh:
        failed = keep_probes({b.name: (b, fresh[b.name]) for b in asked})
        if failed:
            err_console.print(
                f"[dim]the probes could not be kept for next time ({failed})[/]", highlight=False
            )
    probes = [kept[b.name] or fresh[b.name] for b in backends]
    rows = []
    for backend, probe in zip(backends, probes):
        available = probe["status"] == "ok"
        rows.append(
            {
                "backend": backend.name,
                "available": available,
                "version": probe.get("version") if available else None,
                "devices": probe.get("devices") or [],
                # asked of the framework in the probe's process: a backend that is not installed
                # cannot say (torch's answer depends on its build), so it is null, never guessed here
                "asynchronous": probe.get("asynchronous") if available else None,
                "reason": None if available else probe.get("reason"),
                "description": backend.description,
                # when the answer was asked of the backend (a kept one: its key still matches)
                "probed_at": probe.get("probed_at"),
            }
        )
    if as_json:
        print(json.dumps(with_envelope("backends", {"backends": rows}, machine=current_machine())))
        return
    table = Table(title="jitlab backends", title_justify="left")
    for column in ("backend", "status", "version", "devices", "what it is"):
        table.add_column(column)
    for row in rows:
        status = "[green]available[/]" if row["available"] else f"[dim]unavailable: {row['reason']}[/]"
        table.add_row(
            row["backend"],
            status,
            row["version"] or "-",
            ", ".join(row["devices"]) or "-",
            row["description"],
        )
    console.print(table)
    reused = sorted({row["probed_at"] for row in rows if row["probed_at"]})
    if reused:
        console.print(
            f"[dim]versions and devices as the backends said on {reused[0]}"
            f"{' and later' if len(reused) > 1 else ''} (same Python, same installed versions, same "
            "device setup); --refresh asks them again[/]",
            highlight=False,
        )
