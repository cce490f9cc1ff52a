"""Stage 4 of jitlab.jit, entries: turning one capture into a cache entry, a generated Python function
that checks the guards, runs the compiled graph and replays the effects.

- plans.py: the plan types (`EntryPlan`, `GraphPlan`, `BreakInfo`, `MISS`).
- codegen.py: planning an entry from a capture, and its generated source.
- check_prefix.py: the checks an entry makes before the graph when a value must be speculated on.
- branches.py: merging two entries that differ in one data-dependent branch into one graph.

May import: jitlab.jit.reasons, jitlab.jit.errors, jitlab.jit.guards, jitlab.jit.graph,
jitlab.jit.effects and this folder.
"""
