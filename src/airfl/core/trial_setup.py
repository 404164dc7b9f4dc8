"""What a trial is, fixed before its first round: the generic part (ids, model, data, evaluation
sets, channel statistics, round budget) plus three small parts with one job each.

Why three parts ("one call builds a trial's set-up"): the round loop used to
grow one flag per paper. Now a paper's difference is a value of one part, not a new field:
- `LocalWork`: what each client computes and uploads (FedAvg local SGD for `steps` mini-batches
  or `epochs` shuffled epochs, uploading its delta; or one gradient, full-batch or mini-batch);
- `ServerStep`: the server's step size and its optional map after the step (Biased FL's
  projection onto the ball W, eq. 3 and eq. 18 of its paper);
- `Schedule`: a time horizon and time-based evaluation (Biased FL's digital schemes, which run
  as many rounds as fit the uplink-time budget).
The pipeline's `airfl.pipeline.trial.trial_setup` builds all of them from a resolved block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from airfl.core.engine import ClientData, GatheredBatch
from airfl.core.scheme import ChannelStatistics
from airfl.models.flat import FlatModel

__all__ = ["LocalWork", "Schedule", "ServerStep", "TrialSetup"]

UPLOADS = ("delta", "gradient")


@dataclass(frozen=True)
class LocalWork:
    """A client's work in one round and what it uploads: "delta" (w_m - w after local SGD of
    `steps` mini-batches of `batch_size`, or `epochs` shuffled epochs when set) or "gradient"
    (one gradient at w: on the whole local dataset with `full_batch`, sigma_m = 0 in Biased FL's
    Assumption 3, else on one mini-batch)."""

    steps: int
    batch_size: int
    lr: float
    epochs: int | None = None
    upload: str = "delta"
    full_batch: bool = False

    def __post_init__(self):
        if self.upload not in UPLOADS:
            raise ValueError(f"training.upload must be one of {UPLOADS}, got {self.upload!r}")


@dataclass(frozen=True)
class ServerStep:
    """The server's step size lr_s and its optional projection radius rho_W: after the step the
    model is projected onto W = {||w|| <= rho_W} (Biased FL eq. 3, used in its eq. 18)."""

    lr: float
    projection_radius: float | None = None

    def project(self, params: torch.Tensor) -> torch.Tensor:
        """P_W(v) = v min(1, rho_W / ||v||) (Biased FL eq. 3); identity without a radius."""
        if self.projection_radius is None:
            return params
        norm = float(torch.linalg.vector_norm(params))
        if norm > self.projection_radius:
            params = params * (self.projection_radius / norm)    # Biased FL eq. 3
        return params


@dataclass(frozen=True)
class Schedule:
    """Time-based control of a trial: stop once the simulated uplink time reaches `horizon_s`,
    evaluate whenever the time crosses a multiple of `eval_every_s` (None: round-based only)."""

    horizon_s: float | None = None
    eval_every_s: float | None = None


@dataclass
class TrialSetup:
    """Everything a trial needs, fixed before the first round."""

    experiment: str
    seed: int
    trial: int
    model: FlatModel
    data: ClientData
    test: tuple[torch.Tensor, torch.Tensor]
    train_eval: tuple[torch.Tensor, torch.Tensor] | None
    """The training subset the training metrics are measured on; None: the run measures none
    (no figure, claim or derivation reads them: `Experiment.measures_training`)."""
    statistics: ChannelStatistics
    rounds: int
    eval_every: int
    local: LocalWork
    server: ServerStep
    schedule: Schedule = field(default_factory=Schedule)
    track_objective: bool = False         # also log F(w) = (1/N) sum_m f_m(w) (regularised)
    objective_clients: tuple[int, ...] | None = None
    """With track_objective: also log `objective_trained`, the mean of f_m over these clients
    only (the clients a scheme ever trains on, `Scheme.trained_clients`; step-size selection)."""
    eval_batch: int | None = None         # snapshots evaluated together (None: <= 64, ~64 MB)
    eval_last: int = 0
    """Also evaluate the `eval_last` rounds before the last (a panel that reads the model k
    rounds before the last, e.g. theta^(T-1)); 0: the schedule and the last round only."""
    full_batch_data: GatheredBatch | None = field(init=False, default=None)
    """Every client's whole batch, gathered once (full-batch local work or a tracked objective;
    None otherwise): derived from `data`, read by the round loop and by core.lockstep."""

    def __post_init__(self):
        needs_full = self.local.full_batch or self.track_objective
        self.full_batch_data = self.data.full_batch() if needs_full else None
