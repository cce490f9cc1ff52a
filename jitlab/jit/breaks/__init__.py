"""Stage 5 of jitlab.jit, breaks: partial graphs, a capture split into several graphs at a graph break.

- book.py: `BreakBook`, the bookkeeping of one capture's breaks.
- segment_guards.py: the guards of each segment between two breaks.
- segments.py: turning the book into a multi-graph cache entry.
- resume.py: rendering the interpreted frames at a break and running the rest of the call from there
  (the opcode-level part, where a break may happen and how an instruction resumes, is in
  jitlab.jit.interpreter.resumption).

May import: jitlab.jit.reasons, jitlab.jit.errors, jitlab.jit.interpreter, jitlab.jit.guards,
jitlab.jit.graph, jitlab.jit.effects, jitlab.jit.entries and this folder.
"""
