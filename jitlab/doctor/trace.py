"""`--trace FILE`: one call of the target under `torch.profiler`, saved as a Chrome trace (JSON).

Open it in chrome://tracing or https://ui.perfetto.dev. On CUDA the trace also holds the device
kernels and the synchronisation calls (`cudaStreamSynchronize`, `cudaDeviceSynchronize`,
`cudaMemcpy` device-to-host), counted here for the report: they show the GPU idling while the host
waits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext

SYNC_EVENT_NAMES = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def write_trace(ctx: DoctorContext, path: str) -> dict[str, Any]:
    """Profile one call, write the Chrome trace, and summarise what it holds."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    target = Path(path)
    if not target.parent.exists():
        raise UserError(
            f"--trace {path}: folder {target.parent} does not exist: create it or choose another path"
        )
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, record_shapes=True, with_stack=True) as prof:
        ctx.call(during="profiling")
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    try:
        prof.export_chrome_trace(str(target))
    except OSError as exc:
        raise UserError(f"cannot write the trace {path}: {exc.strerror}") from exc
    events = json.loads(target.read_text()).get("traceEvents", [])
    syncs = sum(1 for e in events if str(e.get("name", "")).startswith(SYNC_EVENT_NAMES))
    return {"path": str(target), "events": len(events), "sync_events": syncs}
