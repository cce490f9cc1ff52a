"""Stage 7 of jitlab.jit, frontend: `jit()` and what it returns.

- api.py: `jit`, `JitFunction`, `JitModule`: the cache lookup on each call, capture on a miss.
- driver.py: one capture: runs the call under the interpreter with the tracing hooks and plans entries.
- cache.py: the entries of one jitted callable; backends.py: compiling a graph with a backend.
- explain.py: `Explanation`, the report of `.explain()`.

May import: jitlab.jit (every stage) and jitlab.errors. Nothing in jitlab.jit imports it except the
package's `__init__` (lazily, for the public names).
"""
