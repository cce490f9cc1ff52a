"""Stage 1 of jitlab.jit, guards: what a value read from outside the call is, where it came from and
what is checked about it before a cache entry may run.

- kinds.py: what kind of outside object a value is (container, plain object, module root).
- sources.py: where a value came from (`ArgsSource`, `AttrSource`, `ItemSource`...), as an expression.
- origins.py: finding a source for an object reached through outside containers and attributes.
- builder.py: `GuardBuilder`, the guard statements of one entry (type, identity, value, tensor checks).

May import: jitlab.jit.reasons, jitlab.jit.errors and this folder only (no other stage of jitlab.jit).
"""
