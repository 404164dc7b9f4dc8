"""Local training of all clients as one batched computation.

Clients' data live in one training tensor; a client's samples are a contiguous slice of
`client_index` (CSR offsets from the partition). Mini-batches of all clients are drawn together
as an [N, B] index tensor from the round's `data` stream, and all clients take their SGD steps
together on the [N, d] parameter tensor. Several runs (the trials of a curve) can take their
local steps together as well (`local_sgd_many`: trial x client rows of one tensor, each run's
batches from its own stream; `airfl.core.lockstep` decides where).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from airfl.core.memory import empty_rows
from airfl.models.flat import FlatModel


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

    def subset(self, clients: torch.Tensor) -> "ClientData":
        """The data of the given clients only, in that order (partial participation: only the
        round's active devices train). Samples stay where they are; only the index is rebuilt."""
        clients = clients.to(self.sizes.device)
        sizes = self.sizes[clients]
        offsets = torch.zeros(len(sizes) + 1, dtype=self.offsets.dtype, device=self.offsets.device)
        offsets[1:] = torch.cumsum(sizes, 0)
        index = torch.cat([self.client_index[self.offsets[c]:self.offsets[c + 1]]
                           for c in clients.tolist()])
        return ClientData(self.x, self.y, index, offsets, sizes)

    def full_batch(self) -> "GatheredBatch":
        """Every client's whole local dataset, gathered once per data object (`full_batches`):
        the trials of one curve, and a tune job's candidates, share one data object and so one
        copy ([N, n_max, ...], 3 MB for Biased FL's MNIST) instead of one per trial."""
        if getattr(self, "_full_batch", None) is None:
            self._full_batch = gather(self, full_batches(self))
        return self._full_batch

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


def epoch_batches(data: ClientData, batch_size: int, generator: torch.Generator
                  ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One local epoch of every client: a uniform random permutation of its samples cut into
    consecutive mini-batches of `batch_size` (the last one smaller if |D_m| is not a multiple),
    i.e. sampling without replacement as a data loader with shuffling does. Clients must hold
    equally many samples so that their steps stay batched."""
    size = int(data.sizes[0])
    if bool((data.sizes != size).any()):
        raise ValueError("local_mode 'epochs' needs equally sized client datasets (balanced "
                         f"partitions); got sizes {sorted(set(data.sizes.tolist()))}")
    keys = torch.rand(data.num_clients, size, generator=generator, dtype=torch.float64)
    order = torch.argsort(keys, dim=1).to(data.sizes.device)
    index = data.client_index[data.offsets[:-1].unsqueeze(1) + order]
    batches = []
    for start in range(0, size, batch_size):
        chunk = index[:, start:start + batch_size]
        batches.append((chunk, torch.full(chunk.shape, 1.0 / chunk.shape[1])))
    return batches


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


@dataclass(frozen=True)
class GatheredBatch:
    """A batch whose samples are already gathered ([N, B, ...] inputs): reused every round when
    the batch never changes (full-batch gradients, the objective), so no per-round copy is made."""

    x: torch.Tensor
    y: torch.Tensor
    weights: torch.Tensor


def gather(data: ClientData, batch: tuple[torch.Tensor, torch.Tensor]) -> GatheredBatch:
    index, weights = batch
    return GatheredBatch(data.x[index], data.y[index], weights)


def client_gradients(model: FlatModel, params: torch.Tensor, data: ClientData,
                     batch: tuple[torch.Tensor, torch.Tensor] | GatheredBatch
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-client losses [N] and gradients [N, d] of the global model on the given batches."""
    batch = batch if isinstance(batch, GatheredBatch) else gather(data, batch)
    stacked = params.unsqueeze(0).expand(data.num_clients, -1)
    return model.loss_and_grads(stacked, batch.x, batch.y,
                                batch.weights.to(params.device, params.dtype))


def client_gradients_many(model: FlatModel, params: torch.Tensor, batch: GatheredBatch,
                          rows: torch.Tensor | None = None) -> torch.Tensor:
    """Gradients [J, N, d] of J global models params [J, d] on every client's batch (one batch
    shared by the J models: full-batch gradients). Batched across the models where the model
    offers it (softmax regression: `grads_rows`, one wide GEMM per client); otherwise one
    `loss_and_grads` per model, as `client_gradients` computes it.

    `rows` (bool [J, N], optional): only the gradients of client m for the models j with
    rows[j, m] are needed (`Scheme.read_rows`); the other rows are 0, and `grads_rows` leaves
    them out of its GEMMs (Biased FL's digital baselines read K of N uploads)."""
    n_clients = batch.y.shape[0]
    weights = batch.weights.to(params.device, params.dtype)
    if rows is not None and bool(rows.all()):
        rows = None
    if hasattr(model, "grads_rows"):
        return model.grads_rows(params, batch.x, batch.y, weights, rows)
    stacked = params.unsqueeze(1).expand(-1, n_clients, -1)
    grads = torch.stack([model.loss_and_grads(one, batch.x, batch.y, weights)[1]
                         for one in stacked])
    return grads if rows is None else grads * rows.unsqueeze(-1)


def round_batches(data: ClientData, steps: int, batch_size: int, generator: torch.Generator,
                  epochs: int | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Every local step's (index [N, B], weights [N, B]) of one round, made at once before the
    first step: `steps` with-replacement mini-batches (`sample_batches`), or with `epochs` that
    many shuffled passes (`epoch_batches`, one draw an epoch). The steps' uniforms are drawn as
    one [steps, N, B] tensor: the generator fills it in the order the per-step draws would
    (same numbers, tests/core/test_engine.py), so the batches equal the per-step ones; on a
    device the indices move there in one copy a round, not one a step, and the weights are one
    tensor shared by the steps."""
    if epochs is not None:
        return [batch for _ in range(epochs) for batch in epoch_batches(data, batch_size,
                                                                        generator)]
    if steps == 0:
        return []
    n = data.num_clients
    u = torch.rand(steps, n, batch_size, generator=generator, dtype=torch.float64)
    u = u.to(data.sizes.device)
    sizes = data.sizes.view(1, n, 1)
    position = torch.minimum((u * sizes.to(torch.float64)).floor().to(torch.long), sizes - 1)
    index = data.client_index[(data.offsets[:-1].view(1, n, 1) + position)
                              .to(data.client_index.device)]
    weights = torch.full((n, batch_size), 1.0 / batch_size)
    return [(index[s], weights) for s in range(steps)]


def local_sgd(model: FlatModel, global_params: torch.Tensor, data: ClientData, steps: int,
              batch_size: int, lr: float, generator: torch.Generator, epochs: int | None = None
              ) -> torch.Tensor:
    """Each client runs `steps` SGD steps on with-replacement mini-batches, or, with `epochs`,
    that many shuffled passes over its data (epoch_batches), from the global model; returns the
    updates w_m - w [N, d]. The [N, d] buffer is filled in huge pages where the OS offers them
    (memory.empty_rows: same values, fewer page faults). One run's case of `local_sgd_many`."""
    return local_sgd_many(model, global_params.unsqueeze(0), [data], steps, batch_size, lr,
                          [generator], epochs)


def local_sgd_many(model: FlatModel, global_params: torch.Tensor, data: Sequence[ClientData],
                   steps: int, batch_size: int, lr: float,
                   generators: Sequence[torch.Generator], epochs: int | None = None
                   ) -> torch.Tensor:
    """`local_sgd` of J runs at once: run j's clients `data[j]` start from its global model
    global_params[j] ([J, d]) and draw their mini-batches from its own generator; every step
    advances the clients of all runs together as one [sum_j N_j, d] parameter tensor
    (`FlatModel.sgd_step_`: the CNNs' per-row step on CPU, vmap over the rows on CUDA).
    Returns the updates, run j's in rows [sum_{i<j} N_i, ...). The runs' data may be one data
    set (one gather a step) or each its own (a partition per trial: each run's samples are
    gathered into its rows of the step's batch), of one sample shape.

    Each run's batches are made before the first step (`round_batches`), from its generator
    alone, so they do not depend on the other runs. Where the model steps row by row (the
    CPU loop engine) a row's arithmetic is its run-alone arithmetic on the same inputs, so a
    run's updates are bit-identical whichever runs share the call (tests/core/test_lockstep.py);
    under vmap (CUDA) the rows share grouped kernels and agree up to float reassociation."""
    shared = all(part.x is data[0].x and part.y is data[0].y for part in data)
    if any(part.x.shape[1:] != data[0].x.shape[1:] or part.x.dtype != data[0].x.dtype
           for part in data):
        raise ValueError("local_sgd_many steps runs whose samples have one shape and dtype; "
                         f"got {sorted({(tuple(p.x.shape[1:]), str(p.x.dtype)) for p in data})}")
    rows = [part.num_clients for part in data]
    schedules = [round_batches(part, steps, batch_size, generator, epochs)
                 for part, generator in zip(data, generators)]
    params = empty_rows(sum(rows), global_params[0])
    blocks = list(zip(params.split(rows), global_params))
    for block, start in blocks:
        block.copy_(start.unsqueeze(0).expand(block.shape[0], -1))
    moved: dict[tuple[int, ...], torch.Tensor] = {}       # weights on the device, once a round
    for parts in zip(*schedules):
        index = parts[0][0] if len(parts) == 1 else torch.cat([i for i, _ in parts])
        key = tuple(id(w) for _, w in parts)
        if key not in moved:
            weights = parts[0][1] if len(parts) == 1 else torch.cat([w for _, w in parts])
            moved[key] = weights.to(params.device, params.dtype)
        if shared:
            xb, yb = data[0].x[index], data[0].y[index]
        else:
            xb, yb = _gather_runs(data, [i for i, _ in parts], index.shape)
        model.sgd_step_(params, xb, yb, moved[key], lr)
    # in place: an [N, d] result is 105 MB for FedAvgCNN's 45 clients, and a fresh one costs
    # its page faults every round (same values as params - global_params)
    for block, start in blocks:
        block.sub_(start.unsqueeze(0))
    return params


def _gather_runs(data: Sequence[ClientData], indices: Sequence[torch.Tensor],
                 shape: torch.Size) -> tuple[torch.Tensor, torch.Tensor]:
    """The step's batch [R, B, ...] of runs on different data sets: run j's samples
    data[j].x[indices[j]] written straight into its rows (no per-run copy concatenated)."""
    first = data[0]
    xb = torch.empty(*shape, *first.x.shape[1:], dtype=first.x.dtype, device=first.x.device)
    yb = torch.empty(*shape, dtype=first.y.dtype, device=first.y.device)
    start = 0
    for part, index in zip(data, indices):
        stop = start + index.shape[0]
        flat = index.reshape(-1)
        torch.index_select(part.x, 0, flat, out=xb[start:stop].view(-1, *first.x.shape[1:]))
        torch.index_select(part.y, 0, flat, out=yb[start:stop].view(-1))
        start = stop
    return xb, yb


def _cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-sample cross-entropy of logits [..., C] (reduced along the last, contiguous axis,
    whatever the layout of the leading axes)."""
    picked = logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return torch.logsumexp(logits, dim=-1) - picked


def eval_rows(model: FlatModel) -> int:
    """Rows per evaluation forward of a model without batch statistics: its `eval_chunk`
    (airfl.models.flat; 4,096 where a model declares none)."""
    return int(getattr(model, "eval_chunk", 4096))


@torch.no_grad()
def evaluate_many(model: FlatModel, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                  chunk: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy [E] and accuracy [E] of E models params [E, d] on (x, y). Reductions
    run on the sample-major [n, E, C] layout (contiguous for the batched softmax logits: about
    twice as fast as on the transposed view). A model whose logits use the batch's statistics
    (BatchNorm without running statistics) is evaluated in chunks of its `eval_batch`; any
    other in chunks of `chunk`, by default the model's `eval_chunk`, the size measured fastest
    for its kind (`eval_rows`)."""
    chunk = getattr(model, "eval_batch", None) or chunk or eval_rows(model)
    n_models = params.shape[0]
    total_loss = torch.zeros(n_models, dtype=torch.float64, device=params.device)
    correct = torch.zeros(n_models, dtype=torch.long, device=params.device)
    for start in range(0, x.shape[0], chunk):
        logits = model.logits_many(params, x[start:start + chunk]).transpose(0, 1)  # [n, E, C]
        target = y[start:start + chunk].unsqueeze(1).expand(-1, n_models)           # [n, E]
        total_loss += _cross_entropy(logits, target).sum(dim=0, dtype=torch.float64)
        correct += (logits.argmax(dim=2) == target).sum(dim=0)
    return total_loss / x.shape[0], correct.to(torch.float64) / x.shape[0]


@torch.no_grad()
def objective_many(model: FlatModel, params: torch.Tensor, batch: GatheredBatch,
                   clients: tuple[int, ...] | None = None) -> torch.Tensor:
    """F(w) = (1/N) sum_m f_m(w) [E] for E models on every client's whole batch (regulariser
    included, as in each client's loss); with `clients`, the mean over those clients only
    (the objective a scheme that trains on them alone minimises)."""
    n_clients, per_client = batch.y.shape
    logits = model.logits_many(params, batch.x.reshape(n_clients * per_client,
                                                       *batch.x.shape[2:])).transpose(0, 1)
    target = batch.y.reshape(-1, 1).expand(-1, params.shape[0])            # [N B, E]
    loss = _cross_entropy(logits, target).view(n_clients, per_client, -1)  # [N, B, E]
    local = (loss * batch.weights.to(loss).unsqueeze(-1)).sum(dim=1)       # [N, E]
    if clients is not None:
        local = local[list(clients)]
    return local.double().mean(dim=0) + model.penalty(params).double()
