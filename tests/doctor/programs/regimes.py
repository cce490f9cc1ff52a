"""Three programs whose regime is known: bandwidth-, overhead- and compute-bound."""

import torch


def multiply_chain(x: torch.Tensor) -> torch.Tensor:
    """Four unfused multiplications by 2: each reads and writes the whole tensor, 1 FLOP per 8 bytes."""
    for _ in range(4):
        x = x * 2
    return x


def chain_inputs(scale: int = 1) -> tuple[tuple[torch.Tensor], dict]:
    return (torch.ones(8_000_000 * scale),), {}


def tiny_additions(x: torch.Tensor) -> torch.Tensor:
    """Two thousand additions on a one-element tensor: the work is nothing, each call is overhead."""
    for _ in range(2000):
        x = x + 1
    return x


def tiny_inputs(scale: int = 1) -> tuple[tuple[torch.Tensor], dict]:
    return (torch.zeros(scale),), {}


def matrix_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A large square product: 2 n^3 FLOPs on 3 n^2 numbers."""
    return a @ b


def matmul_inputs(scale: int = 1) -> tuple[tuple[torch.Tensor, torch.Tensor], dict]:
    generator = torch.Generator().manual_seed(0)
    a = torch.rand(1024 * scale, 1024, generator=generator)
    b = torch.rand(1024, 1024, generator=generator)
    return (a, b), {}
