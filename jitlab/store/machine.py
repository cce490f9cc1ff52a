"""Machine metadata recorded with every run: enough to tell whether two runs are comparable.

Whether two runs ran on "the same machine" is decided by `machine_fingerprint`: the machine's name
when the user gave one (`--machine NAME` or $JITLAB_MACHINE), else what the hardware and its
frequency settings are (CPU model, logical cores, memory, GPU models, frequency governor, turbo).
The hostname is recorded but not part of the fingerprint: CI runners get a new hostname per job,
and identical hardware under two names measures the same.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil

from jitlab.backends import all_backends


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        import cpuinfo

        return cpuinfo.get_cpu_info().get("brand_raw") or platform.processor()
    except Exception:  # py-cpuinfo may fail on exotic machines; the platform string is enough then
        return platform.processor() or "unknown"


def gpus() -> list[str]:
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


#: fields asked of `nvidia-smi --query-gpu`, in order (older drivers lack compute_cap: asked without it)
GPU_QUERY_FIELDS = ("name", "memory.total", "driver_version", "pci.bus_id", "compute_cap")


def _nvidia_smi(*args: str) -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20)
    except (subprocess.SubprocessError, OSError):
        return None
    return done.stdout if done.returncode == 0 else None


def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports, as nvidia-smi's header prints it ("CUDA Version: 13.0")."""
    out = _nvidia_smi() or ""
    marker = "CUDA Version:"
    if marker not in out:
        return None
    return out.split(marker, 1)[1].split()[0].strip(" |") or None


def _torch_cuda_runtime() -> str | None:
    """The CUDA runtime torch was built with, read from torch/version.py without importing torch
    (importing it costs over a second at every `jitlab run`)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    version_file = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        for line in version_file.read_text().splitlines():
            if line.startswith("cuda") and "=" in line:
                value = line.split("=", 1)[1].split("#", 1)[0].strip().strip("'\"")
                return None if value in ("", "None") else value
    except OSError:
        return None
    return None


def gpu_details() -> list[dict[str, Any]]:
    """Each NVIDIA GPU with its model, memory, driver, compute capability and PCI bus, plus the
    driver's CUDA version and the CUDA runtime torch was built with. Empty without nvidia-smi (no
    NVIDIA driver): never an error."""
    fields = list(GPU_QUERY_FIELDS)
    out = _nvidia_smi(f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")
    if out is None:
        fields.remove("compute_cap")
        out = _nvidia_smi(f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")
    if not out:
        return _nvml_gpu_details()
    driver_cuda = cuda_driver_version()
    torch_cuda = _torch_cuda_runtime()
    found = []
    for index, line in enumerate(out.splitlines()):
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            continue
        entry: dict[str, Any] = {"index": index, **dict(zip(fields, values))}
        memory = entry.pop("memory.total")
        entry["memory_bytes"] = int(float(memory) * 1024**2) if memory.replace(".", "").isdigit() else None
        entry["driver"] = entry.pop("driver_version")
        entry["pci_bus_id"] = entry.pop("pci.bus_id")
        entry["cuda_driver_version"] = driver_cuda
        entry["torch_cuda_runtime"] = torch_cuda
        found.append(entry)
    return found


def _nvml_gpu_details() -> list[dict[str, Any]]:
    """The same details from NVML (`pynvml`, when installed) where nvidia-smi is missing."""
    try:
        import pynvml
    except ImportError:
        return []
    found: list[dict[str, Any]] = []
    try:
        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            cuda = pynvml.nvmlSystemGetCudaDriverVersion()  # e.g. 13000 for 13.0
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                name = pynvml.nvmlDeviceGetName(handle)
                bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
                found.append(
                    {
                        "index": index,
                        "name": name.decode() if isinstance(name, bytes) else str(name),
                        "compute_cap": f"{major}.{minor}",
                        "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
                        "driver": driver.decode() if isinstance(driver, bytes) else str(driver),
                        "pci_bus_id": bus.decode() if isinstance(bus, bytes) else str(bus),
                        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
                        "torch_cuda_runtime": _torch_cuda_runtime(),
                    }
                )
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # pynvml.NVMLError and friends: no driver here, metadata stays empty
        return []
    return found


def git_commit(directory: Path) -> str | None:
    """The commit of the user's project (the directory jitlab runs in), with '+dirty' if modified."""
    if not shutil.which("git"):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def machine_info(project_dir: Path | None = None, name: str | None = None) -> dict[str, Any]:
    """Everything recorded about this machine; `name` (else $JITLAB_MACHINE) names it for comparisons."""
    memory = psutil.virtual_memory().total
    return {
        "hostname": platform.node(),
        "cpu": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_physical": psutil.cpu_count(logical=False),
        "memory_bytes": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "gpus": gpus(),
        "gpu_details": gpu_details(),
        "backends": {b.name: b.version() for b in all_backends()},
        "project_commit": git_commit(project_dir or Path.cwd()),
        **frequency_settings(),
        "name": machine_name(name),
    }


#: environment variable naming the machine when --machine is not given
MACHINE_ENV = "JITLAB_MACHINE"
CPU_SYSFS = Path("/sys/devices/system/cpu")


def machine_name(name: str | None = None) -> str | None:
    """The user's name for this machine: `name`, else $JITLAB_MACHINE, else None (no name)."""
    chosen = name if name is not None else os.environ.get(MACHINE_ENV)
    chosen = (chosen or "").strip()
    return chosen or None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def frequency_settings(root: Path = CPU_SYSFS) -> dict[str, str | None]:
    """The CPU frequency governor and whether turbo/boost is on, where Linux exposes them (None where
    it does not: containers, virtual machines without cpufreq, other systems). Both change timings
    enough that runs under different settings should not be compared as one machine's."""
    governors = sorted(
        {value for path in root.glob("cpu[0-9]*/cpufreq/scaling_governor") if (value := _read(path))}
    )
    turbo = None
    no_turbo = _read(root / "intel_pstate" / "no_turbo")  # intel_pstate: 1 means turbo off
    boost = _read(root / "cpufreq" / "boost")  # acpi-cpufreq and amd-pstate: 1 means boost on
    if no_turbo in ("0", "1"):
        turbo = "off" if no_turbo == "1" else "on"
    elif boost in ("0", "1"):
        turbo = "on" if boost == "1" else "off"
    return {"cpu_governor": ",".join(governors) or None, "turbo": turbo}


def gpu_models(info: dict[str, Any]) -> list[str]:
    """GPU model names only (memory, driver and CUDA versions are not the hardware's identity): from
    nvidia-smi's `gpus`, else from `gpu_details` (read through NVML where nvidia-smi is missing)."""
    if info.get("gpus"):
        return [str(entry).split(",", 1)[0].strip() for entry in info["gpus"]]
    return [
        str(gpu["name"]).strip()
        for gpu in info.get("gpu_details") or []
        if isinstance(gpu, dict) and gpu.get("name")
    ]


def machine_fingerprint(info: dict[str, Any]) -> str:
    """Runs with equal fingerprints ran on comparable hardware (or on machines the user named the same).

    The hostname is left out on purpose (see the module's docstring); memory is rounded to GiB so a
    kernel that reserves a little more does not make a new machine.
    """
    if info.get("name"):
        return str(info["name"])
    memory = info.get("memory_bytes")
    parts = [
        str(info.get("cpu") or "unknown CPU"),
        f"{info.get('cores_logical', '?')} threads",
        f"{round(memory / 2**30)} GiB" if memory else None,
        " + ".join(gpu_models(info)) or "no GPU",
        f"governor {info['cpu_governor']}" if info.get("cpu_governor") else None,
        f"turbo {info['turbo']}" if info.get("turbo") else None,
    ]
    return " · ".join(p for p in parts if p)
