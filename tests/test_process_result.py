"""A worker's result as a record: read strictly from jitlab's own worker, tolerantly from what older
jitlabs or other tools wrote, and back to the same object."""

import pytest

from jitlab.engine.processes import merge_process_results
from jitlab.process_result import WORKER_OK_KEYS, CellResult, ProcessResult
from jitlab.store.cell_rows import cell_from_result

WORKER_OK = {key: None for key in WORKER_OK_KEYS} | {
    "status": "ok", "samples_s": [1e-3, 2e-3], "values": [3.0], "warnings": ["w"], "extras": {},
    "process": 1, "result_version": 1,
}  # fmt: skip


def test_a_worker_result_is_read_strictly_and_written_back_whole():
    result = ProcessResult.from_dict(WORKER_OK, strict=True)
    assert result.ok and result.samples_s == (1e-3, 2e-3) and result.values == (3.0,) and result.process == 1
    assert ProcessResult.from_dict(result.to_dict(), strict=True) == result
    assert ProcessResult.received(result.to_dict()) == result and ProcessResult.received(result) is result
    with pytest.raises(ValueError, match=r"unknown keys \['sample_count'\]"):
        ProcessResult.from_dict({**WORKER_OK, "sample_count": 2}, strict=True)
    with pytest.raises(ValueError, match=r"missing keys \['loops'\]"):
        ProcessResult.from_dict({k: v for k, v in WORKER_OK.items() if k != "loops"}, strict=True)
    with pytest.raises(ValueError, match=r"missing keys \['status'\]"):
        ProcessResult.from_dict({"reason": "no status"}, strict=True)
    failed = ProcessResult.from_dict({"status": "failed", "reason": "boom", "traceback": "tb"}, strict=True)
    assert not failed.ok and failed.traceback == "tb" and failed.samples_s == ()


def test_an_old_or_foreign_result_is_read_tolerantly():
    old = {"status": "ok", "samples_s": [1.0], "dispatch_s": None, "first_value": 3, "sample_process": [0]}
    cell = CellResult.from_dict(old)
    assert cell.samples_s == (1.0,) and cell.dispatch_s == () and cell.sample_process == (0,)
    record = cell_from_result(1, "w", "python", 1, {}, old)
    assert record.samples_s == (1.0,) and record.sample_process == (0,) and record.pending_processes == 0
    with pytest.raises(KeyError):
        CellResult.from_dict({"samples_s": [1.0]})


def test_a_result_this_jitlab_cannot_read_is_a_failed_process_not_a_stopped_run():
    # what a cluster node running another jitlab sends: a key this one does not know, or one missing
    newer = {**WORKER_OK, "sample_count": 2, "wall_s": 0.5}
    for sent in (newer, {k: v for k, v in WORKER_OK.items() if k != "loops"}, {**WORKER_OK, "samples_s": 3}):
        result = ProcessResult.received(sent)
        assert result.status == "failed" and result.process == 1
        assert "is the same jitlab installed where it ran?" in (result.reason or "")
    assert ProcessResult.received(newer).wall_s == 0.5 and "unknown keys ['sample_count']" in (
        ProcessResult.received(newer).reason or ""
    )
    first = ProcessResult.from_worker({**WORKER_OK, "process": 0})
    cell = merge_process_results([first, ProcessResult.received(newer)], requested=2)
    assert cell.status == "inconsistent" and "process 1 of 2 failed" in (cell.reason or "")
