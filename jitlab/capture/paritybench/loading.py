"""Importing a ParityBench file in the worker that runs its cases, and building a case from it.

Every generated file begins with one line importing the libraries its crawler saw across all
projects (matplotlib, pandas, scipy, sklearn, tensorflow, torchaudio, torchtext, torchvision, ...),
though almost every program uses none of them. A library of that set that is not installed here is
replaced by a stand-in: importing it (and its submodules, and names from it) works, and calling
anything of it raises ModuleNotFoundError naming the library. So is a module of another package that
only wraps such a library: `torch.utils.tensorboard` when TensorBoard is missing (about 200 of the
1,500 files import its SummaryWriter for their training loop). TensorFlow is always a stand-in:
importing it costs about 15 s and a gigabyte in every worker, for the few programs that use it.
A program that really uses a stand-in library therefore fails eagerly and is left out, like every
program that does not run eagerly here.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

from jitlab.userfiles import import_file

#: libraries of the generated files' common import line that may be replaced by stand-ins
OPTIONAL_LIBRARIES = ("matplotlib", "pandas", "scipy", "sklearn", "tensorboard", "tensorflow", "torchaudio",
                      "torchtext", "torchvision")  # fmt: skip
ALWAYS_STANDIN = frozenset({"tensorflow"})
#: modules of installed packages that import an optional library at their top, stood in with it
WRAPPERS = {"tensorboard": ("torch.utils.tensorboard",)}


class StandIn:
    """Any name read from a stand-in library: more names can be read from it; calling it raises."""

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __getattr__(self, name: str) -> StandIn:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return StandIn(f"{self._qualname}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        root = self._qualname.split(".")[0]
        raise ModuleNotFoundError(
            f"{self._qualname}: {root} is a stand-in in jitlab's ParityBench runs (not installed, or "
            "too costly to import in every worker)",
            name=root,
        )

    def __repr__(self) -> str:
        return f"<stand-in {self._qualname}>"


class StandInModule(types.ModuleType):
    """A stand-in library or submodule; `__path__` makes `import lib.sub` reach the finder."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []

    def __getattr__(self, name: str) -> StandIn:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return StandIn(f"{self.__name__}.{name}")


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the modules named in `roots` (and their submodules) as stand-ins, before any other
    finder. A root is a dotted name: a library (`sklearn`) or a module in another package."""

    def __init__(self, roots: frozenset[str]) -> None:
        self.roots = roots

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not any(fullname == root or fullname.startswith(root + ".") for root in self.roots):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        return StandInModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def standin_roots() -> frozenset[str]:
    """The modules that are stand-ins in this process: TensorFlow, the optional libraries that are
    missing, and the modules that wrap a missing one."""
    missing = {lib for lib in OPTIONAL_LIBRARIES if importlib.util.find_spec(lib) is None}
    stood_in = missing | ALWAYS_STANDIN
    wrappers = {module for lib in stood_in for module in WRAPPERS.get(lib, ())}
    return frozenset(stood_in | wrappers)


@functools.cache
def prepare() -> None:
    """Make `_paritybench_helpers` and the stand-ins importable in this process (once)."""
    from jitlab.capture.paritybench import helpers  # imports torch: only in the worker that runs a case

    roots = frozenset(r for r in standin_roots() if r not in sys.modules)  # one imported already stays
    sys.meta_path.insert(0, _StandInFinder(roots))
    sys.modules["_paritybench_helpers"] = helpers


def load(path: str) -> types.ModuleType:
    """The generated file at `path`, imported once per process."""
    prepare()
    return import_file(Path(path), "ParityBench file", prefix="_jitlab_pb")


def _entry(path: str, index: int) -> tuple[Any, Any, Any]:
    module = load(path)
    testcases = getattr(module, "TESTCASES", [])
    if index >= len(testcases):
        raise LookupError(f"{path} has {len(testcases)} TESTCASES, not {index + 1}: the file changed")
    cls, init_args, forward_args, *_ = testcases[index]
    return cls, init_args, forward_args


def make_model(path: str, index: int) -> Any:
    """The module of TESTCASES[index], built from its init arguments and put in eval mode (as
    ParityBench evaluates it)."""
    cls, init_args, _ = _entry(path, index)
    args, kwargs = init_args()
    model = cls(*args, **kwargs)
    if hasattr(model, "eval"):
        model.eval()
    return model


def make_inputs(path: str, index: int) -> tuple[tuple, dict]:
    """The forward arguments of TESTCASES[index] as (args, kwargs)."""
    _, _, forward_args = _entry(path, index)
    args, kwargs = forward_args()
    return tuple(args), dict(kwargs)
