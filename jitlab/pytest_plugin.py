"""The pytest plugin: time functions inside a project's own test suite with the jitlab engine.

    def test_pi_numba(jitlab_bench):
        estimate = jitlab_bench(estimate_pi, 10**6, backend="numba", jit=True, size=10**6)
        assert abs(estimate - math.pi) < 0.01

Each call measures like `jitlab run` does (first call apart, calibrated blocks, warm-up, sampling to a
confidence target, the backend's synchronisation inside the timed region) but in the test process,
and stores the cell into the results store: one run per pytest session, created at the first
measurement. `jitlab compare`, `jitlab report` and `jitlab history` then work on it like on any run.

Registered through the `pytest11` entry point, so it is active wherever jitlab is installed; jitlab
itself is imported only when a test asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from jitlab.store import CellRecord, Store

DEFAULT_BUDGET_S = 1.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jitlab", "jitlab benchmarks (the jitlab_bench fixture)")
    group.addoption(
        "--jitlab-store",
        default=None,
        metavar="PATH",
        help="results store for jitlab_bench (default: $JITLAB_STORE or .jitlab/results.sqlite)",
    )
    group.addoption(
        "--jitlab-budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help=f"seconds of steady-state sampling per jitlab_bench call at most (default {DEFAULT_BUDGET_S:g})",
    )


class BenchSession:
    """The session's run in the store, created when the first cell is measured."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.store_path: str | None = config.getoption("--jitlab-store")
        self.budget_s: float = config.getoption("--jitlab-budget")
        if self.budget_s <= 0:
            raise pytest.UsageError(f"--jitlab-budget {self.budget_s:g} must be positive")
        self.store: Store | None = None
        self.run_id: int | None = None
        self.keys: set[tuple[str, str, int, str]] = set()
        self.cells = 0

    def policy(self):
        from jitlab.engine.spec import TimingPolicy

        return TimingPolicy(budget_s=self.budget_s)

    def ensure_run(self) -> tuple[Store, int]:
        if self.store is None or self.run_id is None:
            from jitlab.backends.base import cpu_count
            from jitlab.store import Store
            from jitlab.store.machine import machine_info

            root = Path(str(self.config.rootpath))
            self.store = Store(self.store_path)
            self.run_id = self.store.create_run(
                target=f"pytest:{root.name}",
                workloads=[],
                backends=[],
                sizes=None,
                options={"policy": self.policy().__dict__, "threads": cpu_count(), "source": "pytest"},
                machine=machine_info(root),
            )
        return self.store, self.run_id

    def save(
        self, workload: str, backend: str, size: int, params: dict[str, Any], result: dict[str, Any]
    ) -> CellRecord:
        from jitlab.store.sqlite_store import params_key

        key = (workload, backend, size, params_key(params))
        if key in self.keys:
            raise ValueError(
                f"jitlab_bench measured {workload!r} on {backend} at size {size} with {params} already in "
                "this session: pass name=, size= or params= to tell the measurements apart"
            )
        store, run_id = self.ensure_run()
        record = store.save_cell(run_id, workload, backend, size, params, result)
        self.keys.add(key)
        self.cells += 1
        return record

    def finish(self, interrupted: bool) -> None:
        if self.store is not None and self.run_id is not None:
            self.store.set_run_status(self.run_id, "interrupted" if interrupted else "finished")


SESSION_KEY = pytest.StashKey[BenchSession]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SESSION_KEY] = BenchSession(config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    bench = session.config.stash.get(SESSION_KEY, None)
    if bench is not None:
        bench.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    bench = config.stash.get(SESSION_KEY, None)
    if bench is not None and bench.run_id is not None and bench.store is not None:
        terminalreporter.write_line(
            f"jitlab: {bench.cells} cells stored as run {bench.run_id} in {bench.store.path} "
            f"(`jitlab show {bench.run_id} --store {bench.store.path}`)"
        )


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _scalar(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class Bench:
    """The `jitlab_bench` fixture: call it with a function and its arguments to time it."""

    def __init__(self, session: BenchSession, node: pytest.Item) -> None:
        self._session = session
        self._node = node
        #: the stored cell of the last call
        self.record: CellRecord | None = None

    def _default_params(self) -> dict[str, Any]:
        callspec = getattr(self._node, "callspec", None)
        if callspec is None:
            return {}
        return {k: _jsonable(v) for k, v in callspec.params.items() if k not in ("backend", "size")}

    def __call__(
        self,
        fn: Callable[..., Any],
        *args: Any,
        backend: str = "python",
        size: int = 1,
        name: str | None = None,
        params: dict[str, Any] | None = None,
        jit: bool = False,
        reference: float | None = None,
    ) -> Any:
        """Time `fn(*args)` on `backend` and store it; return the first call's result.

        `jit=True` compiles `fn` with the backend first (numba.njit, jax.jit, torch.compile...).
        The cell is named `name` (default: the test function), at `size` (default 1), with `params`
        (default: the test's parametrisation other than `backend` and `size`). With `reference`,
        the absolute error of the result is stored too.
        """
        from jitlab.backends import get_backend
        from jitlab.engine.timing import measure
        from jitlab.engine.worker import peak_rss_bytes

        session = self._session
        workload = name or getattr(self._node, "originalname", None) or self._node.name
        cell_params = (
            self._default_params() if params is None else {k: _jsonable(v) for k, v in params.items()}
        )
        if int(size) != size or size < 1:
            raise ValueError(f"jitlab_bench size={size!r} must be a positive integer")
        size = int(size)
        chosen = get_backend(backend)  # unknown names raise, listing the known ones
        if not chosen.is_available():
            reason = f"{backend} is not installed: {chosen.install_hint}"
            self.record = session.save(
                workload, backend, size, cell_params, {"status": "unavailable", "reason": reason}
            )
            pytest.skip(reason)
        try:
            call_fn = chosen.prepare(fn) if jit else fn
            timing = measure(
                lambda: call_fn(*args), chosen.synchronize, session.policy(), chosen.asynchronous
            )
        except Exception as exc:
            failure = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}".strip()}
            self.record = session.save(workload, backend, size, cell_params, failure)
            raise
        value = chosen.to_host(timing.first_value)
        scalar = _scalar(value)
        errors = [abs(scalar - reference)] if reference is not None and scalar is not None else []
        result = {
            "status": "ok",
            "first_call_s": timing.first_call_s,
            "loops": timing.loops,
            "samples_s": timing.samples_s,
            "dispatch_s": timing.dispatch_s,
            "values": [scalar],
            "errors": errors,
            "warnings": timing.warnings,
            "peak_rss_bytes": peak_rss_bytes(),
            "device": chosen.device(),
            "backend_version": chosen.version(),
        }
        self.record = session.save(workload, backend, size, cell_params, result)
        return timing.first_value


@pytest.fixture
def jitlab_bench(request: pytest.FixtureRequest) -> Bench:
    """Time a function through the jitlab engine and store it in this session's jitlab run."""
    return Bench(request.config.stash[SESSION_KEY], request.node)
