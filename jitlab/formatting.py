"""Human-readable numbers: times with units, byte counts, errors in scientific notation.

The reports, compare, history, doctor and the command line all print numbers, so the formatting
sits below all of them (it imports nothing of jitlab) rather than in one of the folders that use it."""

from __future__ import annotations


def seconds(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    value = float(f"{value:.3g}")  # round first, so 0.0009996 s reads "1 ms", not "1e+03 µs"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(value) >= scale or unit == "ns":
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} s"


def nbytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{value} B"


def sci(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.2g}"


def size_label(n: int) -> str:
    """10000 -> '1e4'; sizes that are not round powers of ten are printed in full."""
    exponent = len(str(n)) - 1
    if n == 10**exponent and exponent >= 3:
        return f"1e{exponent}"
    mantissa = n / 10**exponent
    if exponent >= 4 and mantissa == int(mantissa):
        return f"{int(mantissa)}e{exponent}"
    return str(n)


def params_label(params: dict) -> str:
    """{'k': 4, 'variant': 'naive'} -> 'k=4, variant=naive' (sorted, so equal params read the same)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def si(value: float, unit: str = "") -> str:
    """1.23e6 -> '1.23 M' + unit: the prefix for counts and rates (FLOP, B, op/s)."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip()
