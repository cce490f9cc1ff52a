"""Kernels that must live in real source files (Triton compiles from the function's source)."""
