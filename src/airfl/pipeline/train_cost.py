"""What `airfl plan` charges a training job (train, trials, tune, calibrate): one trial's work
of a curve, read from the round loop, which the plan multiplies by measured unit costs.

A train job (one curve) then costs, per trial (the reading of the round loop,
`airfl.core.loop.run_trial`, made here):

    rounds x clients x steps x client_step(model, batch)        local training
  + evaluations x models x (test + train-loss samples) x eval_sample(model)

(for full-batch gradient uploads the first line is rounds x devices x samples x
lockstep_sample(model); the per-run-round work of the scheme itself, e.g. a digital scheme's
bit allocation, is not in the model) with `clients` the devices that train in a round (the
curve's `sample_ratio` x devices, else all), `steps` the local steps (or epochs x
ceil(samples / batch) in epochs mode; one step over all local samples for full-batch
gradients), `evaluations` round 0, every `eval_every` rounds and the last (or horizon /
`eval_every_s` + 1 on a time schedule; round 0 and the last only for a curve that only
final-value panels draw, `Experiment.evaluation`), the train-loss samples
`scale.train_eval_subset` only where a reader declares a training metric (0 otherwise,
`Experiment.measures_training`), `models` 1, or one per device for an experiment with
its own trainer (federated distillation keeps a model per device and also forwards every local
sample once a round for its soft labels, except in a full-batch fp32 round of a model without
batch statistics, where the training step's forward gives them: `shares_training_forward`). A tune job costs its search, (scheme-parameter
combinations + step sizes) x selection trials, as full runs without evaluation: an upper bound
(a descending search stops early, candidates with provably equal runs run once, lockstep
batching shares the gradients). A calibrate job costs one round.

A horizon-bounded run (`horizon_s`, Biased FL's digital panels) stops when its rounds'
latencies add up to the horizon; a round's latency follows the scheme's choices and the drawn
channel, so its rounds are known only by running it. They are measured
(benchmarks/horizon_rounds.py, `horizon_runs` in the unit costs: per curve, rounds per second of
horizon at its declared parameters and averaged over its parameter grid, and the CPU seconds of
one run-round in lockstep, the scheme's aggregation and channel draw included). Such a train job
costs trials x min(budget, horizon x rate) run-rounds, a tune job selection trials x
(combinations x the grid's rounds + step sizes x the declared parameters' rounds), each at the
measured run-round cost, plus evaluation as above; the declared parameters stand for the tuned
ones (not known before the tune). A horizon-bounded curve not measured falls back to horizon /
T_max rounds (T_max its cap `T_max_s` or the panel's smallest: 2-5x off, benchmarks/README.md).

Trial batching (`airfl.core.lockstep.trial_batching`: FedAvgCNN's trials step together on CPU,
every CNN's on CUDA) is not in the CPU cost: DP as a perk's round measured 1.09x faster batched
(benchmarks/results/engine.md), inside the unit costs' spread between loads (~1.5x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from airfl.core.experiments import final_rounds_back
from airfl.data import dataset_info
from airfl.models.flat import BATCH_STATISTICS_MODELS


@dataclass
class TrainWork:
    """What one trial of a curve computes: client steps per (model, batch) and evaluated
    samples per model (as the module docstring reads the round loop)."""

    model: str
    batch: int
    client_steps: float
    eval_samples: float
    lockstep_samples: float = 0.0      # full-batch gradient samples, runs in lockstep



def samples_per_device(block: dict[str, Any]) -> float:
    """Mean local dataset size of the block's partition (its declared sizes; the training set
    split evenly when the partition declares none)."""
    part, n = block["partition"], block["num_devices"]
    info = dataset_info(block["dataset"])
    if part.get("samples_per_device"):
        return float(part["samples_per_device"])
    if "size_range" in part:
        low, high = part["size_range"]
        return (low + high) / 2
    if "dominant" in part:
        return float(part["dominant"] + (info.num_classes - 1) * part.get("others", 0))
    if "per_class" in part:
        return part["per_class"] * info.num_classes / n
    if part.get("pool_per_class"):
        return part["pool_per_class"] * info.num_classes / n
    return info.num_train / n


def rounds_of(block: dict[str, Any], curve: dict[str, Any]) -> int:
    """The block's rounds; for a run bounded by a time horizon, horizon / T_max rounds, T_max
    the curve's round-time cap or, for a curve without one (baselines whose round time follows
    the drawn channel, unknown before the run), the smallest cap a curve of the panel declares:
    the fallback for a horizon-bounded curve whose rounds are not measured (module docstring;
    `horizon_rounds` where they are)."""
    scale = block["scale"]
    rounds = int(scale["rounds"])
    if scale.get("horizon_s"):
        caps = [c["T_max_s"] for c in block["curves"].values()
                if isinstance(c, dict) and c.get("T_max_s")]
        cap = curve.get("T_max_s") or (min(caps) if caps else None)
        if cap:
            rounds = min(rounds, math.ceil(scale["horizon_s"] / cap))
    return rounds


def evaluations(block: dict[str, Any], rounds: int) -> int:
    """Round 0, every eval_every rounds and the last (or the time schedule's ticks)."""
    scale = block["scale"]
    if scale.get("eval_every_s") and scale.get("horizon_s"):
        return int(scale["horizon_s"] // scale["eval_every_s"]) + 1
    every = int(scale.get("eval_every", 1))
    return rounds // every + 1 + (1 if rounds % every else 0)


def shares_training_forward(block: dict[str, Any]) -> bool:
    """Whether federated distillation's round reads its soft labels off the training forward
    (`airfl.papers.ota_fd.distillation.shares_training_forward`, which decides it in the run,
    on the built model): full-batch rounds, fp32 (not bf16), a model without batch statistics."""
    model = block["model"]
    return bool(block["training"].get("full_batch")) and model.get("precision") != "bf16" \
        and model["name"] not in BATCH_STATISTICS_MODELS


def train_work(experiment, block: dict[str, Any], curve: dict[str, Any],
               rounds: int | None = None, evaluate: bool = True,
               evaluation: str = "schedule", training_metrics: bool = True) -> TrainWork:
    """One trial's work of a curve (module docstring); `evaluation`: the rounds its readers
    declare (`Experiment.evaluation`: "final" evaluates round 0 and the last only, "final-k"
    the k rounds before the last too); `training_metrics`: whether they read the training
    metrics (`Experiment.measures_training`: the training subset is evaluated only then)."""
    training, n = block["training"], block["num_devices"]
    samples = samples_per_device(block)
    clients = round(curve["sample_ratio"] * n) if curve.get("sample_ratio") else n
    batch = int(training["batch_size"])
    if training.get("full_batch"):
        steps, batch = 1, max(1, round(samples))
    elif training.get("local_epochs"):
        steps = training["local_epochs"] * math.ceil(samples / batch)
    else:
        steps = int(training["local_steps"])
    rounds = rounds_of(block, curve) if rounds is None else rounds
    own_models = experiment.trainer is not None
    client_steps = rounds * clients * steps
    lockstep = 0.0
    if training.get("upload") == "gradient" and training.get("full_batch"):
        lockstep, client_steps = rounds * n * samples, 0
    # soft-label forwards, where the training forward does not give them
    eval_samples = rounds * n * samples if own_models and not shares_training_forward(block) \
        else 0.0
    if evaluate:
        info = dataset_info(block["dataset"])
        scale = block["scale"]
        test = scale.get("test_subset") or info.num_test
        train_eval = min(scale.get("train_eval_subset") or 0, n * samples) \
            if training_metrics else 0
        evaluated = evaluations(block, rounds) if evaluation == "schedule" else \
            min(2 + final_rounds_back(evaluation), rounds + 1)
        eval_samples += evaluated * (n if own_models else 1) * (test + train_eval)
    return TrainWork(block["model"]["name"], batch, client_steps, eval_samples, lockstep)


def tune_search(block: dict[str, Any], curve_name: str) -> tuple[int, int, int]:
    """What a tune job searches at most: (scheme-parameter combinations, step sizes, selection
    trials); every combination and every step size runs on every selection trial
    (pipeline.param_search searches the parameters first, then the step sizes with the chosen
    ones)."""
    tuning = block.get("tuning", {})
    grid = tuning.get("param_grid", {}).get(curve_name)
    if isinstance(grid, list):
        combos = len(grid)
    elif isinstance(grid, dict):
        combos = math.prod(len(v) for v in grid.values())
    else:
        combos = 0
    return combos, len(tuning.get("eta_factors", [1])), int(tuning.get("selection_trials", 1))


def tune_runs(block: dict[str, Any], curve_name: str) -> int:
    """Runs a tune job makes at most: (scheme-parameter combinations + step sizes) x selection
    trials."""
    combos, etas, trials = tune_search(block, curve_name)
    return (combos + etas) * trials


def horizon_rounds(block: dict[str, Any], rounds_per_s: float) -> int:
    """Rounds of a horizon-bounded run at a measured rate: the horizon's worth, at most the
    round budget (`scale.rounds`: the run stops at whichever comes first)."""
    scale = block["scale"]
    return min(int(scale["rounds"]), math.ceil(scale["horizon_s"] * rounds_per_s))


def measured_horizon_cost(stage: str, block: dict[str, Any], curve_name: str,
                          measured: dict[str, float]) -> tuple[float, int, float]:
    """A horizon-bounded job's training from its measured round rate and run-round cost
    (benchmarks/horizon_rounds.py): (CPU seconds of its training, rounds of one of its
    train runs, its run-rounds). A tune job's runs: every grid combination on every
    selection trial at the grid's mean rate, then every step size at the declared
    parameters' rate (they stand for the chosen ones); a train job's: its trials at the
    declared parameters' rate. Evaluation is costed apart (`train_work`)."""
    rounds = horizon_rounds(block, measured["rounds_per_s"])
    if stage == "tune":
        combos, etas, trials = tune_search(block, curve_name)
        grid_rounds = horizon_rounds(block, measured.get("grid_rounds_per_s",
                                                         measured["rounds_per_s"]))
        run_rounds = trials * (combos * grid_rounds + etas * rounds)
    else:
        run_rounds = rounds
    return run_rounds * measured["run_round_s"], rounds, run_rounds
