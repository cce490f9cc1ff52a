"""The machine's peaks as one immutable record, measured once per machine and cached as JSON.

`load_peaks()` is what other parts (the doctor's regime diagnosis, throughput columns) call: it reads
`.jitlab/machine.json` beside the default results store, keyed by the machine fingerprint, and
measures only when this machine has no entry yet or `refresh=True`. Measuring runs each probe in its
own worker process (`jitlab.machine.measure`), because TensorFlow and Triton abort in one process.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitlab.errors import UserError
from jitlab.store.database import resolve_store_path
from jitlab.store.machine import machine_fingerprint, machine_info

CACHE_VERSION = 1
CACHE_NAME = "machine.json"


@dataclass(frozen=True)
class MachinePeaks:
    """Best sustained rates measured on one machine.

    - `bandwidth_bytes_per_s`: multi-threaded STREAM-triad-like kernel on arrays far beyond the cache
      (bytes counted as STREAM does: two reads and one write per element).
    - `flops_f32`, `flops_f64`: large matrix products, 2 n^3 floating-point operations each.
    - `random_words_per_s`: 64-bit random words per second from a counter-based generator, keyed by
      the thread count ("1" and all threads); empty when it was not measured (Numba missing, or
      peaks cached by an older jitlab).
    - `overhead_s`: seconds per tiny call (a one-element addition) for each installed framework,
      "python" being a plain float addition.
    - `gpus`: per CUDA device, its measured peaks (`jitlab.machine.gpu_probe`: bandwidth, matmul
      FLOP/s per dtype, launch cost, host<->device copies) and the vendor's figures; empty without
      a GPU.
    """

    bandwidth_bytes_per_s: float
    flops_f32: float
    flops_f64: float
    overhead_s: dict[str, float] = field(default_factory=dict)
    random_words_per_s: dict[str, float] = field(default_factory=dict)
    gpus: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    measured_at: str = ""
    #: how each figure was obtained (kernel, sizes, repetitions), for the report
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MachinePeaks:
        return cls(
            bandwidth_bytes_per_s=float(data["bandwidth_bytes_per_s"]),
            flops_f32=float(data["flops_f32"]),
            flops_f64=float(data["flops_f64"]),
            overhead_s={str(k): float(v) for k, v in (data.get("overhead_s") or {}).items()},
            random_words_per_s={str(k): float(v) for k, v in (data.get("random_words_per_s") or {}).items()},
            gpus=[dict(g) for g in (data.get("gpus") or [])],
            machine=dict(data.get("machine") or {}),
            measured_at=str(data.get("measured_at") or ""),
            details=dict(data.get("details") or {}),
        )

    @property
    def quick(self) -> bool:
        """Measured in the quick mode (small sizes, for tests): not a real peak."""
        return bool(self.details.get("quick"))

    def flops(self, dtype: str = "float32") -> float:
        """Peak FLOP/s for a dtype name ('float32'/'f32' or 'float64'/'f64')."""
        return self.flops_f64 if "64" in dtype else self.flops_f32

    def ridge_flops_per_byte(self, dtype: str = "float32") -> float:
        """Arithmetic intensity above which a kernel is compute-bound (the roofline's ridge point)."""
        return self.flops(dtype) / self.bandwidth_bytes_per_s

    def random_rate(self, threads: int) -> float | None:
        """64-bit random words per second on `threads` threads; None when not measured.

        Measured at one thread and at all: in between, the one-thread rate times the threads,
        capped by the all-thread rate; never below the best rate of fewer threads (more threads
        can always leave some idle)."""
        measured = {int(k): v for k, v in self.random_words_per_s.items()}
        usable = {t: v for t, v in measured.items() if t <= threads}
        if not usable:
            return None
        best = max(usable.values())
        if threads in measured or 1 not in measured:
            return best
        return max(best, min(measured[1] * threads, max(measured.values())))

    def gpu(self, index: int = 0) -> dict[str, Any] | None:
        """The measured peaks of CUDA device `index`, or None when it was not measured."""
        return next((g for g in self.gpus if g.get("index") == index), None)

    def device_rates(self, device: str, dtype: str, tf32: bool = False) -> tuple[float, float, float | None]:
        """(FLOP/s, bytes/s, seconds per operator launch or None) for work of `dtype` on `device`
        ("cpu", "cuda", "cuda:1"): a GPU's own peaks for its work (float32 on tensor cores when
        TF32 is allowed), the host's otherwise. `dtype` is a torch dtype name ("float32",
        "bfloat16"...)."""
        if device.startswith("cuda"):
            index = int(device.split(":", 1)[1]) if ":" in device else 0
            gpu = self.gpu(index) or (self.gpus[0] if self.gpus else None)
            if gpu is not None:
                rates = gpu.get("flops") or {}
                key = "tf32" if dtype == "float32" and tf32 else dtype
                flops = rates.get(key) or rates.get("float32") or self.flops_f32
                return float(flops), float(gpu["bandwidth_bytes_per_s"]), gpu.get("launch_s")
        return self.flops(dtype), self.bandwidth_bytes_per_s, None


def default_cache_path() -> Path:
    """`.jitlab/machine.json` beside the default results store (follows $JITLAB_STORE's folder)."""
    return resolve_store_path(None).parent / CACHE_NAME


def _read_cache(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        # a damaged cache is remeasured and rewritten, never trusted
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    return data


def cached_peaks(cache_path: Path | None = None, info: dict[str, Any] | None = None) -> MachinePeaks | None:
    """The cached peaks of this machine, or None when there are none."""
    path = cache_path or default_cache_path()
    entry = _read_cache(path).get("machines", {}).get(machine_fingerprint(info or machine_info()))
    if not entry:
        return None
    try:
        return MachinePeaks.from_json(entry)
    except (KeyError, TypeError, ValueError):
        return None


def check_cache_writable(cache_path: Path | None = None) -> Path:
    """Fail before a minute of measuring, not after, when the cache cannot be written."""
    path = cache_path or default_cache_path()
    if path.is_dir():
        raise UserError(f"the machine peaks cache {path} is a folder: pass a file path with --cache")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the folder of the peaks cache {path}: {exc.strerror}") from exc
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"cannot write the machine peaks cache {path}: permission denied; pass --cache PATH")
    return path


def save_peaks(peaks: MachinePeaks, cache_path: Path | None = None) -> Path:
    path = cache_path or default_cache_path()
    data = _read_cache(path) or {"version": CACHE_VERSION, "machines": {}}
    data.setdefault("machines", {})[machine_fingerprint(peaks.machine)] = peaks.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        tmp.replace(path)
    except OSError as exc:
        raise UserError(f"cannot write the machine peaks cache {path}: {exc.strerror}") from exc
    return path


def measure_peaks(quick: bool = False, info: dict[str, Any] | None = None) -> MachinePeaks:
    """Measure every peak now (tens of seconds; `quick` uses small sizes, for tests)."""
    from jitlab.machine.measure import measure_all

    info = info or machine_info()
    figures = measure_all(quick=quick)
    return MachinePeaks(
        bandwidth_bytes_per_s=figures["bandwidth_bytes_per_s"],
        flops_f32=figures["flops_f32"],
        flops_f64=figures["flops_f64"],
        overhead_s=figures["overhead_s"],
        random_words_per_s=figures.get("random_words_per_s") or {},
        gpus=figures.get("gpus") or [],
        machine=info,
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        details=figures["details"],
    )


def load_peaks(refresh: bool = False, cache_path: Path | None = None, quick: bool = False) -> MachinePeaks:
    """This machine's peaks: from the cache, or measured (and cached) when missing or `refresh`."""
    info = machine_info()
    if not refresh:
        cached = cached_peaks(cache_path, info)
        # figures from the quick (test) mode only stand in for other quick requests; peaks cached
        # before GPU peaks existed are measured again on a machine with GPUs
        if cached is not None and (quick or not cached.quick) and not missing_gpu_peaks(cached, info):
            return cached
    check_cache_writable(cache_path)
    peaks = measure_peaks(quick=quick, info=info)
    save_peaks(peaks, cache_path)
    return peaks


def missing_gpu_peaks(peaks: MachinePeaks, info: dict[str, Any]) -> bool:
    """True when the machine has GPUs but the cached peaks hold none and no reason why."""
    has_gpus = bool(info.get("gpus") or info.get("gpu_details"))  # nvidia-smi's list, else NVML's
    return has_gpus and not peaks.gpus and "gpu_failure" not in peaks.details
