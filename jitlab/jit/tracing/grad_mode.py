"""Grad-mode switches called as functions: `torch.set_grad_enabled(False)` ... `(True)` in forward.

`with torch.no_grad():` is interpreted as a with block; a program may also switch gradients with a
plain call (ParityBench's asymmetric loss computes its focal weights between
`torch.set_grad_enabled(False)` and `torch.set_grad_enabled(True)`). Such a call is run natively as
it is: the recorder sees the new mode at the next tensor operation and records a
`torch._C._set_grad_enabled` node there (`graph/recorder.sync_grad_mode`), and the graph ends in the
mode the program left (`recorder.finish`), so later operations' `requires_grad` and the mode after
the call are eager's. The entry restores the mode it started in when it misses after the graph ran,
and sets the final mode itself after the graph, since compiled graphs do not replay a change of
torch's global state (entries/codegen.py). Only a plain `bool` mode is taken: the switch must be the
same on every call the entry serves, and a bool the program computed was guarded or checked where it
was read. Other setters of torch's global state stay uncacheable (torch_state.changes_torch_state).
"""

from __future__ import annotations

import torch

# torch.set_grad_enabled is torch.autograd.set_grad_enabled (a class whose __init__ switches the mode)
_SWITCHES = (torch.set_grad_enabled, torch._C._set_grad_enabled)


def grad_mode_switch(fn: object, args: tuple, kwargs: dict) -> bool:
    """Whether `fn(*args, **kwargs)` only switches grad mode to a plain bool (see the module doc)."""
    if not any(fn is switch for switch in _SWITCHES):
        return False
    if len(args) == 1 and not kwargs:
        mode = args[0]
    elif not args and fn is torch.set_grad_enabled and set(kwargs) == {"mode"}:
        mode = kwargs["mode"]
    else:
        return False
    return type(mode) is bool
