"""ParityBench's generated programs as capture cases: `jitlab capture --paritybench DIR`.

ParityBench (github.com/jansel/pytorch-jit-paritybench) is the program set TorchDynamo and MagPy
were measured on: nn.Modules crawled from about 1,500 GitHub projects, one generated file per project,
each ending in `TESTCASES = [(module class, init args, forward args, jit_compiles), ...]`. Every entry
is one case here, named `pb.<project>.<class>`.

- `files`: which files a `--paritybench` folder holds (the clone's `generated/` folder or the folder
  itself); `list_cases`: a file's cases, read from its syntax without running it, so that listing
  15,000 cases in the parent process imports nothing.
- `loading`: a case's file is imported by the worker that runs it, once per process, with what
  the generated files expect beside them (`_paritybench_helpers`, and stand-ins for the libraries of
  their common import line that are not installed).

A case whose file does not load, whose module cannot be built or whose forward fails eagerly is a
broken case, left out of every denominator, as for any corpus.
"""

from __future__ import annotations

from jitlab.capture.paritybench.files import is_paritybench_file, list_cases, paritybench_files

__all__ = ["is_paritybench_file", "list_cases", "paritybench_files"]
