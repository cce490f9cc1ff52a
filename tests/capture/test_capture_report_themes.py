"""What `jitlab capture --details` says a method fails most on: the tags of the failing cases only."""

from __future__ import annotations

from collections import Counter

from jitlab.capture.corpus import Case
from jitlab.capture.report import failure_themes


def test_failure_themes_count_tags_and_leave_untagged_cases_out():
    def case(name, tags):
        return Case(name, lambda: None, lambda: ((), {}), tags)

    cases = [case("a", ("break", "call")), case("b", ()), case("c", ("break",))]
    results = {
        ("a", "dynamo"): {"captured": False},
        ("b", "dynamo"): {"captured": False},
        ("c", "dynamo"): {"captured": True},
    }
    assert failure_themes(cases, ["dynamo"], results) == {"dynamo": Counter({"break": 1, "call": 1})}
    only_untagged = {**results, ("a", "dynamo"): {"captured": True}}
    assert failure_themes(cases, ["dynamo"], only_untagged) == {"dynamo": Counter()}  # no line printed
