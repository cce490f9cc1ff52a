"""Graph-capture coverage: run corpus programs under graph-capture tools and compare with eager.

`corpus` defines the corpus format (`Case`, `Corpus`, `load_corpus`); `paritybench` reads
ParityBench's generated files as cases; `cases.load_corpora` takes files of either kind; `methods` wraps each tool
(jitlab.jit, TorchDynamo fullgraph, torch.export, torch.fx, TorchScript script and trace);
`compare` checks outputs and state; `worker` runs cases in a child process; `harness` drives
workers with time limits and gathers the results. `speed_worker` and `speed` do the same for
`jitlab capture --speed`: eager, jitlab.jit and torch.compile timed per case, speed-ups and totals.
"""

from jitlab.capture.cases import load_corpora
from jitlab.capture.corpus import Case, Corpus, load_corpus

__all__ = ["Case", "Corpus", "load_corpora", "load_corpus"]
