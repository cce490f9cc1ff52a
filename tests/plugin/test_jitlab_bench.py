"""The pytest plugin: a user's test suite times functions with the `jitlab_bench` fixture, per backend,
into the store; `jitlab compare` and the report then work on those runs."""

import json

import pytest

from jitlab.cli import main
from jitlab.store import Store

pytest_plugins = ["pytester"]

USER_TESTS = """
import math

import numpy as np
import pytest


def estimate_pi(n):
    rng = np.random.default_rng(0)
    x, y = rng.random(n), rng.random(n)
    return 4.0 * np.count_nonzero(x * x + y * y <= 1.0) / n


def jax_sum(x):
    return (x * x).sum()


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_pi(jitlab_bench, backend):
    value = jitlab_bench(estimate_pi, 20_000, backend=backend, size=20_000, reference=math.pi)
    assert abs(value - math.pi) < 0.05


def test_jax_jit(jitlab_bench):
    import jax.numpy as jnp

    x = jnp.arange(10_000, dtype=jnp.float32)
    result = jitlab_bench(jax_sum, x, backend="jax", jit=True, size=10_000)
    assert float(result) > 0
    assert jitlab_bench.record.dispatch_samples_s  # asynchronous: dispatch timed apart


def test_twice_without_a_new_name_is_refused(jitlab_bench):
    jitlab_bench(sum, [1, 2, 3])
    with pytest.raises(ValueError, match="already in this session"):
        jitlab_bench(sum, [1, 2, 3])


def test_unknown_backend(jitlab_bench):
    jitlab_bench(sum, [1], backend="fortran")
"""


def run_session(pytester, store):
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester.runpytest_subprocess(
        "--jitlab-store", str(store), "--jitlab-budget", "0.2", "-p", "no:cacheprovider"
    )


def test_a_session_is_a_run_that_compare_and_report_read(pytester, tmp_path, capsys):
    store = tmp_path / "results.sqlite"
    first = run_session(pytester, store)
    first.assert_outcomes(passed=4, failed=1)
    first.stdout.fnmatch_lines(["*unknown backend 'fortran'*", "jitlab: 4 cells stored as run 1 in *"])
    second = run_session(pytester, store)
    second.assert_outcomes(passed=4, failed=1)

    runs = Store(store).runs()
    assert [r.run_id for r in runs] == [1, 2] and {r.status for r in runs} == {"finished"}
    assert runs[0].target.startswith("pytest:")
    cells = {(c.workload, c.backend, c.size): c for c in Store(store).cells(1)}
    assert set(cells) == {
        ("test_pi", "numpy", 20_000),
        ("test_pi", "python", 20_000),
        ("test_jax_jit", "jax", 10_000),
        ("test_twice_without_a_new_name_is_refused", "python", 1),
    }
    pi_numpy = cells[("test_pi", "numpy", 20_000)]
    assert pi_numpy.ok and len(pi_numpy.samples_s) >= 1 and pi_numpy.first_call_s > 0
    assert pi_numpy.error is not None and pi_numpy.error < 0.05 and pi_numpy.backend_version
    assert cells[("test_jax_jit", "jax", 10_000)].dispatch_s is not None

    capsys.readouterr()  # drop what pytester printed
    assert main(["compare", "1", "2", "--store", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["cells"]) == 4 and all(c["ratio"] > 0 for c in data["cells"])
    assert main(["report", "1", "2", "-o", str(tmp_path / "html"), "--store", str(store)]) == 0
    html = (tmp_path / "html" / "index.html").read_text()
    assert "test_pi" in html and "<svg" in html


def test_no_benchmark_no_run(pytester, tmp_path):
    pytester.makepyfile(test_plain="def test_nothing():\n    assert True\n")
    store = tmp_path / "results.sqlite"
    result = pytester.runpytest_subprocess("--jitlab-store", str(store), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not store.exists()


def test_bad_budget_is_a_usage_error(pytester):
    pytester.makepyfile(test_plain="def test_nothing():\n    assert True\n")
    result = pytester.runpytest_subprocess("--jitlab-budget", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--jitlab-budget 0 must be positive*"])
