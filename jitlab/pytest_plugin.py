"""The pytest plugin: time functions inside a project's own test suite with the jitlab engine.

    def test_pi_numba(jitlab_bench):
        estimate = jitlab_bench(estimate_pi, 10**6, backend="numba", jit=True, size=10**6)
        assert abs(estimate - math.pi) < 0.01

Each call measures like `jitlab run` does (first call apart, calibrated blocks, warm-up, sampling to a
confidence target, the backend's synchronisation inside the timed region) but in the test process,
and stores the cell into the results store: one run per pytest session, created at the first
measurement. `jitlab compare`, `jitlab report` and `jitlab history` then work on it like on any run.

The options follow pytest-benchmark's: `--jitlab-compare RUN` compares the session's run with a
stored one at the end, `--jitlab-compare-fail PCT` fails the session when a cell is significantly
slower by more than PCT %, `--jitlab-json FILE` writes the run document (as `jitlab show --json`),
`--jitlab-disable` calls each benchmarked function once as a plain test. Peak memory is measured
per call: the process's high-water mark is reset before the measurement (Linux), so a test is not
charged with the memory of the tests before it.

Registered through the `pytest11` entry point, so it is active wherever jitlab is installed; jitlab
itself is imported only when a test asks for the fixture.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from jitlab.compare.runs import CellComparison, RunComparison
    from jitlab.process_result import CellResult
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
    group.addoption(
        "--jitlab-compare",
        default=None,
        metavar="RUN",
        help="at the end, compare this session's run with stored run RUN (a number, a UUID prefix, or 'last': the newest "
        "earlier test-suite run in the store)",
    )
    group.addoption(
        "--jitlab-compare-fail",
        type=float,
        default=None,
        metavar="PCT",
        help="with --jitlab-compare: fail the session if a cell is significantly slower by more than PCT %%",
    )
    group.addoption(
        "--jitlab-json",
        default=None,
        metavar="FILE",
        help="write the session's run as JSON (as `jitlab show --json`)",
    )
    group.addoption(
        "--jitlab-disable",
        action="store_true",
        default=False,
        help="call each benchmarked function once, as a plain test: nothing is timed or stored",
    )
    group.addoption(
        "--jitlab-measure",
        choices=("wall", "instructions"),
        default="wall",
        help="wall: time the calls; instructions: count them under Valgrind, which load does not change "
        "(the session restarts itself under Valgrind's Callgrind)",
    )
    group.addoption(
        "--jitlab-machine",
        default=None,
        metavar="NAME",
        help="name this machine for comparisons and history (default $JITLAB_MACHINE)",
    )


class BenchSession:
    """The session's run in the store, created when the first cell is measured."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.store_path: str | None = config.getoption("--jitlab-store")
        self.budget_s: float = config.getoption("--jitlab-budget")
        if self.budget_s <= 0:
            raise pytest.UsageError(f"--jitlab-budget {self.budget_s:g} must be positive")
        self.compare_to: str | None = config.getoption("--jitlab-compare")
        self.compare_fail: float | None = config.getoption("--jitlab-compare-fail")
        self.json_path: str | None = config.getoption("--jitlab-json")
        self.disabled: bool = config.getoption("--jitlab-disable")
        self.machine_name: str | None = config.getoption("--jitlab-machine")
        self.measure: str = config.getoption("--jitlab-measure")
        if self.compare_fail is not None and self.compare_to is None:
            raise pytest.UsageError(
                "--jitlab-compare-fail needs --jitlab-compare RUN: the run to compare with"
            )
        if self.compare_fail is not None and self.compare_fail < 0:
            raise pytest.UsageError(
                f"--jitlab-compare-fail {self.compare_fail:g} is negative: give a percentage"
            )
        if self.disabled and (self.compare_to or self.json_path):
            raise pytest.UsageError(
                "--jitlab-disable measures nothing: drop --jitlab-compare and --jitlab-json"
            )
        self.store: Store | None = None
        self.run_id: int | None = None
        self.keys: set[tuple[str, str, int, str]] = set()
        self.cells = 0
        #: filled at the end of the session with --jitlab-compare
        self.comparison: RunComparison | None = None
        self.baseline_id: int | None = None
        self.regressions: list[CellComparison] = []
        self.problems: list[str] = []
        self.json_written: Path | None = None

    def policy(self):
        from jitlab.engine.spec import TimingPolicy

        return TimingPolicy(budget_s=self.budget_s, measure=self.measure)

    def ensure_run(self) -> tuple[Store, int]:
        if self.store is None or self.run_id is None:
            from jitlab.backends.base import cpu_count
            from jitlab.store import Store
            from jitlab.store.machine import machine_info
            from jitlab.store.run_options import RunOptions

            root = Path(str(self.config.rootpath))
            self.store = Store(self.store_path)
            self.run_id = self.store.create_run(
                target=self.target,
                workloads=[],
                backends=[],
                sizes=None,
                options=RunOptions(
                    policy=self.policy().__dict__, threads=cpu_count(), source="pytest"
                ).to_json(),
                machine=machine_info(root, name=self.machine_name),
            )
        return self.store, self.run_id

    @property
    def target(self) -> str:
        return f"pytest:{Path(str(self.config.rootpath)).name}"

    def save(
        self, workload: str, backend: str, size: int, params: dict[str, Any], result: CellResult
    ) -> CellRecord:
        from jitlab.store.database import params_key

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
            if self.compare_to is not None:
                self.compare()
            if self.json_path:
                self.write_json()
        elif self.compare_to is not None or self.json_path:
            self.problems.append("no jitlab_bench cell was measured: nothing to compare or write")

    def resolve_baseline(self) -> int | None:
        assert self.store is not None
        if self.compare_to == "last":
            earlier = [
                r for r in self.store.runs() if r.target.startswith("pytest:") and r.run_id != self.run_id
            ]
            if not earlier:
                self.problems.append(f"--jitlab-compare last: no earlier test-suite run in {self.store.path}")
                return None
            return earlier[-1].run_id
        from jitlab.errors import UserError

        try:
            return self.store.resolve_run(str(self.compare_to))  # a number or the start of a UUID
        except UserError as exc:
            self.problems.append(f"--jitlab-compare: {exc}")
            return None

    def compare(self) -> None:
        from jitlab.compare.gate import regressions_in
        from jitlab.compare.runs import compare_runs
        from jitlab.errors import UserError

        assert self.store is not None and self.run_id is not None
        baseline = self.resolve_baseline()
        if baseline is None:
            return
        try:
            self.comparison = compare_runs(self.store, baseline, self.run_id)
            if self.compare_fail is not None:
                self.regressions = regressions_in(self.comparison, self.compare_fail)
        except UserError as exc:
            self.problems.append(f"--jitlab-compare: {exc}")
            return
        self.baseline_id = baseline

    def write_json(self) -> None:
        from jitlab.report.envelope import envelope, run_machines
        from jitlab.report.export import run_json

        assert self.store is not None and self.run_id is not None
        run = self.store.run(self.run_id)
        options = {
            name: self.config.getoption(name)
            for name in ("--jitlab-store", "--jitlab-budget", "--jitlab-compare", "--jitlab-compare-fail")
        }
        cells = self.store.cells(self.run_id)
        document = envelope(
            "run", run_json(run, cells), options, machine=run.machine, machines=run_machines(run, cells)
        )
        path = Path(str(self.json_path))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(document, indent=1))
        except OSError as exc:
            self.problems.append(f"--jitlab-json: cannot write {path}: {exc.strerror}")
            return
        self.json_written = path


SESSION_KEY = pytest.StashKey[BenchSession]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SESSION_KEY] = BenchSession(config)
    if config.getoption("--jitlab-measure") == "instructions" and not config.getoption("--jitlab-disable"):
        restart_under_valgrind(config)


def restart_under_valgrind(config: pytest.Config) -> None:
    """Counting instructions needs the test process under Callgrind: restart this very command
    under it (before any test ran), as CodSpeed's runner does; a session already under it goes on."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    from jitlab.engine import valgrind
    from jitlab.lifeline import hold_lifeline, lifeline

    if valgrind.running_on_valgrind():
        hold_lifeline()  # the restarted session dies with the first one, even by SIGKILL
        return
    path = valgrind.valgrind_path()
    if path is None:
        raise pytest.UsageError(
            f"--jitlab-measure instructions needs Valgrind, which is not installed: {valgrind.INSTALL_HINT}"
        )
    if getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--jitlab-measure instructions counts in one process: drop -n (pytest-xdist)")
    folder = tempfile.mkdtemp(prefix="jitlab-callgrind-")
    out = str(Path(folder) / "callgrind.out")
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()  # give the new process this one's real stdout and stderr
    sys.stdout.flush()
    sys.stderr.flush()
    env = {**os.environ, **valgrind.environment(), valgrind.OUT_ENV: out}
    # a child, not exec: Callgrind writes its last dump as the session exits, and this process
    # removes the folder after it (an exec left one folder in the temporary directory per session)
    try:
        with lifeline() as line:
            code = subprocess.run(
                [*valgrind.command(out, path), sys.executable, *sys.orig_argv[1:]],
                env={**env, **line.env},
                pass_fds=line.pass_fds,
            ).returncode
    except KeyboardInterrupt:
        code = pytest.ExitCode.INTERRUPTED
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(code)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    bench = session.config.stash.get(SESSION_KEY, None)
    if bench is not None:
        bench.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
        # like pytest-benchmark's --benchmark-compare-fail: a regression fails an otherwise green session
        if bench.regressions and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def comparison_notes(comparison: RunComparison) -> list[str]:
    """What the session table's verdicts need said: why cells were undecided, the one-process floor."""
    from jitlab.stats.comparison import ONE_PROCESS_FLOOR

    lines = []
    undecided = [c for c in comparison.cells if c.stats is not None and c.stats.verdict == "undecided"]
    if undecided:
        lines.append(
            f"{len(undecided)} cell(s) undecided: {undecided[0].stats.reason.removeprefix('undecided: ')}"
        )
    if any(c.stats is not None and c.stats.margin_kind == "one-process floor" for c in comparison.cells):
        lines.append(
            "a jitlab_bench cell is measured in one process: a change must clear the spread of its own "
            f"samples, and at least ±{ONE_PROCESS_FLOOR:.0%} (--jitlab-measure instructions resolves smaller "
            "changes, whatever the load)"
        )
    lines += list(comparison.notes)
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    bench = config.stash.get(SESSION_KEY, None)
    if bench is None:
        return
    if bench.run_id is not None and bench.store is not None:
        from jitlab.report.session_table import session_table_text

        against = f" against run {bench.baseline_id}" if bench.comparison is not None else ""
        terminalreporter.write_sep("-", f"jitlab: run {bench.run_id}{against}")
        cells = bench.store.cells(bench.run_id)
        terminalreporter.write_line(session_table_text(bench.run_id, cells, bench.comparison))
        if bench.comparison is not None:
            for line in comparison_notes(bench.comparison):
                terminalreporter.write_line(f"jitlab: {line}")
        terminalreporter.write_line(
            f"jitlab: {bench.cells} cells stored as run {bench.run_id} in {bench.store.path} "
            f"(`jitlab show {bench.run_id} --store {bench.store.path}`"
            + (
                f", `jitlab compare {bench.baseline_id} {bench.run_id}`"
                if bench.comparison is not None
                else ""
            )
            + ")"
        )
    if bench.compare_fail is not None and bench.comparison is not None:
        from jitlab.compare.gate import describe

        if bench.regressions:
            terminalreporter.write_line(
                f"jitlab: {len(bench.regressions)} cell(s) significantly slower than in run "
                f"{bench.baseline_id} by more than {bench.compare_fail:g}%: the session fails",
                red=True,
                bold=True,
            )
            for cell in bench.regressions:
                terminalreporter.write_line(f"  {describe(cell)}", red=True)
        else:
            terminalreporter.write_line(
                f"jitlab: no cell significantly slower than in run {bench.baseline_id} "
                f"by more than {bench.compare_fail:g}%"
            )
    if bench.json_written is not None:
        terminalreporter.write_line(f"jitlab: run written as JSON to {bench.json_written}")
    for problem in bench.problems:
        terminalreporter.write_line(f"jitlab: {problem}", yellow=True)


STATUS_FILE = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int | None:
    try:
        for line in STATUS_FILE.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


class PeakMemory:
    """The peak resident memory of this process during a block, not since the process started.

    On Linux the kernel's high-water mark (VmHWM) is reset by writing 5 to /proc/self/clear_refs
    before the block and read after it: exact, and free. Where that is not possible a thread samples
    the resident size every millisecond (a peak shorter than that can be missed). `growth` is the
    peak minus the resident size at the start: what the benchmarked code itself added.
    """

    def __init__(self) -> None:
        self.peak: int | None = None
        self.start: int | None = None
        self.exact = False
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._sampled = 0

    def __enter__(self) -> PeakMemory:
        import psutil

        self._process = psutil.Process()
        self.start = self._process.memory_info().rss
        try:
            CLEAR_REFS.write_text("5")
            self.exact = _status_bytes("VmHWM") is not None
        except OSError:
            self.exact = False
        if not self.exact:
            self._sampled = self.start
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self._sampled = max(self._sampled, self._process.memory_info().rss)

    def __exit__(self, *exc: Any) -> None:
        end = self._process.memory_info().rss
        if self.exact:
            hwm = _status_bytes("VmHWM")
            self.peak = max(hwm, end) if hwm is not None else end
        else:
            self._stop.set()
            if self._sampler is not None:
                self._sampler.join()
            self.peak = max(self._sampled, end)

    @property
    def growth(self) -> int | None:
        if self.peak is None or self.start is None:
            return None
        return max(0, self.peak - self.start)


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
        from jitlab.process_result import CellResult

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
            if not session.disabled:
                self.record = session.save(
                    workload, backend, size, cell_params, CellResult(status="unavailable", reason=reason)
                )
            pytest.skip(reason)
        if session.disabled:  # --jitlab-disable: the function runs once, as in a plain test
            value = (chosen.prepare(fn) if jit else fn)(*args)
            chosen.synchronize(value)
            return value
        try:
            call_fn = chosen.prepare(fn) if jit else fn
            with PeakMemory() as memory:
                first_value, result = measured(lambda: call_fn(*args), chosen, session.policy())
        except Exception as exc:
            failure = CellResult(status="failed", reason=f"{type(exc).__name__}: {exc}".strip())
            self.record = session.save(workload, backend, size, cell_params, failure)
            raise
        scalar = _scalar(chosen.to_host(first_value))
        result = replace(
            result,
            values=(scalar,),
            errors=(abs(scalar - reference),) if reference is not None and scalar is not None else (),
            peak_rss_bytes=memory.peak,
            extras={"rss_growth_bytes": [float(memory.growth or 0)]},
            device=chosen.device(),
            backend_version=chosen.version(),
        )
        self.record = session.save(workload, backend, size, cell_params, result)
        return first_value


def measured(call: Callable[[], Any], backend: Any, policy: Any) -> tuple[Any, CellResult]:
    """One cell measured in this process: (the first call's value, the cell's result): timed, with
    CPU time (backends that run one thread), the load and the drift canary read before it; or,
    with `--jitlab-measure instructions`, counted under Callgrind."""
    from jitlab.engine.canary import probe
    from jitlab.engine.spec import INSTRUCTIONS
    from jitlab.process_result import CellResult

    if policy.measure == INSTRUCTIONS:
        from jitlab.engine.counting import count_instructions

        counted = count_instructions(call, backend.synchronize)
        return counted.first_value, CellResult(
            status="ok",
            loops=counted.calls_per_block,
            instructions=tuple(counted.per_call),
            instruction_process=(0,) * len(counted.per_call),
            warnings=tuple(counted.warnings),
            timing_method="instructions (callgrind)",
        )
    from jitlab.engine.timing import measure
    from jitlab.engine.worker import ONE_THREAD_BACKENDS

    reading = probe()
    timing = measure(call, backend.synchronize, policy, backend.asynchronous)
    return timing.first_value, CellResult(
        status="ok",
        first_call_s=timing.first_call_s,
        loops=timing.loops,
        samples_s=tuple(timing.samples_s),
        cpu_samples_s=tuple(timing.cpu_samples_s) if backend.name in ONE_THREAD_BACKENDS else (),
        dispatch_s=tuple(timing.dispatch_s),
        warnings=tuple(timing.warnings),
        timing_method="host clock",
        process_details=(
            {
                "process": 0,
                "status": "ok",
                "samples": len(timing.samples_s),
                "canary": reading,
                "load": timing.load.to_json() if timing.load else None,
            },
        ),
    )


@pytest.fixture
def jitlab_bench(request: pytest.FixtureRequest) -> Bench:
    """Time a function through the jitlab engine and store it in this session's jitlab run."""
    return Bench(request.config.stash[SESSION_KEY], request.node)
