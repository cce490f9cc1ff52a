"""Names of a graph's placeholders, made from the description of the value each one stands for
(`self.layer1.0.conv.weight` -> `layer1_0_conv_weight`), so a printed graph reads like the model."""

from __future__ import annotations

import re

_NOT_ASCII_ALNUM = re.compile(r"[^0-9A-Za-z]")


def _sanitize(label: str) -> str:
    """`label` with every character that is not `str.isalnum()` made "_", stripped of "_"."""
    if label.isascii():  # the ASCII characters that are isalnum() are exactly [0-9A-Za-z]
        return _NOT_ASCII_ALNUM.sub("_", label).strip("_")
    return "".join(c if c.isalnum() else "_" for c in label).strip("_")


def placeholder_name(label: str) -> str:
    """The last 40 name characters of a source's description (`self.layer1.0.conv.weight`), or
    "input". Only the label's tail is looked at when it gives 40 characters: descriptions of a deep
    module tree are long, and sanitising each whole one was a tenth of a large model's capture."""
    name = _sanitize(label[-64:])
    if len(name) < 40 and len(label) > 64:  # the tail was mostly separators: the whole label decides
        name = _sanitize(label)
    return name[-40:].strip("_") or "input"
