"""The cases of the files given to `jitlab capture`: corpus files (defining CORPUS) and ParityBench's
generated files, which are told apart by their content."""

from __future__ import annotations

from jitlab.capture.corpus import Case, load_corpus
from jitlab.capture.paritybench import is_paritybench_file, list_cases
from jitlab.errors import UserError


def load_corpora(paths: list[str]) -> list[Case]:
    """The cases of several files, in order; names must be unique across all of them."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in paths:
        for case in list_cases(path) if is_paritybench_file(path) else load_corpus(path):
            if case.name in seen:
                raise UserError(
                    f"case {case.name!r} is defined in both {seen[case.name]} and {path}: rename one"
                )
            seen[case.name] = path
            cases.append(case)
    return cases
