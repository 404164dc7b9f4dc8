"""The round loop of one trial: local training -> scheme aggregation -> server step -> evaluation.

Kept tiny on purpose (pfl-research's simulator loop): everything that differs between schemes
lives in `Scheme.aggregate`; everything random comes from the round's named streams, so two
schemes in the same trial see identical channels and mini-batches.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch

from airfl.channel.fading import power_from_pairs, rayleigh_power
from airfl.channel.pathloss import _validated
from airfl.core.engine import (client_gradients, evaluate_many, local_sgd, objective_many,
                               sample_batches)
from airfl.core.scheme import RoundState, Scheme
from airfl.core.trial_setup import LocalWork, Schedule, ServerStep, TrialSetup
from airfl.runtime.progress import Progress
from airfl.runtime.rng import RoundStreams, torch_generator

__all__ = ["LocalWork", "Schedule", "ServerStep", "TrialRun", "TrialSetup",
           "channel_power_sequence", "client_updates", "draw_channel_power", "initial_params",
           "initial_update_norms", "run_trial", "server_step"]


def draw_channel_power(path_gain: torch.Tensor, streams: RoundStreams) -> torch.Tensor:
    """|h_{m,t}|^2 = Lambda_m * Exp(1) for all devices (Rayleigh block fading), one draw per round:
    `rayleigh_power(path_gain, 1, streams("channel"))[0]`, its Gaussian pairs the stream's first
    draw, shared by the runs of a trial (`RoundStreams.first_normal`), and so is the power itself
    for equal path gains (`RoundStreams.derived`, keyed by their bytes; read-only)."""
    if path_gain.dtype != torch.float64:
        return rayleigh_power(path_gain, 1, streams("channel"))[0]    # it validates the input
    pairs = streams.first_normal("channel", (1, *path_gain.shape, 2))

    def power() -> torch.Tensor:
        return power_from_pairs(_validated(path_gain, "path_gain", low=0.0), pairs)[0]

    return streams.derived("channel_power", (path_gain.numpy().tobytes(),), power)


def channel_power_sequence(seed: int, experiment: str, trial: int, path_gain: torch.Tensor,
                           rounds: int) -> torch.Tensor:
    """The |h|^2 [T, N] that rounds 1..T of a trial draw: non-causal CSI for genie-aided designs."""
    return torch.stack([draw_channel_power(path_gain, RoundStreams(seed, experiment, trial, t))
                        for t in range(1, rounds + 1)])


class DeferredEvaluation:
    """Evaluation of the models of due rounds, in batches of snapshots: one batched pass over
    the test set for many models is several times cheaper than one pass per model (softmax:
    one GEMM with E C columns). Rows are filled in place when their batch is evaluated; memory
    stays bounded (at most ~64 MB of snapshots)."""

    def __init__(self, setup: "TrialSetup"):
        self.setup = setup
        self.capacity = setup.eval_batch or max(1, min(64, 2 ** 24 // setup.model.dim))
        self.pending: list[tuple[dict[str, Any], torch.Tensor]] = []

    def add(self, row: dict[str, Any], params: torch.Tensor) -> None:
        self.pending.append((row, params.detach().clone()))
        if len(self.pending) >= self.capacity:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        setup = self.setup
        params = torch.stack([p for _, p in self.pending])
        test_loss, test_acc = evaluate_many(setup.model, params, *setup.test)
        columns = {"test_loss": test_loss, "test_accuracy": test_acc}
        if setup.train_eval is not None:                   # training metrics, where read
            train_loss, train_acc = evaluate_many(setup.model, params, *setup.train_eval)
            columns = {"train_loss": train_loss, "train_accuracy": train_acc, **columns}
        if setup.track_objective:                          # F(w) = (1/N) sum_m f_m(w)
            columns["objective"] = objective_many(setup.model, params, setup.full_batch_data)
            if setup.objective_clients is not None:        # over the clients trained on
                columns["objective_trained"] = objective_many(
                    setup.model, params, setup.full_batch_data, setup.objective_clients)
        for i, (row, _) in enumerate(self.pending):
            row.update({name: float(values[i]) for name, values in columns.items()})
        self.pending = []


def client_updates(setup: TrialSetup, params: torch.Tensor, streams: RoundStreams,
                   participants: torch.Tensor | None = None) -> torch.Tensor:
    """What clients upload: model deltas after local SGD, or one (full- or mini-batch) gradient.
    With `participants`, only those clients train (rows in that order)."""
    local = setup.local
    if local.upload == "delta":
        data = setup.data if participants is None else setup.data.subset(participants)
        return local_sgd(setup.model, params, data, local.steps, local.batch_size,
                         local.lr, streams("data"), local.epochs)
    if participants is not None:
        raise ValueError("partial participation is implemented for delta uploads only")
    batch = setup.full_batch_data if local.full_batch else \
        sample_batches(setup.data, local.batch_size, streams("data"))
    return client_gradients(setup.model, params, setup.data, batch)[1]


def server_step(setup: TrialSetup, params: torch.Tensor, aggregate: torch.Tensor) -> torch.Tensor:
    """w + lr_s * Delta (delta upload) or P_W(w - lr_s * g) (gradient upload, Biased FL eq. 18)."""
    sign = 1.0 if setup.local.upload == "delta" else -1.0
    params = params + sign * setup.server.lr * aggregate.to(params.dtype)
    return setup.server.project(params)                # P_W (Biased FL eq. 3), if a radius


def _due(setup: TrialSetup, t: int, elapsed: float, before: float) -> bool:
    """Evaluate on the round schedule, on the time schedule, at the `eval_last` rounds before
    the last, and at the end."""
    if setup.eval_last and t >= setup.rounds - setup.eval_last:
        return True
    every_s = setup.schedule.eval_every_s
    if every_s is not None:                            # 1e-9 slack: sums of latencies are inexact
        ticks = lambda time_s: int(time_s / every_s * (1 + 1e-9))  # noqa: E731
        return ticks(elapsed) > ticks(before)
    return t % setup.eval_every == 0


def _scalar_fields(record: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in record.items() if isinstance(v, (int, float, bool))}


def initial_params(setup: TrialSetup) -> torch.Tensor:
    """theta_0 of the trial (its own `init` stream: every curve of a trial starts from it)."""
    return setup.model.init(torch_generator(setup.seed, setup.experiment, "trial", setup.trial,
                                            "init")).to(setup.data.x.device)


def initial_update_norms(setup: TrialSetup) -> torch.Tensor:
    """||u_k|| of every client's upload at theta_0 in round 1 of the trial (its data draws),
    before any clipping, channel or noise: one noise-free calibration round (e.g. CDPB's W_clip
    is their median)."""
    streams = RoundStreams(setup.seed, setup.experiment, setup.trial, 1)
    updates = client_updates(setup, initial_params(setup), streams)
    return torch.linalg.vector_norm(updates.double(), dim=1)


class TrialRun:
    """One trial's round loop as an object stepped a round at a time: `begin` draws the round's
    channel and participants, `finish` aggregates the clients' uploads, steps the server and
    records the round. `run_trial` drives one; `airfl.core.lockstep` drives several in lockstep
    so that their gradients are one batched computation (same streams, same rows)."""

    def __init__(self, setup: TrialSetup, scheme: Scheme, design: dict[str, Any]):
        self.setup, self.scheme, self.design = setup, scheme, design
        self.params = initial_params(setup)
        self.evaluation = DeferredEvaluation(setup)
        self.rows: list[dict[str, Any]] = [{"round": 0, "time_s": 0.0}]
        self.evaluation.add(self.rows[0], self.params)
        self.records: list[dict[str, Any]] = []
        self.elapsed, self.round, self.done = 0.0, 0, False

    def begin(self) -> torch.Tensor | None:
        """Start the next round: its streams, channel and state; returns the participants
        (None: every device trains)."""
        self.round += 1
        setup = self.setup
        self.streams = RoundStreams(setup.seed, setup.experiment, setup.trial, self.round)
        power = draw_channel_power(setup.statistics.path_gain, self.streams)
        self.state = RoundState(self.round, power, setup.data.sizes, setup.statistics,
                                self.streams)
        self.participants = self.scheme.participants(self.state, self.design)
        return self.participants

    def finish(self, updates: torch.Tensor,
               aggregated: tuple[torch.Tensor, dict[str, Any]] | None = None) -> None:
        """Aggregate the round's uploads, step the server, record the round; sets `done` after
        the last round (the round budget, or the time horizon reached). `aggregated`: what
        `scheme.aggregate(updates, ...)` returns, when the caller computed it already (the
        lockstep's `Scheme.aggregate_many` over several runs)."""
        setup, t = self.setup, self.round
        server_update, record = aggregated if aggregated is not None else \
            self.scheme.aggregate(updates, self.state, self.design)
        self.params = server_step(setup, self.params, server_update)
        before, self.elapsed = self.elapsed, self.elapsed + float(record.get("latency_s", 0.0))
        self.records.append({"round": t, **record})
        row = {"round": t, "time_s": self.elapsed, **_scalar_fields(record)}
        horizon_s = setup.schedule.horizon_s
        self.done = t == setup.rounds or (horizon_s is not None and self.elapsed >= horizon_s)
        if self.done or _due(setup, t, self.elapsed, before):
            self.evaluation.add(row, self.params)        # a diverged run is recorded, not hidden
        self.rows.append(row)

    def result(self) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
        self.evaluation.flush()
        return pd.DataFrame(self.rows), self.records


def run_trial(setup: TrialSetup, scheme: Scheme, design: dict[str, Any], progress: bool = True
              ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Run all rounds; returns the per-round table and the per-round records (for privacy)."""
    run = TrialRun(setup, scheme, design)
    log = Progress(f"{setup.experiment} {scheme.name}, trial {setup.trial}", setup.rounds,
                   enabled=progress)                # a line in the job's log every ~30 s
    for t in range(1, setup.rounds + 1):
        run.begin()
        run.finish(client_updates(setup, run.params, run.streams, run.participants))
        log.update(t)
        if run.done:
            break
    return run.result()
