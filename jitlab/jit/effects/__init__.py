"""Stage 3 of jitlab.jit, effects: the side effects of a captured call on outside objects, the values
they saw, and their replay by the cache entry.

- snapshots.py: `Frozen` values, what an outside object held when an effect saw it.
- replay.py: `Effect`s and the Python code that replays them after the graph runs.
- pending.py: `SideEffects`, the one owner of a capture's pending writes: its effects, the places it
  wrote, and what each write means for a later read (lists only appended to, keys only added, copies
  of the content before the call).

May import: jitlab.jit.reasons, jitlab.jit.errors, jitlab.jit.interpreter, jitlab.jit.guards, jitlab.jit.graph and
this folder.
"""
