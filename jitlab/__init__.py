"""jitlab: a lab for JIT compilers in numeric and deep-learning Python.

Public API: workloads (`Workload`, `Prepared`, `Context`, `Case`), backends (`Backend`,
`register_backend`), and the decorators for scripts (`timed`, `accuracy`).
"""

from jitlab.backends import Backend, register_backend
from jitlab.decorators import accuracy, timed
from jitlab.workloads import Case, Context, Prepared, Workload

__version__ = "0.1.0"


def __getattr__(name: str):
    # `jit` (torch), `load` and `notebook` (pandas, jinja2) are imported on first use: `import jitlab`
    # stays light, and worker processes do not import frameworks they do not measure.
    if name == "notebook":
        import importlib

        return importlib.import_module("jitlab.notebook")
    if name == "jit":
        from jitlab.jit import jit

        return jit
    if name == "load":
        from jitlab.notebook import load

        return load
    raise AttributeError(f"module 'jitlab' has no attribute {name!r}")


__all__ = [
    "Backend",
    "Case",
    "Context",
    "Prepared",
    "Workload",
    "accuracy",
    "jit",
    "load",
    "notebook",
    "register_backend",
    "timed",
]
