"""Stage 2 of jitlab.jit, graph: recording the torch calls of a captured call into a torch.fx graph.

- recorder.py: `GraphRecorder`, the fx graph under construction, and `DataInt`, an int read from data.
- speculations.py: a call that returns a Python value read from tensor data, a `Speculation`
  re-checked on every hit or (eager backend) a value kept in the graph until Python reads it.
- torch_calls.py: what the recorder knows about torch calls (random draws, mutations, metadata reads).
- tensor_writes.py: writes to a tensor's `.data`; autograd_functions.py: custom autograd Functions.
- shapes.py: symbolic sizes (automatic dynamic shapes) and the tensor guards that allow them;
  lazy_sizes.py: the sizes of a data-dependent shape kept as graph values (eager backend);
  shape_history.py: the input sizes of a callable's earlier captures (`ShapeHistory`).
- argument_generators.py: draws from a `torch.Generator` the caller passes, through a slot the
  entry's guards fill (one entry serves a new generator per call).
- recording_tracer.py: `RecordingTracer`, what the recorder needs of the tracer (a higher stage).

May import: jitlab.jit.reasons, jitlab.jit.errors, jitlab.jit.guards and this folder.
"""
