"""jitlab: a lab for JIT compilers in numeric and deep-learning Python.

Public API: workloads (`Workload`, `Prepared`, `Context`, `Case`), backends (`Backend`,
`register_backend`), and the decorators for scripts (`timed`, `accuracy`).
"""

from jitlab.backends import Backend, register_backend
from jitlab.decorators import accuracy, timed
from jitlab.workloads import Case, Context, Prepared, Workload

__version__ = "0.1.0"

__all__ = ["Backend", "Case", "Context", "Prepared", "Workload", "accuracy", "register_backend", "timed"]
