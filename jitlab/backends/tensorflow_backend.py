"""TensorFlow: `tf.function(jit_compile=True)`, i.e. XLA through TensorFlow's tracer."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from jitlab.backends.base import Backend
from jitlab.backends.registry import register_backend


@register_backend
class TensorflowBackend(Backend):
    name = "tensorflow"
    modules = ("tensorflow",)
    distribution = "tensorflow-cpu"
    extra = "tensorflow"
    description = "tf.function(jit_compile=True) (XLA)"

    @property
    def install_hint(self) -> str:
        if sys.version_info >= (3, 14):
            return (
                f"tensorflow-cpu has no release for Python {sys.version_info.major}.{sys.version_info.minor} "
                "yet (only a pre-release): use Python 3.13 or older for this backend"
            )
        return super().install_hint

    def version(self) -> str | None:
        import importlib.metadata

        for dist in ("tensorflow-cpu", "tensorflow"):
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None

    def worker_environment(self, threads: int, scratch_dir: str) -> Mapping[str, str]:
        env = dict(super().worker_environment(threads, scratch_dir))
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        return env

    def configure(self, threads: int) -> None:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)

    def devices(self) -> list[str]:
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        cpus = tf.config.list_logical_devices("CPU")
        return [d.name for d in gpus] + [d.name for d in cpus]

    def prepare(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        import tensorflow as tf

        options.setdefault("jit_compile", True)
        return tf.function(fn, **options)

    def peak_device_memory(self) -> int | None:
        import tensorflow as tf

        if not tf.config.list_logical_devices("GPU"):
            return None
        return tf.config.experimental.get_memory_info("GPU:0")["peak"]
