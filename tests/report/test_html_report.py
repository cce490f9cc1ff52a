"""`jitlab report`: a self-contained HTML page with plots, tables, warnings, failures and a comparison,
escaping every string from the store, opened in headless Chromium (Debian's package)."""

import re

import numpy as np
import pytest
from jitlab_testing import NO_CHROMIUM, chromium, console_messages, open_in_chromium

from jitlab.cli import main
from jitlab.store import Store
from jitlab.store.machine import machine_info

EVIL = "<script>alert(1)</script>"
EVIL_REASON = "RuntimeError: <img src=x onerror=alert(2)>"


def fill_run(store, factor, seed):
    machine = {**machine_info(), "cpu": "CPU <b>bold</b>"}
    run_id = store.create_run(EVIL, [EVIL], ["numpy", "jax"], None, {"threads": 2}, machine)
    rng = np.random.default_rng(seed)
    for backend, scale in (("numpy", factor), ("jax", 1.0)):
        for n in (10**4, 10**5, 10**6):
            median = 1e-8 * n * scale * (2 if backend == "jax" else 1)
            spread = 0.3 if n == 10**6 and backend == "jax" else 0.02  # one unstable cell
            result = {
                "status": "ok",
                "samples_s": list(rng.lognormal(np.log(median), spread, 30)),
                "first_call_s": 0.3 if backend == "jax" else 1e-3,
                "dispatch_s": [1e-5] * 5 if backend == "jax" else [],
                "errors": list(np.abs(rng.normal(0, 1.6 / np.sqrt(n), 5))),
                "expected_error": 1.6 / np.sqrt(n),
                "peak_rss_bytes": int(2e8 + 16 * n),
                "warnings": ["<i>warm-up</i> had not settled"] if n == 10**4 and backend == "numpy" else [],
            }
            store.save_cell(
                run_id, EVIL, backend, n, {"mode": "<u>x</u>"} if backend == "numpy" else {}, result
            )
    store.save_cell(
        run_id, EVIL, "torch", 10**4, {}, {"status": "failed", "reason": EVIL_REASON, "log": "<tb>"}
    )
    store.save_cell(
        run_id, EVIL, "triton", 10**4, {}, {"status": "unavailable", "reason": "triton is not installed"}
    )
    store.set_run_status(run_id, "finished")
    return run_id


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    path = folder / "results.sqlite"
    store = Store(path)
    first, second = fill_run(store, 1.0, 1), fill_run(store, 1.3, 2)
    store.close()
    out = folder / "html"
    assert main(["report", str(first), str(second), "-o", str(out), "--store", str(path)]) == 0
    return out / "index.html", path


def test_report_has_plots_tables_warnings_failures_and_comparison(report):
    html = report[0].read_text()
    assert html.count("<svg") == 3  # a figure per run's workload, one for the comparison
    assert html.count('<table class="cells">') == 2 * 2  # per run: numpy (mode=...) and the others
    assert "Warnings, folded by cause" in html and "IQR is" in html
    assert "Cells without a measurement" in html and "triton is not installed" in html
    assert 'id="compare-1-2"' in html and "Geometric mean of the ratios per backend" in html
    assert re.search(r'class="num slower">\+30\.\d%', html)  # numpy 30% slower, significant
    assert "Python" in html and "numba" in html  # machine and versions


def test_every_string_from_the_store_is_escaped(report):
    html = report[0].read_text()
    for raw in (EVIL, "<img src=x", "<b>bold</b>", "<i>warm-up</i>", "<u>x</u>", "<tb>"):
        assert raw not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "<script" not in html.lower()  # the page has no scripts at all
    assert "http://" not in html.replace("http://www.w3.org/", "")  # nothing fetched from the network


def test_bad_input_exits_2(report, tmp_path, capsys):
    _, store = report
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["report", "1", "-o", str(blocker / "sub"), "--store", str(store)]) == 2
    assert "cannot create the output folder" in capsys.readouterr().err
    assert main(["report", "1", "-o", str(blocker), "--store", str(store)]) == 2
    assert main(["report", "1", "5", "-o", str(tmp_path / "x"), "--store", str(store)]) == 2
    assert "no run 5" in capsys.readouterr().err


@pytest.mark.skipif(
    NO_CHROMIUM, reason="Chromium is not installed (apt-get install chromium); CI installs it"
)
def test_report_renders_in_headless_chromium(report, tmp_path):
    dom = open_in_chromium(report[0].resolve().as_uri(), tmp_path)
    assert dom.count("<svg") == 3 and dom.count("<table") >= 6
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert" not in dom

    # the check itself works: a page with a script error is caught
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>undefinedFunction()</script></body></html>")
    caught = chromium("--dump-dom", bad.as_uri(), profile=tmp_path / "p3")
    assert any("Uncaught" in line for line in console_messages(caught.stderr))
