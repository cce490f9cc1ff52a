"""A backend that is not installed is a cell marked unavailable with the install hint, not an error."""

import json

from jitlab_testing import DATA


def test_missing_framework_is_listed_as_unavailable(jitlab_cli, store):
    result = jitlab_cli(
        "run", str(DATA / "imaginary_backend.py"), "--budget", "0.05", "--store", str(store), "--json"
    )
    assert result.returncode == 0, result.stderr
    cells = {c["backend"]: c for c in json.loads(result.stdout)["cells"]}
    assert cells["python"]["status"] == "ok" and cells["python"]["error"] == 0.0
    assert cells["imaginary"]["status"] == "unavailable"
    assert "pip install" in cells["imaginary"]["reason"] and "[imaginary]" in cells["imaginary"]["reason"]
