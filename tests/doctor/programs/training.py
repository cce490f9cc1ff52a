"""A training step as user code for the doctor: a data-dependent selection, a backward pass, an
optimizer step and a loss read back with `.item()`, each on its own marked line."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def train_step(x: torch.Tensor, y: torch.Tensor) -> float:  # doctor: def
    keep = torch.nonzero(y[:, 0] > 0).squeeze(1)  # doctor: nonzero
    loss = ((model(x[keep]) - y[keep]) ** 2).mean()  # doctor: mask
    optimizer.zero_grad()  # doctor: zero_grad
    loss.backward()  # doctor: backward
    optimizer.step()  # doctor: step
    return loss.item()  # doctor: item


def batch(scale: int = 1) -> tuple[tuple[torch.Tensor, torch.Tensor], dict]:
    generator = torch.Generator().manual_seed(0)
    return (
        torch.randn(64 * scale, 16, generator=generator),
        torch.randn(64 * scale, 1, generator=generator),
    ), {}
