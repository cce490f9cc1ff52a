"""Stage 6 of jitlab.jit, tracing: the interpreter's hooks while a call is captured.

- capture_state.py: `Capture`, the one state of a capture (guards, hooks, recorder, effects, break
  book, interpreter), which the hooks, the recorder and the book read.
- tracer.py: `Tracer`, the hooks: reads of outside values (guarded), calls, and what is stepped into;
  tracer_state.py: `TracerState`, its base: its state, where outside values came from (`track`), and
  the owners of its other jobs, each a class of its own that reaches the tracer through a small
  `Protocol` (none is mixed in; tests/jit/test_jit_owned_state.py checks each).
- trace_rules.py: the one policy of what the interpreter steps into and what runs natively, with its
  reasons (`jitlab.jit.explain_rule`).
- owned_results.py: what native calls make that belongs to the call (copies, transformers'
  ModelOutput); environment.py: reads of single environment variables, each guarded.
- break_tracer.py, break_recorder.py: the tracer and the graph recorder extended with graph breaks
  and symbolic sizes.
- native_calls.py: calls that run natively (library functions, methods of outside objects);
  builtin_calls.py: the native calls understood exactly (`len`, `getattr`, `hasattr`, `print`, ...);
  container_methods.py: methods of lists, dicts and sets; call_objects.py: objects of the call's
  arguments guarded by structure; dynamic_reads.py: reads that may make a number a graph input.
- module_containers.py: `nn.Sequential`/`ModuleList`/`ModuleDict` walked; user_getattribute.py: reads
  through a Python `__getattribute__`; outside_arrays.py: numpy arrays and buffers guarded by content;
  lazy_texts.py: f-strings of sizes formatted without reading them.
- module_calls.py: what a module call runs (its forward, or torch's `_call_impl` for hooks), guarded;
  class_lookups.py: guards on what a lookup found in a class (methods, class attributes, `forward`).
- writes.py: `WriteHooks`, writes to outside objects, noted in the capture's `SideEffects`
  (jitlab.jit.effects.pending); appended_reads.py: `ReadsAfterWrites`, the guards of reads of what
  the call changed; both owned by the tracer, not mixed into it. whole_reads.py: outside objects read
  as a whole by native code (all of their content guarded).
- lookasides.py: library functions replaced by an interpreted equivalent; module_hooks.py: nn.Module
  hooks, weight norm and parametrizations.
- jitted.py: `Jitted`, the base of the callables `jit()` returns, so that a jitted callable met inside
  a captured program is recognised without importing the frontend.

May import: jitlab.jit.reasons, jitlab.jit.errors, jitlab.jit.interpreter, jitlab.jit.guards, jitlab.jit.graph,
jitlab.jit.effects, jitlab.jit.entries, jitlab.jit.breaks (every lower stage) and this folder; never
jitlab.jit.frontend.
"""
