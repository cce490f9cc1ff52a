"""JAX: XLA-compiled, asynchronously dispatched even on the CPU."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jitlab.backends.base import Backend
from jitlab.backends.registry import register_backend


@register_backend
class JaxBackend(Backend):
    name = "jax"
    modules = ("jax", "jaxlib")
    distribution = "jax"
    extra = "jax"
    asynchronous = True
    description = "jax.jit (XLA); calls return before the result exists"

    def worker_environment(self, threads: int, scratch_dir: str) -> Mapping[str, str]:
        env = dict(super().worker_environment(threads, scratch_dir))
        # XLA's CPU client sizes its Eigen pool from the affinity mask; the flag caps intra-op work.
        if threads == 1:
            env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        env.setdefault("JAX_PLATFORMS", "")
        return env

    def devices(self) -> list[str]:
        import jax

        gpus = [d for d in jax.devices() if d.platform != "cpu"] if _has_accelerator(jax) else []
        return [str(d) for d in gpus] + [str(d) for d in jax.devices("cpu")]

    def device_description(self) -> str:
        import jax

        device = jax.devices()[0]
        if device.platform == "cpu":
            return "cpu"
        kind = getattr(device, "device_kind", "")
        return f"{device.platform}:{device.id} ({kind})" if kind else f"{device.platform}:{device.id}"

    def prepare(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        import jax

        return jax.jit(fn, **options)

    def peak_device_memory(self) -> int | None:
        import jax

        device = jax.devices()[0]
        if device.platform == "cpu":
            return None
        stats = device.memory_stats() or {}
        return stats.get("peak_bytes_in_use")


def _has_accelerator(jax: Any) -> bool:
    return any(d.platform != "cpu" for d in jax.devices())
