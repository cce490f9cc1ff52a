"""A corpus file that fails to import: `jitlab capture` must say so in one line (exit 2)."""

import torch

from jitlab.capture import Corpus

CORPUS = Corpus()
raise RuntimeError("this corpus is broken on purpose")
torch.zeros(1)
