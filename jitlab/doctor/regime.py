"""The regime: is the time going to overhead, to memory bandwidth or to compute?

Method (see docs/doctor.md):
1. Count the work of one call per ATen operator with a `TorchDispatchMode`: FLOPs from
   `torch.utils.flop_counter`'s formulas (matrix products, convolutions, attention), one FLOP per
   output element for pointwise operators and one per input element for reductions; bytes as the
   sizes of the tensors each operator reads plus those it writes (views move nothing).
2. Roofline per operator with the machine peaks: its device time at best is
   max(flops / peak FLOP/s, bytes / peak bandwidth), and it is compute-bound when the first term is
   larger. Summed: D = Dc + Db.
3. Measure the call's time T1 at the given inputs and T2 at twice their size, calls alternating:
   T1 is the fastest call, T2/T1 the median ratio of the two calls of one round (both saw the same
   machine state), which resists other processes' noise.
   Time that grows with the counted work is device work; time that does not is overhead (Python,
   dispatch, allocation: the essay's "everything else"). With the per-operator dispatch cost o of
   the machine peaks and n operators: T - n*o = F + k*D at both sizes gives k (how far from the peaks
   the work runs) and F. Device time is k*D, but never less than D itself (work cannot beat the
   peaks) nor more than T; it is split between compute and bandwidth as Dc : Db; the rest of T is
   overhead.
4. The verdict is the largest share. The scaling check confirms it when the time ratio T2/T1 lies
   closer to the work ratio D2/D1 for a device-bound verdict, or closer to 1 for overhead.
When the inputs at twice the size do not change the work, step 3 assumes the peaks (k = 1).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from jitlab.doctor.advice import family, suggestion
from jitlab.doctor.context import UserCodeFailed

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext
    from jitlab.machine.peaks import MachinePeaks

# operators that move no data of their own (allocation without touching memory, metadata)
_NO_TRAFFIC = {
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "lift_fresh",
    "detach",
    "alias",
    "_local_scalar_dense",
    "sym_size",
    "sym_numel",
    "sym_stride",
}

MIN_REPEATS = 5
TIME_BUDGET_S = 1.0
MAX_REPEATS = 10_000


@dataclass
class Work:
    """FLOPs and bytes of one call, with the roofline split into compute- and bandwidth-bound time."""

    flops: float = 0.0
    bytes: float = 0.0
    ops: int = 0
    compute_s: float = 0.0  # Dc: roofline time of the compute-bound operators
    bandwidth_s: float = 0.0  # Db: roofline time of the bandwidth-bound operators
    by_op: dict[str, dict[str, float]] = field(default_factory=dict)
    #: summed per-operator dispatch cost from the peaks (a GPU's launch cost for its operators);
    #: None: not counted per operator (callers then use ops x the torch overhead)
    overhead_s: float | None = None
    #: devices the counted operators ran on ("cpu", "cuda:0")
    devices: set[str] = field(default_factory=set)

    @property
    def device_s(self) -> float:
        return self.compute_s + self.bandwidth_s

    def add(
        self,
        name: str,
        flops: float,
        nbytes: float,
        float64: bool,
        peaks: MachinePeaks,
        device: str = "cpu",
        dtype: str | None = None,
        tf32: bool = False,
        family: str = "",
    ) -> None:
        """Count one operator against the peaks of the device it ran on: a GPU's own bandwidth and
        FLOP/s for its dtype (TF32 tensor cores for float32 matrix products when torch allows them),
        the host's for host work."""
        self.flops += flops
        self.bytes += nbytes
        self.ops += 1
        self.devices.add(device)
        flop_rate, byte_rate, launch_s = peaks.device_rates(
            device, dtype or ("float64" if float64 else "float32"), tf32
        )
        per_op = launch_s if launch_s is not None else peaks.overhead_s.get("torch", 0.0)
        self.overhead_s = (self.overhead_s or 0.0) + per_op
        compute = flops / flop_rate
        memory = nbytes / byte_rate
        if compute > memory:
            self.compute_s += compute
        else:
            self.bandwidth_s += memory
        entry = self.by_op.setdefault(name, {"calls": 0, "flops": 0.0, "bytes": 0.0, "family": family})
        entry["calls"] += 1
        entry["flops"] += flops
        entry["bytes"] += nbytes


def _tensors(value: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_leaves

    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


def _nbytes(tensor: Any) -> int:
    return tensor.numel() * tensor.element_size()


def _placement(func: Any, args: tuple, kwargs: dict, out: Any) -> tuple[str, str | None, bool]:
    """(device, compute dtype, TF32 allowed?) of one operator call: where its tensors live, the
    dtype of its first floating-point tensor, and whether a float32 matrix product may use TF32."""
    import torch
    from torch.utils.flop_counter import flop_registry

    tensors = _tensors(out) + _tensors((args, kwargs))
    device = next((str(t.device) for t in tensors if t.device.type != "meta"), "cpu")
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    dtype = next((str(t.dtype).replace("torch.", "") for t in tensors if t.is_floating_point()), None)
    tf32 = (
        device.startswith("cuda")
        and func._overloadpacket in flop_registry
        and torch.get_float32_matmul_precision() != "highest"
    )
    return device, dtype, tf32


def _count(func: Any, args: tuple, kwargs: dict, out: Any) -> tuple[float, float, bool]:
    """(flops, bytes, float64?) of one operator call."""
    import torch
    from torch.utils.flop_counter import flop_registry

    name = func._overloadpacket.__name__
    schema = func._schema
    outputs = _tensors(out)
    writes_args = [
        value
        for argument, value in zip(
            schema.arguments, list(args) + [kwargs.get(a.name) for a in schema.arguments[len(args) :]]
        )
        if argument.alias_info is not None and argument.alias_info.is_write
    ]
    fresh_outputs = (
        [t for ret, t in zip(schema.returns, outputs) if ret.alias_info is None]
        if len(schema.returns) == len(outputs)
        else outputs
    )
    if name in _NO_TRAFFIC or (not fresh_outputs and not writes_args):
        return 0.0, 0.0, False  # views and metadata
    seen: set[int] = set()
    read = 0
    for tensor in _tensors((args, kwargs)):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            read += _nbytes(tensor)
    written = sum(_nbytes(t) for t in fresh_outputs) + sum(_nbytes(t) for t in _tensors(writes_args))
    if func._overloadpacket in flop_registry:
        flops = float(flop_registry[func._overloadpacket](*args, **kwargs, out_val=out))
    elif torch.Tag.pointwise in func.tags:
        flops = float(max((t.numel() for t in outputs), default=0))
    elif torch.Tag.reduction in func.tags:
        flops = float(sum(t.numel() for t in _tensors(args[:1])))
    else:
        flops = 0.0
    float64 = any(t.dtype in (torch.float64, torch.complex128) for t in outputs + _tensors(args))
    return flops, float(read + written), float64


def count_work(call: Callable[[], Any], peaks: MachinePeaks) -> Work:
    """Run `call` once under a counting dispatch mode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    work = Work()

    class Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            flops, nbytes, float64 = _count(func, args, kwargs, out)
            if nbytes or flops:
                device, dtype, tf32 = _placement(func, args, kwargs, out)
                work.add(
                    func._overloadpacket.__name__,
                    flops,
                    nbytes,
                    float64,
                    peaks,
                    device,
                    dtype,
                    tf32,
                    family(func),
                )
            return out

    with Counter():
        call()
    return work


def time_calls(calls: list[Callable[[], Any]], synchronize: Callable[[], None]) -> list[list[float]]:
    """Seconds of each call of each of `calls`, measured in alternation (so that a busy machine
    slows them alike): at least MIN_REPEATS rounds, more while within TIME_BUDGET_S."""
    samples: list[list[float]] = [[] for _ in calls]
    started = time.perf_counter()
    rounds = 0
    while rounds < MIN_REPEATS or (time.perf_counter() - started < TIME_BUDGET_S and rounds < MAX_REPEATS):
        for call, times in zip(calls, samples):
            begin = time.perf_counter()
            call()
            synchronize()
            times.append(time.perf_counter() - begin)
        rounds += 1
    return samples


def time_pair(first: list[float], second: list[float]) -> tuple[float, float]:
    """(T1, T2): T1 is the fastest first call (what the code costs when nothing interferes); T2 is
    T1 times the median ratio of the two calls of one round, which saw the same machine state."""
    ratios = sorted(b / a for a, b in zip(first, second) if a > 0)
    t1 = min(first)
    return t1, t1 * statistics.median(ratios) if ratios else min(second)


@dataclass
class Regime:
    verdict: str
    shares: dict[str, float]
    flops: float
    bytes: float
    ops: int
    time_s: float
    model: dict[str, float]
    efficiency: float | None
    scaling: dict[str, Any]
    peaks: dict[str, Any]
    suggestion: str
    top_ops: list[dict[str, Any]]
    #: the devices whose peaks the roofline used ("cpu", "cuda:0 (NVIDIA H100 80GB HBM3)")
    devices: list[str] = field(default_factory=list)
    #: whose peaks the efficiency is measured against: "the GPU's", "the host's" (a CUDA device
    #: with no GPU peaks measured) or "the machine's"
    peaks_owner: str = "the machine's"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def shares_from(
    t1: float, t2: float | None, w1: Work, w2: Work | None, overhead_per_op: float
) -> tuple[dict[str, float], float | None, str]:
    """(shares, efficiency k^-1, how) from the two timings and the counted work (see module doc)."""
    t1 = max(t1, 1e-9)  # a timer tick, so that an empty function divides safely
    o1 = w1.overhead_s if w1.overhead_s is not None else w1.ops * overhead_per_op
    usable = t2 is not None and w2 is not None and w2.device_s > 1.2 * w1.device_s > 0
    if usable:
        assert t2 is not None and w2 is not None
        o2 = w2.overhead_s if w2.overhead_s is not None else w2.ops * overhead_per_op
        k = ((t2 - o2) - (t1 - o1)) / (w2.device_s - w1.device_s)
        # the counted work cannot run faster than the peaks: min(D1, T1) is a floor for device time
        device = min(max(k * w1.device_s, w1.device_s, 0.0), t1)
        how = "fit of the two sizes: time that grows with the counted work is device time"
    else:
        k = 1.0
        device = min(w1.device_s, t1)
        how = "no usable scaling: device time assumed at the machine peaks"
    split = (w1.compute_s / w1.device_s) if w1.device_s > 0 else 0.0
    shares = {
        "overhead": max(t1 - device, 0.0) / t1,
        "bandwidth": device * (1.0 - split) / t1,
        "compute": device * split / t1,
    }
    efficiency = (1.0 / k) if usable and k > 0 else None
    return shares, efficiency, how


def diagnose_regime(ctx: DoctorContext, peaks: MachinePeaks) -> Regime:
    import torch

    def sync() -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    inputs = ctx.inputs
    with_stdout = lambda i: lambda: ctx.call(i, during="measuring the regime")  # noqa: E731
    work1 = count_work(with_stdout(inputs), peaks)
    scaled, how_scaled = ctx.scaled_inputs()
    t2 = work2 = None
    function = ctx.target.function

    def direct(i: Any) -> Callable[[], Any]:
        # timed calls go straight to the user's function: the per-call stdout redirect of ctx.call
        # costs microseconds, as much as a torch operator, and would read as framework overhead
        return lambda: function(*i.args, **i.kwargs)

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        try:
            if scaled is not None:
                work2 = count_work(with_stdout(scaled), peaks)
                t1, t2 = time_pair(*time_calls([direct(inputs), direct(scaled)], sync))
            else:
                t1 = min(time_calls([direct(inputs)], sync)[0])
        except UserCodeFailed:
            raise
        except Exception as exc:
            raise UserCodeFailed(ctx.target.spec, exc, "measuring the regime") from exc
    overhead_per_op = peaks.overhead_s.get("torch", 0.0)
    shares, efficiency, how = shares_from(t1, t2, work1, work2, overhead_per_op)
    verdict = max(shares, key=lambda key: shares[key])
    scaling: dict[str, Any] = {"input_scale": 2, "inputs": how_scaled, "method": how}
    if t2 is not None and work2 is not None:
        time_ratio = t2 / t1
        work_ratio = work2.device_s / work1.device_s if work1.device_s > 0 else 1.0
        expected = 1.0 if verdict == "overhead" else work_ratio
        other = work_ratio if verdict == "overhead" else 1.0
        scaling.update(
            time_s=t2,
            time_ratio=time_ratio,
            work_ratio=work_ratio,
            confirms=abs(math.log(time_ratio / expected)) <= abs(math.log(time_ratio / other))
            if work_ratio > 1.05
            else None,
        )
        if work_ratio > 1.05 and time_ratio > 2 * work_ratio:
            scaling["note"] = (
                "time grew much faster than the counted work: a cache or a thread pool switching on at "
                "the larger size (intra-op threads waiting for busy cores), or operators the counter "
                "does not model (sorting, topk)"
            )
    else:
        scaling.update(time_s=None, time_ratio=None, work_ratio=None, confirms=None)
    top = sorted(work1.by_op.items(), key=lambda item: -(item[1]["bytes"] + item[1]["flops"]))[:5]
    return Regime(
        verdict=verdict,
        shares=shares,
        flops=work1.flops,
        bytes=work1.bytes,
        ops=work1.ops,
        time_s=t1,
        model={
            "compute_s": work1.compute_s,
            "bandwidth_s": work1.bandwidth_s,
            "overhead_s": work1.overhead_s if work1.overhead_s is not None else work1.ops * overhead_per_op,
        },
        efficiency=efficiency,
        scaling=scaling,
        peaks={
            "bandwidth_bytes_per_s": peaks.bandwidth_bytes_per_s,
            "flops_f32": peaks.flops_f32,
            "flops_f64": peaks.flops_f64,
            "overhead_s_per_torch_op": overhead_per_op,
            "measured_at": peaks.measured_at,
            "gpus": [_gpu_peaks_summary(g) for g in peaks.gpus],
        },
        devices=[_device_label(d, peaks) for d in sorted(work1.devices)],
        peaks_owner=_peaks_owner(work1.devices, peaks),
        suggestion=suggestion(verdict, work1.by_op),
        top_ops=[{"op": name, **{k: v for k, v in entry.items()}} for name, entry in top],
    )


def _gpu_peaks_summary(gpu: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": gpu.get("index"),
        "name": gpu.get("name"),
        "bandwidth_bytes_per_s": gpu.get("bandwidth_bytes_per_s"),
        "flops": gpu.get("flops"),
        "launch_s": gpu.get("launch_s"),
    }


def _cuda_index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def _peaks_owner(devices: set[str], peaks: MachinePeaks) -> str:
    """Whose peaks the roofline used: a GPU's only where every CUDA device has measured peaks."""
    cuda = [d for d in devices if d.startswith("cuda")]
    if not cuda:
        return "the machine's"
    if all(peaks.gpu(_cuda_index(d)) is not None for d in cuda):
        return "the GPU's"
    return "the host's"


def _device_label(device: str, peaks: MachinePeaks) -> str:
    """The device and whose peaks stood for it."""
    if not device.startswith("cuda"):
        return device
    gpu = peaks.gpu(_cuda_index(device))
    if gpu is None:
        return f"{device} (no GPU peaks measured: the host's peaks were used; run `jitlab machine --refresh`)"
    return f"{device} ({gpu.get('name')})"
