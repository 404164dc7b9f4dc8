"""The round loop of one trial: local training -> scheme aggregation -> server step -> evaluation.

Kept tiny on purpose (pfl-research's simulator loop): everything that differs between schemes
lives in `Scheme.aggregate`; everything random comes from the round's named streams, so two
schemes in the same trial see identical channels and mini-batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm

from airfl.channel.fading import rayleigh_power
from airfl.core.engine import ClientData, evaluate, local_sgd
from airfl.core.scheme import ChannelStatistics, RoundState, Scheme
from airfl.models import FlatModel
from airfl.rng import RoundStreams, torch_generator


@dataclass
class TrialSetup:
    """Everything a trial needs, fixed before the first round."""

    experiment: str
    seed: int
    trial: int
    model: FlatModel
    data: ClientData
    test: tuple[torch.Tensor, torch.Tensor]
    train_eval: tuple[torch.Tensor, torch.Tensor]
    statistics: ChannelStatistics
    rounds: int
    eval_every: int
    local_steps: int
    batch_size: int
    lr: float
    server_lr: float


def draw_channel_power(setup: TrialSetup, streams: RoundStreams) -> torch.Tensor:
    """|h_{m,t}|^2 = Lambda_m * Exp(1) for all devices (Rayleigh block fading), one draw per round."""
    return rayleigh_power(setup.statistics.path_gain, 1, streams("channel"))[0]


def _evaluate_row(setup: TrialSetup, params: torch.Tensor) -> dict[str, float]:
    test_loss, test_acc = evaluate(setup.model, params, *setup.test)
    train_loss, train_acc = evaluate(setup.model, params, *setup.train_eval)
    return {"train_loss": train_loss, "train_accuracy": train_acc, "test_loss": test_loss,
            "test_accuracy": test_acc}


def _scalar_fields(record: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in record.items() if isinstance(v, (int, float, bool))}


def run_trial(setup: TrialSetup, scheme: Scheme, design: dict[str, Any], progress: bool = True
              ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Run all rounds; returns the per-round table and the per-round records (for privacy)."""
    device = setup.data.x.device
    params = setup.model.init(torch_generator(setup.seed, setup.experiment, "trial", setup.trial,
                                              "init")).to(device)
    rows = [{"round": 0, "time_s": 0.0, **_evaluate_row(setup, params)}]
    records, elapsed = [], 0.0
    bar = tqdm(range(1, setup.rounds + 1), desc=f"{scheme.name} trial {setup.trial}",
               disable=not progress, mininterval=5.0, file=None)
    for t in bar:
        streams = RoundStreams(setup.seed, setup.experiment, setup.trial, t)
        state = RoundState(t, draw_channel_power(setup, streams), setup.data.sizes, setup.statistics,
                           streams)
        updates = local_sgd(setup.model, params, setup.data, setup.local_steps, setup.batch_size,
                            setup.lr, streams("data"))
        server_update, record = scheme.aggregate(updates, state, design)
        params = params + setup.server_lr * server_update
        elapsed += float(record.get("latency_s", 0.0))
        records.append({"round": t, **record})
        row = {"round": t, "time_s": elapsed, **_scalar_fields(record)}
        if t % setup.eval_every == 0 or t == setup.rounds:
            row.update(_evaluate_row(setup, params))     # a diverged run is recorded, not hidden
        rows.append(row)
    return pd.DataFrame(rows), records
