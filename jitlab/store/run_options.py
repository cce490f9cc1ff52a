"""The options a run was measured with, as a frozen record (`RunOptions`), and as the JSON object
stored with the run (`RunRecord.options`).

`jitlab run` writes them (`jitlab.engine.session`), `--resume` reads them back to measure the rest
the same way, and the reports and `jitlab compare` read a few (`fast`, the threads, the policy).
The stored object keeps its keys and their order; runs that other tools wrote (a pytest session, a
pyperf import) keep keys of their own (`other`), and a run of an older jitlab lacks some (read as
their defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the key of the options of two runs measured side by side: {"id": shared, "side": "against" | "new"}
PAIR_OPTION = "pair"


@dataclass(frozen=True)
class RunOptions:
    #: the fields of the engine's `TimingPolicy` (a mapping here: the store sits below the engine)
    policy: Mapping[str, Any] = field(default_factory=dict)
    threads: int | None = None
    #: seconds before a cell's worker is killed (`--timeout`); None in runs that other tools wrote
    timeout_s: float | None = None
    #: who measured it when not `jitlab run` ("pytest")
    source: str | None = None
    #: `--fast` (a quick look: `jitlab compare` gives it a wider noise floor) and `--full`
    fast: bool = False
    full: bool = False
    #: the Ray cluster that measured it (`jitlab.engine.cluster`): nodes, spread, share_cores...
    cluster: Mapping[str, Any] | None = None
    #: the id and side of two builds measured side by side (`jitlab run --against`)
    pair: Mapping[str, Any] | None = None
    #: keys of other tools (a pyperf import's `imported_from`), kept as they were
    other: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RunOptions:
        """The options of a stored run, tolerant of every jitlab's runs and of other tools'."""
        data = dict(data or {})
        return cls(
            policy=dict(data.pop("policy", None) or {}),
            threads=data.pop("threads", None),
            timeout_s=data.pop("timeout_s", None),
            source=data.pop("source", None),
            fast=bool(data.pop("fast", False)),
            full=bool(data.pop("full", False)),
            cluster=data.pop("cluster", None),
            pair=data.pop(PAIR_OPTION, None),
            other=data,
        )

    def to_json(self) -> dict[str, Any]:
        """The stored object: the keys set, in the order `jitlab run` has always written them."""
        out: dict[str, Any] = {}
        if self.policy:
            out["policy"] = dict(self.policy)
        for key in ("threads", "timeout_s", "source"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.fast:
            out["fast"] = True
        if self.full:
            out["full"] = True
        if self.cluster is not None:
            out["cluster"] = self.cluster
        if self.pair is not None:
            out[PAIR_OPTION] = self.pair
        return {**out, **self.other}

    @property
    def pair_id(self) -> str | None:
        """The id shared with the run of the other build measured side by side with this one."""
        return self.pair.get("id") if isinstance(self.pair, Mapping) else None
