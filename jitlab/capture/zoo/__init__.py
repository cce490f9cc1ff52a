"""The model zoo of `jitlab capture --zoo`: models people call from installed libraries.

Each zoo is a corpus file of this folder (a module-level `CORPUS`, like any corpus), so it runs
through the same workers, comparisons and tables as the repository's corpus:

- `transformers` (transformers_zoo.py): PyTorch's Dynamo Hugging Face benchmark models and the
  vision models of transformers, built from small configs;
- `timm` (timm_zoo.py): PyTorch's Dynamo timm benchmark models, smallest variants;
- `torchvision` (torchvision_zoo.py): TorchBench's torchvision classification models and newer ones.

All are built with random weights; nothing is downloaded. The libraries come with the `zoo` extra
(`pip install 'jitlab[zoo]'`); `zoo_paths` says in one line what is missing or does not load.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from jitlab.errors import UserError

HERE = Path(__file__).resolve().parent

#: zoo name -> (corpus file, the libraries it imports, in import order)
ZOOS: dict[str, tuple[str, tuple[str, ...]]] = {
    "transformers": ("transformers_zoo.py", ("transformers",)),
    "timm": ("timm_zoo.py", ("torchvision", "timm")),
    "torchvision": ("torchvision_zoo.py", ("torchvision",)),
}


#: libraries whose registry wheels need the CUDA build of torch (pyproject.toml's zoo extra)
NEEDS_CUDA_TORCH = ("torchvision", "timm")

#: set before transformers, timm or huggingface_hub are imported (they read them at import time)
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def no_downloads() -> None:
    """Switch the Hugging Face Hub off in this process: a zoo model that tried to fetch anything
    would fail instead of downloading (the factories name no checkpoint, so none should)."""
    os.environ.update(OFFLINE_ENV)


def parse_zoos(text: str) -> list[str]:
    """Zoo names from `--zoo a,b` ("all" for every zoo), in the order given, without repeats."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(ZOOS)
    unknown = [n for n in names if n not in ZOOS]
    if unknown or not names:
        raise UserError(
            f"unknown zoo {', '.join(unknown) or repr(text)}: choose from {', '.join(ZOOS)} (or all)"
        )
    return list(dict.fromkeys(names))


def library_problem(library: str) -> str | None:
    """Why `library` cannot be used here (not installed, or fails to import), or None."""
    try:
        importlib.import_module(library)
    except ModuleNotFoundError as exc:
        if exc.name == library and library in NEEDS_CUDA_TORCH and sys.version_info < (3, 12):
            return (
                f"{library} is not installed: the zoo extra installs it on Python 3.12 and 3.13 only, where "
                "constraints.txt gives the torch build its wheels need; run this zoo there"
            )
        if exc.name == library:
            return f"{library} is not installed: pip install 'jitlab[zoo]'"
        return f"{library} does not import: {exc}"
    except (
        Exception
    ) as exc:  # e.g. torchvision built for another torch: `operator torchvision::nms does not exist`
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return (
            f"{library} does not load with this torch ({type(exc).__name__}: {message}); its wheel must "
            "match the installed torch (the registry's torchvision needs the CUDA build of torch, which "
            "constraints.txt installs on Python 3.12 and 3.13)"
        )
    return None


def zoo_paths(names: list[str]) -> list[str]:
    """The corpus files of these zoos, after checking that their libraries load."""
    no_downloads()
    paths = []
    for name in names:
        filename, libraries = ZOOS[name]
        for library in libraries:
            problem = library_problem(library)
            if problem is not None:
                raise UserError(f"zoo {name}: {problem}")
        paths.append(str(HERE / filename))
    return paths
