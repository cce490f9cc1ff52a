"""What a torch.compile graph break is about, said in the user's terms.

TorchDynamo names the construct it could not trace, from its own side: a `loss.backward()` is
"Unsupported Tensor.backward() call", an `optimizer.step()` is "Call to `torch._dynamo.graph_break()`:
User-inserted graph break" (torch.optim calls `graph_break()` itself, in `_use_grad`), and the user
inserted nothing. Passed on as they are, these name the wrong cause. Each record of TorchDynamo's
`graph_breaks` log carries the traceback down to the break, so the cause is named from the user's line
and, when the break happened inside a library the user called, from that library's frame.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from jitlab.doctor.location import is_user_file

TRAINING_SUGGESTION = (
    "capture the whole training step with jitlab.jit(step), which keeps the backward pass and the "
    "optimizer in its graph; with torch.compile, compile the model and the optimizer step apart "
    "(torch.compile(model), torch.compile(opt.step)) and call loss.backward() outside them"
)
SHAPE_SUGGESTION = (
    "use a static-shape equivalent (count_nonzero, torch.where, topk, gather), or set "
    "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
)
SCALAR_SUGGESTION = "keep the value as a tensor, or set torch._dynamo.config.capture_scalar_outputs = True"
GENERIC_SUGGESTION = (
    "restructure the code at this line so TorchDynamo can trace it, or compile the parts around it"
)

_SKIPPED_FUNCTION = re.compile(r"function `([^`]+)`")


@dataclass(frozen=True)
class DynamoBreak:
    """One record of TorchDynamo's `graph_breaks` log."""

    title: str  # "Unsupported Tensor.backward() call"
    explanation: str  # TorchDynamo's "Explanation:" line, or ""
    frames: tuple[tuple[str, int, str], ...]  # the traceback to the break: (file, line, function)
    reported_at: tuple[str, int] | None  # TorchDynamo's "Graph break in user code at FILE:LINE"
    duplicate: bool  # TorchDynamo left the traceback out: the same break was logged before

    @property
    def reason(self) -> str:
        return f"{self.title}: {self.explanation}" if self.explanation else self.title

    @property
    def user_frame(self) -> tuple[str, int] | None:
        """The innermost frame in the user's code: where the finding goes."""
        user = [(f, n) for f, n, _ in self.frames if is_user_file(f)]
        return user[-1] if user else None

    @property
    def library_frame(self) -> tuple[str, int, str] | None:
        """The innermost frame below the user's, in a library (torch, site-packages), if the break
        happened there."""
        frames = list(self.frames)
        last_user = max((i for i, (f, _, _) in enumerate(frames) if is_user_file(f)), default=None)
        if last_user is None or last_user == len(frames) - 1:
            return None
        return frames[-1]


def short_path(filename: str) -> str:
    """`torch/optim/optimizer.py` for a file under site-packages; the file name otherwise."""
    name = filename.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in name:
            return name.split(marker, 1)[1]
    return name.rsplit("/", 1)[-1]


def source_text(filename: str, line: int) -> str:
    """The stripped source of one line, or "" when it cannot be read."""
    return linecache.getline(filename, line).strip()


def name_cause(brk: DynamoBreak) -> tuple[str, str]:
    """(what the graph break is about, what to do), in the user's terms."""
    where = brk.user_frame
    code = source_text(*where) if where else ""
    shown = f" (`{code}`)" if code else ""
    title = brk.title.lower()
    library = brk.library_frame
    in_optimizer = library is not None and "torch/optim/" in library[0].replace("\\", "/")
    if "tensor.backward()" in title:
        return (
            f"a backward pass inside the compiled function{shown}: TorchDynamo does not trace "
            "Tensor.backward(), so the graph ends here",
            TRAINING_SUGGESTION,
        )
    if "marked as skipped" in title:
        match = _SKIPPED_FUNCTION.search(brk.explanation)
        function = match.group(1) if match else "the function called here"
        optimizer = function.startswith("Optimizer.") or in_optimizer
        return (
            f"{function}{shown} is not traced: TorchDynamo skips it on purpose, so the graph ends here",
            TRAINING_SUGGESTION if optimizer else "call it outside the compiled function",
        )
    if "graph_break()" in title and library is not None:
        file, line, function = library
        inside = f"{short_path(file)}:{line}, in {function}"
        if in_optimizer:
            return (
                f"an optimizer step{shown}: torch.optim ends the graph on purpose "
                f"(it calls torch._dynamo.graph_break() in {inside})",
                TRAINING_SUGGESTION,
            )
        return (
            f"the library code called here{shown} ends the graph on purpose "
            f"(it calls torch._dynamo.graph_break() in {inside})",
            "compile the parts before and after this call, or call it outside the compiled function",
        )
    if "graph_break()" in title:
        return "torch._dynamo.graph_break() called here: the graph ends on purpose", (
            "remove the call if the break is not wanted"
        )
    if "dynamic shape operator" in title or "data dependent" in title or "data-dependent" in title:
        return f"graph break: {brk.reason}", SHAPE_SUGGESTION
    if "item()" in title or "scalar" in title:
        return f"graph break: {brk.reason}", SCALAR_SUGGESTION
    if "print" in title or "logging" in title or "builtin" in title:
        return f"graph break: {brk.reason}", "move printing and logging out of the compiled function"
    if library is not None:
        file, line, function = library
        return (
            f"graph break inside {short_path(file)}:{line} ({function}), called here: {brk.reason}",
            GENERIC_SUGGESTION,
        )
    return f"graph break: {brk.reason}", GENERIC_SUGGESTION
