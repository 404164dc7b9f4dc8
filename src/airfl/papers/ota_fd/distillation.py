"""The federated-distillation round loop: every WD keeps
its own model (no parameter averaging); a round is knowledge extraction -> OTA sharing of the
per-class soft labels (the scheme) -> local training on CE + gamma * distillation term.

It replaces the FL loop of `airfl.core.loop.run_trial` for this wing's experiments
(`Experiment.trainer`) and keeps its conventions: the channel of round t comes from the round's
`channel` stream (common random numbers), mini-batches from its `data` stream, all WDs start
from the trial's theta_0 (`init` stream), the table has the generic columns (test_accuracy =
mean over WDs of each WD's own model on the test set).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.func import functional_call

from airfl.core.engine import eval_rows, evaluate_many, full_batches, sample_batches
from airfl.core.loop import (TrialRun, TrialSetup, client_updates, draw_channel_power,
                             initial_params)
from airfl.core.scheme import RoundState
from airfl.papers.ota_fd import theorem1 as th
from airfl.papers.ota_fd.rounds import TheoryConstants
from airfl.runtime.rng import RoundStreams


def class_counts(setup: TrialSetup, num_classes: int) -> torch.Tensor:
    """B_i^k [M, K] of the trial's partition."""
    counts = torch.zeros(setup.data.num_clients, num_classes, dtype=torch.float64)
    for m in range(setup.data.num_clients):
        idx = setup.data.client_index[setup.data.offsets[m]:setup.data.offsets[m + 1]]
        counts[m] = torch.bincount(setup.data.y[idx].cpu(), minlength=num_classes).double()
    return counts


@torch.no_grad()
def soft_labels(setup: TrialSetup, params: torch.Tensor, num_classes: int) -> torch.Tensor:
    """q_i^k [M, K, K]: each WD's average softmax output over its samples of class k
    (eval mode, all local samples). Rows of classes a WD lacks stay zero (it sends nothing)."""
    M, K = setup.data.num_clients, num_classes
    # forwards in chunks of the fastest size (a model with batch statistics: its own)
    chunk = getattr(setup.model, "eval_batch", None) or eval_rows(setup.model)
    out = torch.zeros(M, K, K, dtype=torch.float64)
    for m in range(M):
        idx = setup.data.client_index[setup.data.offsets[m]:setup.data.offsets[m + 1]]
        y = setup.data.y[idx].cpu()
        sums = torch.zeros(K, K, dtype=torch.float64)
        for start in range(0, idx.shape[0], chunk):
            logits = setup.model.logits(params[m], setup.data.x[idx[start:start + chunk]])
            sums.index_add_(0, y[start:start + chunk], torch.softmax(logits, dim=-1).double().cpu())
        counts = torch.bincount(y, minlength=K).double().clamp_min(1.0)
        out[m] = sums / counts[:, None]
    return out


def distillation_loss(logits: torch.Tensor, y: torch.Tensor, weights: torch.Tensor,
                      targets: torch.Tensor | None, gamma: float) -> torch.Tensor:
    """sum_b w_b [CE(G(u_b), v_b) + gamma ||G(u_b) - r^{v_b}||_2^2] ((M1)-(M3), (A5):
    squared Euclidean distance between softmax probabilities and the received soft label of the
    sample's class; CE as the empirical loss is [R])."""
    loss = torch.nn.functional.cross_entropy(logits, y, reduction="none")
    if targets is not None and gamma > 0:
        gap = torch.softmax(logits, dim=-1) - targets.to(logits)[y]     # same device (cuda)
        loss = loss + gamma * (gap * gap).sum(dim=-1)
    return (weights * loss).sum()


def _device_forward(setup: TrialSetup, params: torch.Tensor, m: int, index: torch.Tensor
                    ) -> tuple[list[torch.Tensor], torch.Tensor]:
    """WD m's forward pass on its samples `index` [B] with autograd on per-layer leaf views of
    its parameter row in the engine's memory format (as `FunctionalNetwork`'s loop engine does:
    measured faster on CPU than differentiating through slices of the flat vector), under the
    model's `precision` (bf16: bfloat16 autocast); returns the leaves and the fp32 logits."""
    model = setup.model
    leaves = [params[m, s.start:s.stop].detach().view(s.shape).requires_grad_()
              for s in model.slots]
    with torch.enable_grad():
        with model._autocast(params.device):         # precision bf16: bfloat16 autocast
            logits = functional_call(model.module, {s.name: model._layout(leaf) for s, leaf
                                                    in zip(model.slots, leaves)},
                                     (model._layout(setup.data.x[index]),))
        logits = logits.float()                      # the loss in fp32 whatever the precision
    return leaves, logits


def _device_gradient(setup: TrialSetup, m: int, leaves: list[torch.Tensor],
                     logits: torch.Tensor, batch: tuple[torch.Tensor, torch.Tensor],
                     targets: torch.Tensor | None, gamma: float
                     ) -> tuple[tuple[torch.Tensor, ...], float, float]:
    """WD m's gradient of the distillation loss from its forward (`_device_forward`), its
    norm (before clipping) and the loss."""
    index, weights = batch
    with torch.enable_grad():
        loss = distillation_loss(logits, setup.data.y[index[m]], weights[m].to(logits),
                                 targets, gamma)
        grads = torch.autograd.grad(loss, leaves)
    return grads, float(torch.sqrt(sum((g * g).sum() for g in grads))), float(loss.detach())


def _clipped_step_(setup: TrialSetup, params: torch.Tensor, m: int,
                   grads: tuple[torch.Tensor, ...], norm: float, lr: float, clip_S: float) -> None:
    """theta_m <- theta_m - lr min(1, S / ||g||) g, in place."""
    scale = min(1.0, clip_S / norm) if norm > 0 else 1.0
    for slot, g in zip(setup.model.slots, grads):
        params[m, slot.start:slot.stop].sub_(g.reshape(-1), alpha=lr * scale)


def local_step_(setup: TrialSetup, params: torch.Tensor, batch: tuple[torch.Tensor, torch.Tensor],
                targets: torch.Tensor | None, *, gamma: float, lr: float, clip_S: float
                ) -> tuple[list[float], list[float]]:
    """One SGD step of every WD in place, each gradient clipped to norm S first (Assumption 3
    made true; it also guards against channel-inversion deep fades). Autograd runs on per-layer leaf
    views in the engine's memory format, as `FunctionalNetwork`'s loop engine does (measured
    faster on CPU than differentiating through slices of the flat vector). The model's
    `precision` applies (bf16: forward and backward under bfloat16 autocast, fp32 master
    weights, as `FunctionalNetwork`; fp32 is exact and the default). Returns every WD's
    pre-clip gradient norm and loss (Theorem 1's inputs, `theorem1`)."""
    norms, losses = [], []
    for m in range(params.shape[0]):
        leaves, logits = _device_forward(setup, params, m, batch[0][m])
        grads, norm, loss = _device_gradient(setup, m, leaves, logits, batch, targets, gamma)
        _clipped_step_(setup, params, m, grads, norm, lr, clip_S)
        norms.append(norm)
        losses.append(loss)
    return norms, losses


def shares_training_forward(setup: TrialSetup) -> bool:
    """Whether a round's soft labels can be read off its training forward: a full-batch round
    (FedSGD, the paper profile on MNIST) forwards every local sample once with the round's
    starting parameters, exactly the samples and parameters of the soft labels (`soft_labels`),
    so the round makes one forward per WD instead of two. Only for fp32 (bf16 trains under
    autocast, the soft labels are fp32) and models without batch statistics
    (`FunctionalNetwork.batch_statistics`: a BatchNorm model's logits depend on the batch, its
    soft labels use its `eval_batch` chunks); per-sample
    logits of such a model do not depend on the batch they are computed in (the same kernels
    row by row: equal bit for bit on the measured CPU, benchmarks/ota_fd_round.py, and a test
    compares the run tables of both paths)."""
    model = setup.model
    return bool(setup.local.full_batch) and getattr(model, "precision", "fp32") != "bf16" \
        and getattr(model, "batch_statistics", True) is False


def soft_labels_from_logits(setup: TrialSetup, logits: list[torch.Tensor],
                            num_classes: int) -> torch.Tensor:
    """q_i^k [M, K, K] as `soft_labels` makes it, from each WD's logits [n_max, K] on its
    full batch (`full_batches`: its samples in local order, then padding, left out here):
    the same softmax rows added in the same order into the same float64 sums."""
    M, K = setup.data.num_clients, num_classes
    out = torch.zeros(M, K, K, dtype=torch.float64)
    with torch.no_grad():
        for m in range(M):
            size = int(setup.data.sizes[m])
            idx = setup.data.client_index[setup.data.offsets[m]:setup.data.offsets[m + 1]]
            y = setup.data.y[idx].cpu()
            sums = torch.zeros(K, K, dtype=torch.float64)
            sums.index_add_(0, y, torch.softmax(logits[m][:size], dim=-1).double().cpu())
            counts = torch.bincount(y, minlength=K).double().clamp_min(1.0)
            out[m] = sums / counts[:, None]
    return out


def step_size(eta0: float, t: int) -> float:
    """eta_t of round t = 1..T: eta_0 / sqrt(t) (the appendix's eta_t = eta_0 / sqrt(t + 1) for
    its t = 0..T-1: Appendix A, (11)-(12), where sum_t 1/eta_t >= 2 T^{3/2} / (3 eta_0) uses
    exactly this decay). Every method of the wing uses it, FD and the FL benchmarks alike
    (Appendix E trains "both of the FD and FL approaches" with one algorithm; the FL rule is not
    stated otherwise, so it is our reading that it decays the same way)."""
    return eta0 / math.sqrt(t)


def evaluate(setup: TrialSetup, params: torch.Tensor) -> dict[str, float]:
    """Mean (and min) over WDs of each WD's model on the test set and, where the run measures
    the training metrics (`TrialSetup.train_eval`), on the training subset."""
    test_loss, test_acc = evaluate_many(setup.model, params, *setup.test)
    row = {"test_accuracy": float(test_acc.mean()), "test_accuracy_min": float(test_acc.min()),
           "test_loss": float(test_loss.mean())}
    if setup.train_eval is not None:
        train_loss, train_acc = evaluate_many(setup.model, params, *setup.train_eval)
        row.update(train_loss=float(train_loss.mean()), train_accuracy=float(train_acc.mean()))
    return row


def run_fd_trial(setup: TrialSetup, scheme, design: dict[str, Any], progress: bool = True
                 ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """All T rounds of one trial of one method; returns the per-round table and the records.
    Step size `step_size` (eta_0 / sqrt(t + 1), t = 0..T-1); E local steps per round on
    mini-batches (`local_steps`, `batch_size`) or one full-batch step (`full_batch`, FedSGD).
    T is the design's (a fixed-T curve's own T, `otafd_fixedT`); eta_0 the curve's
    `eta0` where it names one (an eta_0 calibration run), else the block's. The FL benchmarks
    (`scheme.model_averaging`) run the core's FL loop on the same set-up (data, channel and
    mini-batch streams: CRN) and are charged D channel uses per round."""
    if int(design["T"]) != setup.rounds:
        setup = dataclasses.replace(setup, rounds=int(design["T"]))
    if "eta0" in scheme.params:            # a curve's own eta_0 (calibration.py's runs)
        setup = dataclasses.replace(setup, local=dataclasses.replace(
            setup.local, lr=float(scheme.params["eta0"])))
    if getattr(scheme, "model_averaging", False):
        return federated_trial(setup, scheme, design, progress)
    K = setup.model.num_classes
    counts = class_counts(setup, K)
    params = initial_params(setup).unsqueeze(0).repeat(setup.data.num_clients, 1)
    rows = [{"round": 0, "time_s": 0.0, "channel_uses": 0, **evaluate(setup, params)}]
    records, uses, eps_ratio, case2, nu = [], 0, 0.0, 0.0, 0.0
    shared_forward = shares_training_forward(setup)
    batch = full_batches(setup.data) if setup.local.full_batch else None
    for t in range(1, setup.rounds + 1):
        streams = RoundStreams(setup.seed, setup.experiment, setup.trial, t)
        power = draw_channel_power(setup.statistics.path_gain, streams)
        state = RoundState(t, power, setup.data.sizes, setup.statistics, streams,
                           extras={"class_counts": counts})
        targets, record = None, {}
        lr = step_size(setup.local.lr, t)
        if shared_forward:              # full batch: the soft labels' forward is the step's
            forwards = [_device_forward(setup, params, m, batch[0][m])
                        for m in range(params.shape[0])]
            if scheme.shares:
                q = soft_labels_from_logits(setup, [f[1] for f in forwards], K)
                flat, record = scheme.aggregate(q.reshape(q.shape[0], -1), state, design)
                targets = flat.reshape(K, K)
            # every gradient before any update: the leaves are views of `params`
            grads, norms, losses = zip(*(_device_gradient(setup, m, *forwards[m], batch, targets,
                                                          scheme.gamma)
                                         for m in range(params.shape[0])))
            del forwards
            for m in range(params.shape[0]):
                _clipped_step_(setup, params, m, grads[m], norms[m], lr, scheme.clip_S)
            if "theorem1_phi1" in record:                  # Theorem 1's measured inputs (X4)
                record.update(theorem1_gradnorm=list(norms), theorem1_loss=list(losses))
        else:
            if scheme.shares:
                q = soft_labels(setup, params, K)
                flat, record = scheme.aggregate(q.reshape(q.shape[0], -1), state, design)
                targets = flat.reshape(K, K)
            steps = 1 if setup.local.full_batch else setup.local.steps
            for step in range(steps):
                batch = full_batches(setup.data) if setup.local.full_batch else \
                    sample_batches(setup.data, setup.local.batch_size, streams("data"))
                norms, losses = local_step_(setup, params, batch, targets, gamma=scheme.gamma,
                                            lr=lr, clip_S=scheme.clip_S)
                if step == 0 and "theorem1_phi1" in record:    # Theorem 1's inputs (X4)
                    record.update(theorem1_gradnorm=norms, theorem1_loss=losses)
        uses += scheme.channel_uses(K, setup.data.num_clients)
        records.append({"round": t, **record})
        row = {"round": t, "time_s": float(t), "channel_uses": uses,      # the table: scalars
               **{k: v for k, v in record.items() if isinstance(v, (int, float, bool))}}
        if "eps_real_ratio" in record:      # the run's realised eps_i / eps_i so far (max over t)
            eps_ratio = max(eps_ratio, record["eps_real_ratio"])
            row["eps_real_ratio_max"] = eps_ratio
        if "case2_fraction" in record:      # share of DP-limited class-rounds so far (X5)
            case2 += record["case2_fraction"]
            row["case2_share"] = case2 / t
        if "nu_mean" in record:             # the run's mean per-entry noise nu so far (X3)
            nu += record["nu_mean"]
            row["nu_mean_run"] = nu / t
        if t % setup.eval_every == 0 or t == setup.rounds:
            row.update(evaluate(setup, params))
        rows.append(row)
    if records and "theorem1_phi1" in records[0]:
        rows[-1].update(omega_columns(records, scheme, setup.local.lr))
    return pd.DataFrame(rows), records


def omega_columns(records: list[dict[str, Any]], scheme, eta0: float) -> dict[str, float]:
    """Theorem 1 on the run's own trajectory (`theorem1`): sum_i Omega_i(T) and its
    three terms, and sum_i of the bound Omega_i + 8 gamma L_2 S, from the Phi_1, Phi_2, gradient
    norms and losses the rounds recorded; L_1, L_2 are the curve's `theory` constants (X6's,
    reconstructed [R]), eta_0 and gamma the run's, S = clip_S, T = the rounds run."""
    theory = scheme.params["theory"]
    consts = TheoryConstants(eta0=float(eta0), gamma=scheme.gamma,
                             L1=float(theory["L1"]), L2=float(theory["L2"]))
    column = {k: np.array([r[f"theorem1_{k}"] for r in records])
              for k in ("phi1", "phi2", "gradnorm", "loss")}
    terms = th.omega_terms(T=len(records), consts=consts, fmax=column["loss"].max(axis=0),
                           phi1=column["phi1"], phi2=column["phi2"], gradnorm=column["gradnorm"])
    omega = sum(terms.values())
    floor = 8.0 * consts.gamma * consts.L2 * scheme.clip_S
    return {"theorem1_omega": float(omega.sum()), "theorem1_bound": float((omega + floor).sum()),
            **{f"theorem1_{k}": float(v.sum()) for k, v in terms.items()}}


def federated_trial(setup: TrialSetup, scheme, design: dict[str, Any], progress: bool = True
                    ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """An FL benchmark through the core's FL round (`airfl.core.loop.TrialRun`: one global
    model, server step w + Delta) with FD's step-size rule (`step_size`, eta_0 / sqrt(t + 1)):
    FedAvg (deltas after E local steps, the quick profile) takes its E local steps at eta_t;
    FedSGD (`full_batch`, the paper profile on MNIST: every WD uploads its full-batch gradient)
    steps the server by w - eta_t g (the core's `gradient` upload). Appendix E trains FD and FL
    with one algorithm, so one rule for both (our reading). The cumulative uplink channel uses
    are D per round (one analog use per parameter)."""
    if setup.local.full_batch:
        setup = dataclasses.replace(setup, local=dataclasses.replace(setup.local,
                                                                     upload="gradient"))
    eta0 = setup.local.lr
    run = TrialRun(setup, scheme, design)
    while not run.done:
        run.begin()
        eta = step_size(eta0, run.round)
        if setup.local.full_batch:        # FedSGD: the server's step is eta_t
            run.setup = dataclasses.replace(setup, server=dataclasses.replace(setup.server,
                                                                              lr=eta))
        else:                             # FedAvg: every local step is eta_t, the server's 1
            run.setup = dataclasses.replace(setup, local=dataclasses.replace(setup.local,
                                                                             lr=eta))
        run.finish(client_updates(run.setup, run.params, run.streams, run.participants))
    table, records = run.result()
    table["channel_uses"] = table["round"] * int(setup.model.dim)
    if "eps_real_ratio" in table:          # realised eps_i / eps_i so far, as the FD loop logs
        table["eps_real_ratio_max"] = table["eps_real_ratio"].cummax()
    return table, records
