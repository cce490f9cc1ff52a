"""The backend registry: names to backend objects, filled by a decorator that rejects duplicates.

Third-party code adds a backend the same way the built-in ones are added:
`@register_backend class MyBackend(Backend): name = "mine" ...`.
"""

from __future__ import annotations

from jitlab.backends.base import Backend
from jitlab.errors import UserError

_BACKENDS: dict[str, Backend] = {}


def register_backend(cls: type[Backend]) -> type[Backend]:
    name = cls.name
    if name in _BACKENDS:
        raise ValueError(f"a backend named {name!r} is registered already ({_BACKENDS[name]!r})")
    _BACKENDS[name] = cls()
    return cls


def backend_names() -> list[str]:
    _load_builtins()
    return list(_BACKENDS)


def all_backends() -> list[Backend]:
    _load_builtins()
    return list(_BACKENDS.values())


def backend_rank(name: str) -> int:
    """Position of a backend in tables: registration order, unknown names last."""
    names = backend_names()
    return names.index(name) if name in names else len(names)


def get_backend(name: str) -> Backend:
    _load_builtins()
    try:
        return _BACKENDS[name]
    except KeyError:
        known = ", ".join(_BACKENDS)
        raise UserError(f"unknown backend {name!r}: choose from {known}") from None


def _load_builtins() -> None:
    # Imported here, not at module import, so the registry module stays importable on its own.
    # This closes the one import cycle jitlab allows (tests/test_import_cycles.py): each backend module
    # imports the registry to register itself with `register_backend`, as a third-party backend does,
    # and the registry imports the built-in ones on the first lookup, so that listing or choosing a
    # backend never depends on who imported what first.
    # The order is the order of tables: interpreters first, then compilers by framework.
    import jitlab.backends.python_backend  # noqa: F401,I001
    import jitlab.backends.numpy_backend  # noqa: F401
    import jitlab.backends.numba_backend  # noqa: F401
    import jitlab.backends.jax_backend  # noqa: F401
    import jitlab.backends.tensorflow_backend  # noqa: F401
    import jitlab.backends.torch_backend  # noqa: F401
    import jitlab.backends.triton_backend  # noqa: F401
