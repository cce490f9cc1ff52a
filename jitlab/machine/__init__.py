"""Machine peaks: what this machine can do at best (memory bandwidth, FLOP/s, per-call overhead of
each framework), measured once and cached, so that measured times can be read as a share of a peak."""

from jitlab.machine.peaks import MachinePeaks, load_peaks

__all__ = ["MachinePeaks", "load_peaks"]
