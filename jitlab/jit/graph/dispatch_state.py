"""torch's state that decides, below the operations jitlab.jit records, how they compute: autocast,
and the flags that choose kernels and their precision (`torch.nn.attention.sdpa_kernel`,
`torch.backends.mkldnn.flags`, cuDNN's and cuBLAS's TF32 and reduced-precision switches,
deterministic algorithms).

A graph records `linear(x, w)` or `scaled_dot_product_attention(q, k, v)`, not the cast to bfloat16
autocast makes or the kernel a flag picks. A call that changes this state inside (`with
sdpa_kernel(SDPBackend.MATH)`) is run natively by torch's own Python, unseen by the capture, so its
graph replayed the operations under the state of the call's start: with the flash kernel where eager
code used the math one (1.3e-6 apart). The recorder compares this state before each operation with
the call's start (graph/recorder.py) and refuses the capture where it changed. `with
torch.autocast(...)` is the exception: its regions are recorded as nodes (graph/autocast_nodes.py),
and autocast's state is compared with the one they leave."""

from __future__ import annotations

from collections.abc import Callable

import torch

from jitlab.jit.graph.autocast_nodes import autocast_state


def _flag_getters() -> tuple[tuple[str, Callable[[], object]], ...]:
    """torch._C's getters of kernel-choosing flags that this torch has and that take no argument."""
    names = (
        "_get_mkldnn_enabled",
        "_get_mkldnn_deterministic",
        "_get_onednn_allow_tf32",
        "_get_cpu_allow_fp16_reduced_precision_reduction",
        "_get_cudnn_enabled",
        "_get_cudnn_allow_tf32",
        "_get_cudnn_deterministic",
        "_get_cublas_allow_tf32",
        "_get_cublas_allow_fp16_reduced_precision_reduction",
        "_get_cublas_allow_bf16_reduced_precision_reduction",
        "_get_cublas_allow_fp16_accumulation",
        "_get_flash_sdp_enabled",
        "_get_mem_efficient_sdp_enabled",
        "_get_math_sdp_enabled",
        "_get_cudnn_sdp_enabled",
        "_get_overrideable_sdp_enabled",
        "_get_fa3_sdp_enabled",
        "_get_math_sdp_allow_fp16_bf16_reduction",
        "_get_deterministic_algorithms",
    )
    found = []
    for name in names:
        getter = getattr(torch._C, name, None)
        if getter is None:
            continue
        try:
            getter()
        except Exception:  # noqa: S112 -- a getter this build does not support is not a flag to compare
            continue
        found.append((name[len("_get_") :], getter))
    return tuple(found)


_GETTERS = _flag_getters()


def kernel_flags() -> tuple[object, ...]:
    """The kernel-choosing flags as they are now (cheap C getters: read before each recorded
    operation while capturing, never on a cache hit)."""
    return tuple(getter() for _name, getter in _GETTERS)


def changed_state(
    start_flags: tuple[object, ...], autocast_expected: tuple[object, ...] | None = None
) -> str | None:
    """What of this state differs now from what the capture expects, or None: autocast is on with no
    region recorded (the call's start is guarded to have it off), or its state is not the one the
    regions recorded (`autocast_expected`, graph/autocast_nodes.py) leave; or which kernel flags
    differ from `start_flags` (the call's start)."""
    if autocast_expected is None:
        if torch._C._is_any_autocast_enabled():
            return "autocast (switched on inside the call other than by `with torch.autocast(...)`)"
    elif autocast_state() != autocast_expected:
        return "autocast (its state changed inside a `with torch.autocast(...)` other than by the region)"
    now = kernel_flags()
    if now == start_flags:
        return None
    changed = [name for (name, _getter), a, b in zip(_GETTERS, start_flags, now, strict=True) if a != b]
    return f"torch's kernel flags ({', '.join(changed)}; sdpa_kernel, backends' flags)"
