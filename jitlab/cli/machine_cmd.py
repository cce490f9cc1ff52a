"""`jitlab machine`: this machine's peaks (memory bandwidth, FLOP/s, per-call overhead of each
framework) with its metadata, measured once and cached for later commands."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from jitlab.cli.app import app, console, err_console, json_option, with_envelope
from jitlab.machine.peaks import (
    MachinePeaks,
    cached_peaks,
    check_cache_writable,
    default_cache_path,
    load_peaks,
    missing_gpu_peaks,
)
from jitlab.store.machine import machine_info


def peaks_json(peaks: MachinePeaks, cache_path: Path, measured_now: bool) -> dict:
    return {**peaks.to_json(), "cache_path": str(cache_path), "measured_now": measured_now}


def peaks_table(peaks: MachinePeaks) -> Table:
    machine = peaks.machine
    title = f"machine peaks · {machine.get('cpu', '?')} · {machine.get('cores_logical', '?')} logical cores"
    table = Table(title=title, title_justify="left")
    table.add_column("peak", style="bold")
    table.add_column("value", justify="right")
    table.add_column("how", style="dim")
    bandwidth = peaks.details.get("bandwidth", {})
    flops = peaks.details.get("flops", {})
    table.add_row(
        "memory bandwidth",
        f"{peaks.bandwidth_bytes_per_s / 1e9:.3g} GB/s",
        f"{bandwidth.get('kernel', 'triad')}, {bandwidth.get('elements', '?')} float64 per array",
    )
    n = flops.get("n", "?")
    table.add_row("float32 FLOP/s", f"{peaks.flops_f32 / 1e9:.3g} GFLOP/s", f"{n}x{n} matrix product, best")
    table.add_row("float64 FLOP/s", f"{peaks.flops_f64 / 1e9:.3g} GFLOP/s", f"{n}x{n} matrix product, best")
    table.add_row(
        "ridge point (f32)",
        f"{peaks.ridge_flops_per_byte('float32'):.3g} FLOP/byte",
        "kernels below it are bandwidth-bound, above it compute-bound",
    )
    for threads, rate in sorted(peaks.random_words_per_s.items(), key=lambda item: int(item[0])):
        table.add_row(
            f"random words, {threads} thread{'s' if threads != '1' else ''}",
            f"{rate / 1e9:.3g} G/s",
            "64-bit words of a counter-based generator (SplitMix64), numba",
        )
    if not peaks.random_words_per_s:
        table.add_row(
            "random words",
            "not measured",
            peaks.details.get("random_failure") or "cached by an older jitlab: --refresh",
        )
    for framework, seconds in sorted(peaks.overhead_s.items(), key=lambda item: item[1]):
        table.add_row(
            f"overhead: {framework}",
            f"{seconds * 1e6:.3g} µs/call",
            f"{1 / seconds / 1e6:.3g} M tiny additions per second",
        )
    for framework, reason in (peaks.details.get("overhead_failures") or {}).items():
        table.add_row(f"overhead: {framework}", "failed", reason)
    return table


def _share(measured: float | None, published: float | None) -> str:
    if not measured or not published:
        return "no published figure"
    return f"{measured / published:.0%} of the published {published / 1e12:.4g} T"


def gpu_table(gpu: dict) -> Table:
    """One GPU's measured peaks beside the vendor's published figures."""
    vendor = gpu.get("vendor") or {}
    known = (
        f"published figures: {vendor['model']}, {vendor['source']}"
        if vendor
        else "model not in jitlab's table"
    )
    title = f"GPU {gpu.get('index')} · {gpu.get('name')} · sm {gpu.get('capability')} · {known}"
    table = Table(title=title, title_justify="left")
    table.add_column("peak", style="bold")
    table.add_column("measured", justify="right")
    table.add_column("vendor", style="dim")
    published = {
        "bandwidth": vendor.get("memory_bandwidth_bytes_per_s"),
        "float32": vendor.get("flops_f32"),
        "tf32": vendor.get("flops_tf32"),
        "bfloat16": vendor.get("flops_bf16"),
        "float16": vendor.get("flops_f16"),
    }
    table.add_row(
        "memory bandwidth",
        f"{gpu['bandwidth_bytes_per_s'] / 1e12:.3g} TB/s",
        _share(gpu["bandwidth_bytes_per_s"], published["bandwidth"]).replace(" T", " TB/s"),
    )
    table.add_row(
        "  copy / triad",
        f"{gpu['copy_bytes_per_s'] / 1e12:.3g} / {gpu['triad_bytes_per_s'] / 1e12:.3g} TB/s",
        f"{gpu.get('elements')} float32 per array",
    )
    labels = {
        "float32": "float32 (CUDA cores)",
        "tf32": "TF32 (tensor cores)",
        "bfloat16": "bfloat16",
        "float16": "float16",
        "float64": "float64",
    }
    for key, rate in (gpu.get("flops") or {}).items():
        table.add_row(
            f"{labels.get(key, key)} FLOP/s",
            f"{rate / 1e12:.3g} TFLOP/s",
            _share(rate, published.get(key)).replace(" T", " TFLOP/s") if key in published else "",
        )
    table.add_row("kernel launch", f"{gpu['launch_s'] * 1e6:.3g} µs", "host time per queued launch")
    table.add_row("launch + synchronise", f"{gpu['launch_sync_s'] * 1e6:.3g} µs", "one launch, then wait")
    table.add_row("host → device (pinned)", f"{gpu['h2d_bytes_per_s'] / 1e9:.3g} GB/s", "")
    table.add_row("device → host (pinned)", f"{gpu['d2h_bytes_per_s'] / 1e9:.3g} GB/s", "")
    return table


@app.command("machine")
@click.option("--refresh", is_flag=True, help="measure again even when this machine's peaks are cached")
@click.option(
    "--cache",
    "cache",
    default=None,
    metavar="PATH",
    help="peaks cache (JSON); default machine.json beside the default results store",
)
@click.option("--quick", is_flag=True, help="tiny sizes (seconds, not a real peak): for tests")
@json_option
def machine_command(refresh: bool, cache: str | None, quick: bool, as_json: bool) -> None:
    """Measure and cache this machine's peaks: memory bandwidth (multi-threaded triad), float32 and
    float64 FLOP/s (matrix products) and the per-call overhead of each installed framework; on each
    NVIDIA GPU, its memory bandwidth, matmul FLOP/s per dtype, launch cost and host<->device copy
    rates beside the vendor's figures. Later commands read the cache; --refresh measures again
    (about a minute)."""
    cache_path = Path(cache) if cache else default_cache_path()
    info = machine_info()
    cached = None if refresh else cached_peaks(cache_path, info)
    # figures from the quick mode only stand in for other quick requests
    measured_now = cached is None or (cached.quick and not quick) or missing_gpu_peaks(cached, info)
    if measured_now:
        check_cache_writable(cache_path)
        err_console.print("measuring the machine's peaks (each probe in its own process)...")
        peaks = load_peaks(refresh=True, cache_path=cache_path, quick=quick)
    else:
        peaks = cached
    if as_json:
        data = peaks_json(peaks, cache_path, measured_now)
        # the peaks' own `machine` is the measured machine's metadata: the envelope's is the same
        print(
            json.dumps(
                with_envelope(
                    "machine", {k: v for k, v in data.items() if k != "machine"}, machine=peaks.machine
                )
            )
        )
        return
    console.print(peaks_table(peaks))
    for gpu in peaks.gpus:
        console.print(gpu_table(gpu))
    if peaks.details.get("gpu_failure"):
        console.print(f"GPU peaks not measured: {peaks.details['gpu_failure']}")
    note = "measured now" if measured_now else f"cached, measured {peaks.measured_at}"
    if peaks.quick:
        note += " in the quick mode (tiny sizes: not real peaks)"
    console.print(f"{note}; cache: {cache_path} (--refresh to measure again)")
