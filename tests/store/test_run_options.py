"""A run's options as a record: what `jitlab run` stores reads back the same, key for key and in
order, and runs of older jitlabs and of other tools read with defaults and their own keys kept."""

import json

from jitlab.store.run_options import RunOptions

POLICY = {"budget_s": 5.0, "target_ci": 0.02, "processes": 3}


def test_stored_options_read_back_the_same_in_the_same_order():
    stored = {"policy": POLICY, "threads": 2, "timeout_s": 600.0, "fast": True, "cluster": {"nodes": "a"},
              "pair": {"id": "x", "side": "new"}}  # fmt: skip
    options = RunOptions.from_json(stored)
    assert options.fast and not options.full and options.threads == 2 and options.pair_id == "x"
    assert json.dumps(options.to_json()) == json.dumps(stored)
    pytest_run = {"policy": POLICY, "threads": 4, "source": "pytest"}
    assert json.dumps(RunOptions.from_json(pytest_run).to_json()) == json.dumps(pytest_run)


def test_old_and_foreign_runs_read_with_defaults_and_their_own_keys():
    pyperf = {"imported_from": "bench.json", "format": "pyperf"}
    options = RunOptions.from_json(pyperf)
    assert options.policy == {} and options.threads is None and options.timeout_s is None and not options.fast
    assert options.to_json() == pyperf and options.pair_id is None
    assert RunOptions.from_json(None) == RunOptions()
