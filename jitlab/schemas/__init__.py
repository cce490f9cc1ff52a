"""JSON Schemas of jitlab's JSON documents, shipped with the package.

`run.schema.json` describes the run document of `jitlab run --json`, `jitlab show --json` and
`jitlab export --format json` (the latter adds raw samples). Documents may carry more fields than
the schema names (readers must ignore what they do not know); the fields it names are required.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def load_schema(kind: str = "run") -> dict[str, Any]:
    """The JSON Schema of a document kind, e.g. `load_schema("run")`."""
    text = resources.files(__name__).joinpath(f"{kind}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
