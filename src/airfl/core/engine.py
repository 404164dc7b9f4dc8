"""Local training of all clients as one batched computation.

Clients' data live in one training tensor; a client's samples are a contiguous slice of
`client_index` (CSR offsets from the partition). Mini-batches of all clients are drawn together
as an [N, B] index tensor from the round's `data` stream, and all clients take their SGD steps
together on the [N, d] parameter tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from airfl.models import FlatModel


@dataclass
class ClientData:
    """All clients' training data: x[n, ...], y[n], and each client's slice of `client_index`."""

    x: torch.Tensor
    y: torch.Tensor
    client_index: torch.Tensor       # [sum |D_m|] indices into x
    offsets: torch.Tensor            # [N + 1]
    sizes: torch.Tensor              # [N]

    @property
    def num_clients(self) -> int:
        return int(self.sizes.numel())

    def to(self, device: torch.device | str) -> "ClientData":
        return ClientData(*(t.to(device) for t in (self.x, self.y, self.client_index,
                                                     self.offsets, self.sizes)))


def sample_batches(data: ClientData, batch_size: int, generator: torch.Generator
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices [N, B] of a uniform with-replacement mini-batch per client, and weights 1/B.

    Sampling with replacement keeps every client's batch the same shape (batched), and each
    sample is an unbiased draw from the client's local distribution.
    """
    u = torch.rand(data.num_clients, batch_size, generator=generator, dtype=torch.float64)
    u = u.to(data.sizes.device)
    position = (u * data.sizes.unsqueeze(1).to(torch.float64)).floor().to(torch.long)
    position = torch.minimum(position, data.sizes.unsqueeze(1) - 1)
    index = data.client_index[(data.offsets[:-1].unsqueeze(1) + position).to(data.client_index.device)]
    weights = torch.full((data.num_clients, batch_size), 1.0 / batch_size)
    return index, weights


def full_batches(data: ClientData) -> tuple[torch.Tensor, torch.Tensor]:
    """Every client's whole local dataset as one padded [N, n_max] index, with weights mask/|D_m|,
    so a weighted loss over it is exactly the local objective f_m (full-batch gradients)."""
    n_max = int(data.sizes.max())
    position = torch.arange(n_max, device=data.sizes.device).unsqueeze(0)
    mask = position < data.sizes.unsqueeze(1)
    position = torch.where(mask, position, torch.zeros_like(position))
    index = data.client_index[data.offsets[:-1].unsqueeze(1) + position]
    weights = mask.to(torch.float32) / data.sizes.unsqueeze(1).to(torch.float32)
    return index, weights


def client_gradients(model: FlatModel, params: torch.Tensor, data: ClientData,
                     batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-client losses [N] and gradients [N, d] of the global model on the given batches."""
    index, weights = batch
    stacked = params.unsqueeze(0).expand(data.num_clients, -1)
    return model.loss_and_grads(stacked, data.x[index], data.y[index],
                                weights.to(params.device, params.dtype))


def local_sgd(model: FlatModel, global_params: torch.Tensor, data: ClientData, steps: int,
              batch_size: int, lr: float, generator: torch.Generator) -> torch.Tensor:
    """Each client runs `steps` SGD steps from the global model; returns updates w_m - w [N, d]."""
    params = global_params.unsqueeze(0).expand(data.num_clients, -1).clone()
    for _ in range(steps):
        index, weights = sample_batches(data, batch_size, generator)
        _, grads = model.loss_and_grads(params, data.x[index], data.y[index],
                                        weights.to(params.device, params.dtype))
        params.sub_(lr * grads)
    return params - global_params.unsqueeze(0)


@torch.no_grad()
def evaluate(model: FlatModel, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
             chunk: int = 4096) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of one model on (x, y)."""
    total_loss, correct = 0.0, 0
    for start in range(0, x.shape[0], chunk):
        logits = model.logits(params, x[start:start + chunk])
        target = y[start:start + chunk]
        total_loss += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
        correct += int((logits.argmax(dim=1) == target).sum())
    return total_loss / x.shape[0], correct / x.shape[0]
