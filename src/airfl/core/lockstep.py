"""Several trials of the round loop run in lockstep, their clients' gradients computed together.

Why (benchmarks/README.md, biased_fl_trial.py and tune_batching.py):
a Biased FL tune job runs every candidate (scheme-parameter combinations, then step sizes) on the
selection trials, 15 to 36 runs of the same softmax model on the same full-batch client data.
Each run's local gradients are 10 GEMMs with 10 output columns, a shape the BLAS handles poorly;
stepping the runs together makes them one GEMM per client with 10 J columns
(`client_gradients_many`). Everything else stays per run (`airfl.core.loop.TrialRun`): each run
draws its channel, participants, quantizer and noise from its own streams (seed, experiment,
trial, round, stream), so what a run draws never depends on which runs step beside it. Runs
with different horizons (digital schemes: as many rounds as fit the time budget) leave the
batch as they finish. The runs' aggregations go to `Scheme.aggregate_many` by scheme class, so
that a class can share work across the runs as a tensor axis (the digital schemes' quantizer)
while each run keeps its own draws.

Each round, every run's scheme says which clients' uploads it will read (`Scheme.read_rows`,
known before the uploads: Biased FL's digital baselines sample K of N devices), and only those
clients' gradients are computed (`client_gradients_many` with `rows`; the others are 0).

Only full-batch gradient uploads with every device training share a batch (the gradients of a
run are then a function of its parameters alone); `batchable` says whether a set of runs is
such, and callers run the others one by one (`airfl.core.loop.run_trial`).

Float contract: the batched GEMMs may sum in another order than the one-model GEMMs, so a run's
numbers equal its unbatched run's up to float reassociation (tests/core/test_lockstep.py states
the measured agreement); the same set of runs gives bit-identical results on every rerun.

Local training (delta uploads: the CNN papers' FedAvg local SGD) is the second kind of
lockstep (`local_batchable`): each round every run draws its channel and participants, then
the clients of all runs take their local steps together, trial x client flattened into the
rows of one parameter tensor (`airfl.core.engine.local_sgd_many`), each run's mini-batches
from its own `data` stream, made once a round; then each run aggregates its own rows and steps.
Runs are grouped so that their rows fit `airfl.core.memory.ROUND_BUDGET_BYTES`. Where the
model steps row by row (the CPU loop engine) a run's result is bit-identical to its run alone,
whichever runs share the step; under vmap (CUDA) up to float reassociation. Whether the
batched form is used is `trial_batching`: on CUDA always (fewer, wider kernels), on CPU for
the models measured faster in it only (`CPU_TRIAL_BATCHED`).
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import torch

from airfl.core.engine import client_gradients_many, local_sgd_many
from airfl.core.loop import TrialRun, TrialSetup
from airfl.core import memory
from airfl.core.scheme import Scheme
from airfl.runtime.progress import Progress

__all__ = ["CPU_TRIAL_BATCHED", "MAX_BATCH", "aggregate_runs", "batchable", "local_batchable",
           "run_lockstep", "trial_batching"]

Job = tuple[TrialSetup, Scheme, dict[str, Any]]


def batchable(jobs: Sequence[Job]) -> bool:
    """Whether the runs can share their gradient computation: full-batch gradient uploads of
    one model on one client data set (their gathered batches are then equal)."""
    if len(jobs) < 2:
        return False
    first = jobs[0][0]
    return all(setup.local.upload == "gradient" and setup.local.full_batch
               and setup.model is first.model
               and setup.data is first.data for setup, _, _ in jobs)


CPU_TRIAL_BATCHED: frozenset[str] = frozenset({"fedavg_cnn"})
"""Models whose trials train faster on CPU as one batch than one after the other. On CPU the
CNNs' loop engine steps row by row either way (same kernels, same work);
`benchmarks/engine.py --papers` measured DP as a perk's FedAvgCNN round (2 runs x 45 clients,
5 steps of 10) 1.09x faster trial-batched (median of 9 interleaved repeats; what it saves is
J - 1 round buffers of 105 MB and step loops, not attributed further), CDPB's cnn_mnist 1.00x
and LAPA's cnn_mnist_bn 0.97x (benchmarks/results/engine.md), so only FedAvgCNN is batched on
CPU. Naming a model here keeps its results bit-identical (a row's
arithmetic is unchanged); only the order in which the rows are stepped changes."""


def trial_batching(model: Any, device: torch.device | str) -> bool:
    """Whether runs of `model` on `device` train their clients together (`local_batchable`):
    on CUDA yes (vmap over trial x client rows), on CPU for `CPU_TRIAL_BATCHED` only."""
    if torch.device(device).type == "cuda":
        return True
    return getattr(model, "name", None) in CPU_TRIAL_BATCHED


def local_batchable(jobs: Sequence[Job]) -> bool:
    """Whether the runs can take their local steps together: local SGD with delta uploads of
    one model with the same local work (steps, batch size, step size, epochs), on one training
    set or on each trial's own (a partition per trial) of one sample shape, where
    `trial_batching` chooses the batched form for the model and device."""
    if len(jobs) < 2:
        return False
    first = jobs[0][0]
    return (trial_batching(first.model, first.data.x.device)
            and all(setup.local.upload == "delta" and setup.local == first.local
                    and setup.model is first.model
                    and setup.data.x.shape[1:] == first.data.x.shape[1:]
                    and setup.data.x.dtype == first.data.x.dtype
                    for setup, _, _ in jobs))


def _runs_per_group(first: TrialSetup, max_batch: int) -> int:
    """Runs whose client rows fit the memory budget together: a run's rows are its clients'
    parameters, 4 bytes x d each, three times over under vmap (parameters, gradients, their
    scaled copy), once in the CPU loop engine (the gradient of one row at a time)."""
    copies = 3 if first.data.x.is_cuda else 1
    row_bytes = first.data.num_clients * first.model.dim * 4 * copies
    return max(1, min(max_batch, memory.rows_within(row_bytes)))


MAX_BATCH = 32
"""Runs stepped together at most: 16 to 64 paper-shape softmax models gain ~1.8-2.3x on their
gradients (wider batches lose cache; benchmarks/README.md, tune_batching.py)."""


def run_lockstep(jobs: Sequence[Job], max_batch: int = MAX_BATCH
                 ) -> list[tuple[pd.DataFrame, list[dict[str, Any]]]]:
    """Run every job's trial to its end, in groups of at most `max_batch` (in order) whose
    rounds run in lockstep; returns what `run_trial` returns for each job, in order.
    Gradient-upload runs (`batchable`) batch their gradients; local-SGD runs
    (`local_batchable`) their local steps, in groups that fit the memory budget."""
    if batchable(jobs):
        group, step = max_batch, _lockstep_group
    elif local_batchable(jobs):
        group, step = _runs_per_group(jobs[0][0], max_batch), _local_group
    else:
        raise ValueError("run_lockstep needs two or more full-batch gradient-upload trials of "
                         "one model on one data set, or local-SGD trials of one model, data "
                         "set and local work that trial_batching batches; run the others "
                         "with run_trial")
    results = []
    for start in range(0, len(jobs), group):
        results += step(jobs[start:start + group])
    return results


def _local_group(jobs: Sequence[Job]) -> list[tuple[pd.DataFrame, list[dict[str, Any]]]]:
    """Rounds of local-SGD runs in lockstep: every run draws its channel and participants
    (`TrialRun.begin`), their clients step together (`local_sgd_many`, each run's batches
    from its own `data` stream), then each run aggregates its rows and steps the server."""
    runs = [TrialRun(*job) for job in jobs]
    first = jobs[0][0]
    model, local = first.model, first.local
    log = Progress(f"{first.experiment} {jobs[0][1].name}: {len(jobs)} runs, local steps "
                   "together", max(setup.rounds for setup, _, _ in jobs))
    active = runs
    while active:
        data = []
        for run in active:
            participants = run.begin()
            data.append(run.setup.data if participants is None
                        else run.setup.data.subset(participants))
        updates = local_sgd_many(model, torch.stack([run.params for run in active]), data,
                                 local.steps, local.batch_size, local.lr,
                                 [run.streams("data") for run in active], local.epochs)
        for run, rows in zip(active, updates.split([part.num_clients for part in data])):
            run.finish(rows)
        active = [run for run in active if not run.done]
        log.update(max(run.round for run in runs))
    return [run.result() for run in runs]


def _lockstep_group(jobs: Sequence[Job]) -> list[tuple[pd.DataFrame, list[dict[str, Any]]]]:
    runs = [TrialRun(*job) for job in jobs]
    first = jobs[0][0]
    model, batch = first.model, first.full_batch_data
    log = Progress(f"{first.experiment} {jobs[0][1].name}: {len(jobs)} runs in lockstep",
                   max(setup.rounds for setup, _, _ in jobs))    # a line every ~30 s
    active = runs
    while active:
        for run in active:
            if run.begin() is not None:
                raise ValueError(f"{run.scheme.name}: partial participation has no batched "
                                 "gradients; run it with run_trial")
        grads = client_gradients_many(model, torch.stack([run.params for run in active]), batch,
                                      _rows_read(active))
        for run, grad, aggregated in zip(active, grads, aggregate_runs(active, grads)):
            run.finish(grad, aggregated)
        active = [run for run in active if not run.done]
        log.update(max(run.round for run in runs))
    return [run.result() for run in runs]


def _rows_read(runs: Sequence[TrialRun]) -> torch.Tensor | None:
    """[J, N] bool: the clients whose gradient each run's scheme reads this round
    (`Scheme.read_rows`; None: all of them, for every run)."""
    reads = [run.scheme.read_rows(run.state, run.design) for run in runs]
    if all(mask is None for mask in reads):
        return None
    n = next(mask for mask in reads if mask is not None).numel()
    return torch.stack([torch.ones(n, dtype=torch.bool) if mask is None else mask
                        for mask in reads])


def aggregate_runs(runs: Sequence[TrialRun], updates: torch.Tensor
                   ) -> list[tuple[torch.Tensor, dict[str, Any]]]:
    """Every run's `aggregate` of its updates [J, N, d], the runs of one scheme class together
    (`Scheme.aggregate_many`: e.g. the digital schemes quantize the rows of all runs in one
    call); each run's result is what its own `aggregate` gives (its own streams)."""
    by_class: dict[type, list[int]] = {}
    for j, run in enumerate(runs):
        by_class.setdefault(type(run.scheme), []).append(j)
    out: list[Any] = [None] * len(runs)
    for cls, index in by_class.items():
        part = updates if len(index) == len(runs) else updates[index]
        results = cls.aggregate_many([runs[j].scheme for j in index], part,
                                     [runs[j].state for j in index],
                                     [runs[j].design for j in index])
        for j, result in zip(index, results):
            out[j] = result
    return out
