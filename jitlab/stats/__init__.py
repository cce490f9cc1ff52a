"""Statistics of timing samples, the lowest floor of the measuring side: the engine summarises what
it measured with them, the store derives a cell's figures from its raw samples with them, and
compare and the reports judge changes with them. They work on plain lists of numbers, so that every
layer above can use them and none of them has to reach up for them.

- summary.py: `Summary` of one cell's samples (median, its confidence interval, spread) and `summarize`.
- hierarchical.py: a cell measured in several worker processes: the hierarchical bootstrap of the
  median, its interval, and the noise floor.
- comparison.py: is B slower or faster than A, from two sets of samples (ratio of medians, interval,
  p-value, and whether the change is called).
- paired.py: two builds measured in the same rounds: the change from per-round ratios.
- quiet_rounds.py: whether a busy machine will give a pair of builds the quiet rounds it needs (the
  stopping rule of `jitlab run --against` on a machine that stays busy).

May import: nothing outside this folder.
"""
