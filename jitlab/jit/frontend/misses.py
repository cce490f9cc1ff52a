"""Why calls missed the cache: the first guard each entry failed, counted over the misses.

An entry's function stops at its first failed check and answers MISS, which says nothing of which
check it was; the hit path must stay that cheap. On a miss (a call about to be captured, or run
eagerly when the cache is full) each entry's guard block is run again in a *diagnosing* copy of it,
built from the entry's own source on its first miss: every `return MISS` of the guard block answers
the index of its line instead, and the tensor check answers torch's own explanation
(`TensorGuards.check_verbose`: "tensor 'kwargs['x']' size mismatch at index 1. expected 5, actual 8").
The line is then named by its guard as explain() lists it (guards/builder.miss_texts).

`MissLog` keeps the count of each (entry, failed guard) and the last few misses, so that explain()
and the reason of a cache-limit fallback say which guards kept failing, grouped.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from typing import Any

from jitlab.jit.frontend.cache import CacheEntry

_CHECK = re.compile(r"^(\s*)if not (.*): return MISS$")
_TENSOR_CHECK = re.compile(r"^(\s*)if not (TG\d+)\((.*)\): return MISS$")
_VAR = re.compile(r"\bv\d+\b")
LAST_MISSES = 16  # misses remembered one by one (the counts keep all of them)
HELD = "the guards held"  # the miss came after them (MissLog.record names the re-checked values)


class Diagnoser:
    """The diagnosing copy of one entry's guard block: `why(args, kwargs)` names the first failed
    guard, or says that every guard held (the miss came later: a re-checked value differed)."""

    def __init__(self, source: str, namespace: dict[str, Any], texts: dict[str, str]) -> None:
        self.texts = texts
        self.descriptions: list[str] = []
        self.fn = self._build(source, namespace)

    def _build(self, source: str, namespace: dict[str, Any]) -> Any:
        lines = source.splitlines()
        try:
            start = lines.index("    try:", 1)
            end = lines.index("    except Exception:", start)
        except ValueError:
            return None
        body = ["def diagnose(args, kwargs):", "    try:"]
        for line in lines[start + 1 : end]:
            tensor = _TENSOR_CHECK.match(line)
            check = _CHECK.match(line)
            if tensor is not None:
                indent, checker, names = tensor.groups()
                k = self._describe("TENSOR_MATCH", line)
                labels = [self._name(v.strip()) for v in names.split(",") if v.strip()]
                body.append(
                    f"{indent}if not {checker}({names}): return ({k}, {checker}.__self__.check_verbose("
                    f"{names}, tensor_check_names={labels!r}))"
                )
            elif check is not None:
                indent, _cond = check.groups()
                k = self._describe(None, line)
                body.append(line[: -len("return MISS")] + f"return ({k}, None)")
            else:
                body.append(line)
        body += [
            "    except Exception as exc:",
            "        return (-1, f'{type(exc).__name__}: {exc}')",
            "    return None",
        ]
        scope = dict(namespace)
        try:
            exec(compile("\n".join(body), "<jitlab.jit miss diagnosis>", "exec"), scope)  # noqa: S102
        except SyntaxError:
            return None
        return scope["diagnose"]

    def _name(self, var: str) -> str:
        return self.texts.get(var, var)

    def _describe(self, kind: str | None, line: str) -> int:
        text = self.texts.get(line.strip())
        if text is None:
            condition = _CHECK.match(line).group(2) if _CHECK.match(line) else line.strip()
            named = _VAR.sub(lambda m: self._name(m.group(0)), condition)
            text = f"{kind}: {named}" if kind else f"SHAPE: {named}" if "size()" in condition else named
        self.descriptions.append(text)
        return len(self.descriptions) - 1

    def why(self, args: tuple, kwargs: dict) -> str:
        if self.fn is None:
            return "a guard failed (its guard block could not be diagnosed)"
        try:
            found = self.fn(args, kwargs)
        except Exception as exc:  # a diagnosis must never cost the call
            return f"a guard failed (the diagnosis raised {type(exc).__name__})"
        if found is None:
            return HELD
        index, detail = found
        if index < 0:
            return f"a guard raised {detail}"
        text = self.descriptions[index]
        if detail and detail is not True:
            return f"TENSOR_MATCH: {detail}"
        return text


class MissLog:
    """The failed guard of each entry for every miss: counted by (entry, guard), the last few kept."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[int, str]] = Counter()
        self.last: deque[tuple[str, ...]] = deque(maxlen=LAST_MISSES)
        self._diagnosers: dict[int, Diagnoser] = {}

    def record(self, entries: list[Any], args: tuple, kwargs: dict) -> tuple[str, ...]:
        """Diagnose a miss of every entry in `entries` (CacheEntry) on this call; returns one line per
        entry ("entry 0: TENSOR_MATCH: ...")."""
        found = []
        for index, entry in enumerate(entries):
            diagnoser = self._diagnosers.get(id(entry.fn))
            if diagnoser is None:
                diagnoser = Diagnoser(entry.source, entry.fn.__globals__, entry.miss_texts)
                self._diagnosers[id(entry.fn)] = diagnoser
            why = diagnoser.why(args, kwargs)
            if why is HELD:
                rechecked = [*entry.speculations, *entry.checks]
                why = "the guards held; a value re-checked after the graph differed" + (
                    f" ({'; '.join(rechecked[:2])}{'; ...' if len(rechecked) > 2 else ''})"
                    if rechecked
                    else ""
                )
            self.counts[(index, why)] += 1
            found.append(f"entry {index}: {why}")
        self.last.append(tuple(found))
        return tuple(found)

    def forget(self, entry: CacheEntry) -> None:
        """An entry left the cache (replaced by a merged one): its diagnosis goes with it."""
        self._diagnosers.pop(id(entry.fn), None)

    def grouped(self, limit: int = 12) -> tuple[str, ...]:
        """ "3 misses: entry 0: TENSOR_MATCH: ...", the most frequent first."""
        return tuple(
            f"{n} miss{'es' if n != 1 else ''}: entry {index}: {why}"
            for (index, why), n in self.counts.most_common(limit)
        )

    def summary(self, limit: int = 3) -> str:
        """The most frequent failed guards in one line, for a fallback's reason."""
        groups = self.grouped(limit)
        return "; ".join(groups) if groups else "no miss was diagnosed"
