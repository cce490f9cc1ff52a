"""Small programs for the doctor's other diagnoses and for its error handling."""

import torch

NOT_A_FUNCTION = 42


def print_in_loop(x: torch.Tensor) -> torch.Tensor:
    for step in range(5):
        x = x * 0.5
        print(f"step {step}: {x}")  # doctor: print
    return x


def item_in_loop(x: torch.Tensor) -> float:
    total = 0.0
    for row in x:
        total += row.sum().item()  # doctor: item
    return total


def control_flow(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:  # doctor: bool
        x = x - 1
    return x[x > 0]  # doctor: mask


def raises(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    return helper_that_fails(y)


def helper_that_fails(y: torch.Tensor) -> torch.Tensor:
    raise ValueError("the user's own bug")  # doctor: raise


def vector(scale: int = 1) -> tuple[tuple[torch.Tensor], dict]:
    return (torch.arange(6.0 * scale) - 2,), {}


def matrix() -> tuple[tuple[torch.Tensor], dict]:
    return (torch.ones(4, 3),), {}


def broken_inputs() -> tuple[tuple, dict]:
    raise RuntimeError("cannot build the inputs")


def wrong_inputs() -> list:
    return [1, 2, 3]


calls = 0


def counts_calls(x: torch.Tensor) -> torch.Tensor:
    global calls
    calls += 1
    return x * calls  # a Python value that changes every call: a guard fails every time


def two_squares() -> tuple[tuple[torch.Tensor, torch.Tensor], dict]:
    """No `scale` parameter, and doubling both along dimension 0 makes them unmultipliable."""
    return (torch.ones(8, 8), torch.ones(8, 8)), {}


def every_kind_of_sync(x: torch.Tensor) -> list:
    n = int(x.sum())  # doctor: int
    scale = float(x.max())  # doctor: float
    values = x.tolist()  # doctor: tolist
    host = x.cpu()  # doctor: cpu
    array = host.numpy()  # doctor: numpy
    distinct = torch.unique(x)  # doctor: unique
    chosen = torch.masked_select(x, x > 1)  # doctor: masked_select
    same = torch.equal(x, x)  # doctor: equal
    text = repr(x)  # doctor: repr
    return [n, scale, values, array, distinct, chosen, same, text]


def explicit_synchronize(x: torch.Tensor) -> torch.Tensor:  # doctor: def-explicit-synchronize
    y = x * 2
    torch.cuda.synchronize()  # waits for the device; no tensor operation the doctor intercepts
    return y + 1


def cuda_vector(scale: int = 1) -> tuple[tuple[torch.Tensor], dict]:
    return (torch.arange(1.0, 6.0 * scale + 1).cuda(),), {}
