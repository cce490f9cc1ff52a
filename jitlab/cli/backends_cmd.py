"""`jitlab backends`: what is installed, versions and devices (each asked in its own process)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from rich.table import Table

from jitlab.backends import all_backends
from jitlab.cli.app import app, console, current_machine, json_option, with_envelope
from jitlab.engine.runner import probe_backend


@app.command("backends")
@json_option
def backends_command(as_json: bool) -> None:
    """List the backends: installed or not (with the install command), version, devices."""
    backends = all_backends()
    with ThreadPoolExecutor(max_workers=3) as pool:
        probes = list(pool.map(lambda b: probe_backend(b.name), backends))
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
