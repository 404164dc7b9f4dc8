"""`airfl plan`: what a run of the pipeline will cost before it starts, from the real DAG and
measured unit costs.

The jobs are the DAG's own (`airfl.pipeline.dag.jobs`, the list dvc.yaml and the Snakefile are
made from), restricted to what a target needs (its outputs and everything upstream). Each job
is costed from unit costs that `benchmarks/unit_costs.py` measures on one machine and stores
with that machine's description (CPU model, cores, date, torch version) in
`workflow/unit_costs.json`:

* a job's fixed cost per stage (the median job of that stage in a measured Snakemake run,
  start-up included: every job that is not training is costed by it alone; every stage of
  the stage table needs one, a stage without stops the plan, and a rule that runs no command,
  a collect target, costs nothing);
* per model: one SGD step of one client at a batch size (`client_step_s[batch]`, the engine
  `auto` runs on CPU, one thread), one evaluation forward of one sample (`eval_sample_s`) and,
  for models trained by full-batch gradient uploads, one sample's gradient in a lockstep of many
  runs (`lockstep_sample_s`: `client_gradients_many`, how Biased FL's trials and tune candidates
  run together).

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
sample once a round for its soft labels). A tune job costs its search, (scheme-parameter
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

An audit job (`airfl audit <wing> <mechanism>`, stages/audit.py) costs its stage's fixed cost
plus its work at its params: the points the wing's audit factory builds (`factory_s`; the plan
reads their work from what the wing registers of it without building them, `Wing.audit_works`,
where building them is expensive, as the arena's designs are, else builds them too; the job's
own cost guard costs the points it built), each drawn in 2 worlds x its draws (the stage's count:
`audit.draws` for a batched sampler, `audit.loop_draws` for one aggregation call a draw, or the
point's own), each draw summing `releases` releases (a multi-round statistic: T rounds), at
the measured CPU seconds of one release-draw of the audit's kind (benchmarks/audit_costs.py:
a batched draw is a coordinate of a linear release, ~0.1-1 us, a loop draw one aggregation
call, ~0.3 ms for CDPB), plus per point the bound (`audit_threshold`) at its measured fixed cost
and cost per draw. The draws and points come from the params, so `--set audit.loop_draws...`
is costed as run; what a release costs at other settings (a model dimension, devices) is not
modelled: the release-draw is measured at the profile's declared settings. The stage's fixed
cost (the median quick audit job) includes a quick audit's own draws, ~1-3 s.

A batch size not measured is costed per sample from the nearest measured one. GPU-hours come
from a GPU unit cost per client step (`gpu.models`, written by benchmarks/device_check.py from a
measured step): the training jobs' client steps times it (evaluation and job start-up are not
in them); a paper with a training job whose model has no GPU unit cost says "not measured".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airfl.params.config import ConfigError
from airfl.data import dataset_info
from airfl.core.experiments import final_rounds_back
from airfl.pipeline.trial_blocks import block_trials, trial_blocks

UNIT_COSTS = Path("workflow/unit_costs.json")
CORES = 2                              # the wall-clock column: days on this many cores


@dataclass
class JobCost:
    """One job's planned cost: core-seconds on the measured CPU (one thread), GPU-seconds of
    its training where the GPU was measured."""

    stage: str
    name: str
    paper: str
    core_s: float
    gpu_s: float | None = None         # None: no GPU unit cost for this job's work
    trials: int = 0                    # training runs (trials of a curve) it makes


COSTED_STAGES = ("train", "trials", "tune", "calibrate")   # costs that grow with the params


@dataclass(frozen=True)
class PlannedJob:
    """What costing reads of a job (`job_cost`): its stage, name and arguments; made from a
    Snakemake job's rule and wildcards or a command line, without building airfl's whole DAG
    (`dag.jobs`, tens of seconds for the quick profile)."""

    stage: str
    name: str
    args: tuple[str, ...]


@dataclass
class TrainWork:
    """What one trial of a curve computes: client steps per (model, batch) and evaluated
    samples per model (as the module docstring reads the round loop)."""

    model: str
    batch: int
    client_steps: float
    eval_samples: float
    lockstep_samples: float = 0.0      # full-batch gradient samples, runs in lockstep


@dataclass
class UnitCosts:
    """The measured unit costs (workflow/unit_costs.json): the machine, each stage's fixed job
    cost, per model its client step by batch size, evaluated sample and lockstep gradient
    sample, and an optional `gpu` section of the same per-model shape."""

    machine: dict[str, Any]
    stage_s: dict[str, float]
    models: dict[str, dict[str, Any]]
    gpu: dict[str, Any] = field(default_factory=dict)
    horizon_runs: dict[str, Any] = field(default_factory=dict)
    audits: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str = UNIT_COSTS) -> "UnitCosts":
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"unit costs: {path} not found; measure them with "
                              "`python benchmarks/unit_costs.py`")
        table = json.loads(path.read_text())
        for key in ("machine", "stage_s", "models"):
            if key not in table:
                raise ConfigError(f"unit costs: {path} has no {key!r} (expected machine, "
                                  "stage_s, models)")
        return cls(table["machine"], table["stage_s"], table["models"], table.get("gpu", {}),
                   table.get("horizon_runs", {}), table.get("audits", {}))

    def client_step(self, model: str, batch: int) -> float:
        """Seconds of one client's SGD step at `batch` on CPU (`nearest_batch`)."""
        return nearest_batch(self._model(model)["client_step_s"], batch)

    def lockstep_sample(self, model: str) -> float:
        entry = self._model(model)
        if "lockstep_sample_s" not in entry:
            raise ConfigError(f"unit costs: model {model!r} has no lockstep_sample_s (rerun "
                              "benchmarks/unit_costs.py)")
        return float(entry["lockstep_sample_s"])

    def eval_sample(self, model: str) -> float:
        return float(self._model(model)["eval_sample_s"])

    def gpu_client_step(self, model: str, batch: int) -> float | None:
        """Seconds of one client's step on the GPU measured (None: not measured there)."""
        entry = self.gpu.get("models", {}).get(model)
        return None if entry is None else nearest_batch(entry["client_step_s"], batch)

    def stage(self, stage: str) -> float:
        """A job's fixed cost of `stage`; a stage with none measured stops the plan (no
        stand-in: the table must name every stage of the stage table)."""
        if stage not in self.stage_s:
            raise ConfigError(f"unit costs: stage {stage!r} has no fixed cost (stage_s); "
                              "measure it with benchmarks/unit_costs.py")
        return float(self.stage_s[stage])

    def horizon_run(self, profile: str, experiment_id: str, curve: str) -> dict[str, float] | None:
        """A horizon-bounded curve's measured rounds per second of horizon (`rounds_per_s`,
        its declared parameters; `grid_rounds_per_s`, the mean over its parameter grid) and
        CPU seconds of one run-round in lockstep (`run_round_s`), from
        benchmarks/horizon_rounds.py; None where not measured."""
        return self.horizon_runs.get(f"{profile}/{experiment_id}", {}).get(curve)

    def audit(self, name: str) -> dict[str, Any]:
        """A registered audit's measured costs (`wing/mechanism`, benchmarks/audit_costs.py):
        `release_draw_s` per kind ("batched", "loop": CPU seconds of one release of one draw
        in one world), `bound` (`fixed_s`, `draw_s`: the bound of one point) and `factory_s`
        (building its points). A kind or an audit not measured takes the largest measured
        cost of that kind (the kinds differ by orders of magnitude, the audits of one kind by
        less than ~30x); none measured at all stops the plan."""
        measured = {k: v for k, v in self.audits.items() if k != "measured"}
        if not measured:
            raise ConfigError("unit costs: no audit costs (audits); measure them with "
                              "`python benchmarks/audit_costs.py`")
        entry = measured.get(name, {})
        kinds = {kind: max(e["release_draw_s"][kind] for e in measured.values()
                           if kind in e["release_draw_s"])
                 for kind in ("batched", "loop")
                 if any(kind in e["release_draw_s"] for e in measured.values())}
        kinds.update(entry.get("release_draw_s", {}))
        largest = max(measured.values(), key=lambda e: e["bound"]["draw_s"])
        return {"release_draw_s": kinds, "bound": entry.get("bound", largest["bound"]),
                "factory_s": entry.get("factory_s", max(e["factory_s"]
                                                        for e in measured.values()))}

    def _model(self, model: str) -> dict[str, Any]:
        if model not in self.models:
            raise ConfigError(f"unit costs: no measurement for model {model!r}; measured: "
                              + ", ".join(sorted(self.models))
                              + " (rerun benchmarks/unit_costs.py)")
        return self.models[model]


def nearest_batch(steps: dict[str, float], batch: int) -> float:
    """The measured seconds of a client step at `batch`, or per sample from the nearest
    measured batch (in ratio) when this one was not measured."""
    measured = {int(b): float(s) for b, s in steps.items()}
    if batch in measured:
        return measured[batch]
    nearest = min(measured, key=lambda b: (abs(math.log(b / batch)), b))
    return measured[nearest] / nearest * batch


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
    eval_samples = rounds * n * samples if own_models else 0.0      # soft-label forwards
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


@dataclass
class AuditWork:
    """What an audit job computes (the stage `audit`, `stages.audit.run`): per kind of
    sampler ("batched" or "loop") its release-draws, 2 worlds x draws x releases summed over
    the points, and per point the draws the bound reads (2 x draws)."""

    release_draws: dict[str, float]
    bound_draws: list[int]


def audit_work(params: dict[str, Any], wing: str, mechanism: str,
               points: list | None = None) -> AuditWork:
    """The work of `airfl audit <wing> <mechanism>` at these params: its points (`points`, as
    the stage built them; else what the wing registers of their work without building them,
    `Wing.audit_works`; else the wing's audit factory's, built here as the stage builds them),
    each drawn `draws_of` times per world (the stage's count: `audit.draws`, `audit.loop_draws`
    or the point's own), each draw summing `releases` releases (a multi-round statistic)."""
    from airfl.pipeline.registry import get_wing
    from airfl.pipeline.stages.audit import draws_of

    if points is not None:
        works = [point.work() for point in points]
    else:
        try:
            registered = get_wing(wing)
            cheap = registered.audit_work_function(mechanism)
            works = cheap(params) if cheap is not None else \
                [point.work() for point in registered.audit_factory(mechanism)(params)]
        except KeyError as error:
            raise ConfigError(f"plan: {error.args[0]}") from None
    work = AuditWork({}, [])
    for point in works:
        draws = draws_of(params, point)
        kind = "batched" if point.batched else "loop"
        work.release_draws[kind] = work.release_draws.get(kind, 0.0) \
            + 2.0 * draws * point.releases
        work.bound_draws.append(2 * draws)
    return work


def audit_seconds(params: dict[str, Any], wing: str, mechanism: str,
                  units: UnitCosts, points: list | None = None) -> float:
    """CPU seconds of an audit job beyond its stage's fixed cost: building its points, plus
    release-draws x the measured release-draw of their kind, plus per point the bound's fixed
    cost and its draws x the measured bound per draw (module docstring); `points`: the points
    the stage built (costed without building them again)."""
    work, unit = audit_work(params, wing, mechanism, points), units.audit(f"{wing}/{mechanism}")
    bound = unit["bound"]
    return (unit["factory_s"]
            + sum(n * unit["release_draw_s"][kind] for kind, n in work.release_draws.items())
            + sum(bound["fixed_s"] + n * bound["draw_s"] for n in work.bound_draws))


def job_paper(job) -> str:
    """The paper a job belongs to ('shared' for datasets)."""
    if job.stage == "data":
        return "shared"
    if job.stage == "reference":
        from airfl.pipeline.registry import all_experiments
        return next(e.paper for e in all_experiments()
                    if e.reference is not None and e.reference.name == job.args[0])
    if not job.args:
        return "shared"                          # the collected CLAIMS.md
    return job.args[0].split("/")[0]


def job_cost(job, params: dict[str, Any], units: UnitCosts,
             points: list | None = None) -> JobCost:
    """A job's cost; of a split curve (pipeline.trial_blocks), a block's job (stage trials)
    costs its trials and the train job, which merges them, its fixed cost alone; an audit job
    with `points` (built by its stage) is costed from them (`audit_work`)."""
    from airfl.pipeline.registry import get_experiment

    fixed = units.stage(job.stage)
    cost = JobCost(job.stage, job.name, job_paper(job), fixed)
    if job.stage == "audit":
        cost.core_s += audit_seconds(params, job.args[0], job.args[1], units, points)
        return cost
    if job.stage not in COSTED_STAGES:
        return cost
    experiment = get_experiment(job.args[0])
    block = experiment.params(params)
    if (blocks := trial_blocks(params, experiment, block)) and job.stage == "train":
        return cost                            # merges its blocks' tables
    measured = None
    if job.stage == "calibrate":
        curve_name = next(iter(block["curves"]))
        work, repeats = train_work(experiment, block, block["curves"][curve_name], rounds=1,
                                   evaluate=False), 1
    else:
        curve_name = job.args[1]
        curve = block["curves"][curve_name]
        if block["scale"].get("horizon_s"):
            measured = units.horizon_run(params["profile"], experiment.id, curve_name)
        rounds = None
        if measured is not None:
            training_s, rounds, _ = measured_horizon_cost(job.stage, block, curve_name, measured)
        if job.stage == "tune":
            work, repeats = train_work(experiment, block, curve, rounds=rounds,
                                       evaluate=False), tune_runs(block, curve_name)
        else:
            work = train_work(experiment, block, curve, rounds=rounds,
                              evaluation=experiment.evaluation(curve_name, block["curves"]),
                              training_metrics=experiment.measures_training(
                                  curve_name, block["curves"]))
            repeats = len(block_trials(job.args[2], blocks)) if job.stage == "trials" \
                else int(block["scale"]["trials"])
            cost.trials = repeats
    gpu_step = units.gpu_client_step(work.model, work.batch)
    if gpu_step is not None:                   # training only: evaluation is not measured there
        cost.gpu_s = repeats * (work.client_steps + work.lockstep_samples / work.batch) * gpu_step
    seconds = work.eval_samples * units.eval_sample(work.model)
    if measured is not None:             # the measured run-rounds replace the formula's steps
        cost.core_s += training_s * (1 if job.stage == "tune" else repeats) + repeats * seconds
        return cost
    if work.client_steps:
        seconds += work.client_steps * units.client_step(work.model, work.batch)
    if work.lockstep_samples:
        seconds += work.lockstep_samples * units.lockstep_sample(work.model)
    cost.core_s += repeats * seconds
    return cost


def needed_jobs(all_jobs: list, targets: list[str]) -> list:
    """The jobs that make `targets` and everything upstream of them, in DAG order."""
    maker = {out: job for job in all_jobs for out in job.outs + [p.path for p in job.plots]
             + job.metrics}
    wanted: set[str] = set()
    stack = list(targets)
    while stack:
        path = stack.pop()
        job = maker.get(path)
        if job is None or job.name in wanted:
            continue
        wanted.add(job.name)
        stack.extend(job.deps)
    return [job for job in all_jobs if job.name in wanted]


def target_outputs(target: str | None, params: dict[str, Any], all_jobs: list) -> list[str]:
    """A target's files: every job's (None or 'all'), a paper's (`snakemake <paper>`), or one
    output path."""
    from airfl.pipeline.dag import paper_targets
    from airfl.pipeline.registry import papers

    if target in (None, "all"):
        return [out for job in all_jobs for out in job.outs]
    if target in papers():
        return paper_targets(target, params)
    known = {out for job in all_jobs for out in job.outs + [p.path for p in job.plots] + job.metrics}
    if target not in known:
        raise ConfigError(f"plan: target {target!r} is neither 'all', a paper ("
                          + ", ".join(papers()) + ") nor an output of the DAG")
    return [target]


def plan(params: dict[str, Any], target: str | None = None,
         units: UnitCosts | None = None, all_jobs: list | None = None) -> list[JobCost]:
    """Every job `target` needs (all: None), costed; `all_jobs`: the DAG's jobs of these params
    when already built (`dag.jobs(params)`, the slow part)."""
    from airfl.pipeline.dag import jobs

    units = units or UnitCosts.load()
    all_jobs = jobs(params) if all_jobs is None else all_jobs
    chosen = needed_jobs(all_jobs, target_outputs(target, params, all_jobs))
    return [job_cost(job, params, units) for job in chosen]


def summary(costs: list[JobCost]) -> dict[str, dict[str, Any]]:
    """Per paper (and 'total'): jobs, training runs, core-seconds, GPU-seconds (None when some
    training job has no GPU unit cost), its longest job (name, core-seconds on one thread)."""
    rows: dict[str, dict[str, Any]] = {}
    for cost in costs + [JobCost(c.stage, c.name, "total", c.core_s, c.gpu_s, c.trials)
                         for c in costs]:
        row = rows.setdefault(cost.paper, {"jobs": 0, "runs": 0, "core_s": 0.0, "gpu_s": 0.0,
                                           "gpu_complete": True, "train_core_s": 0.0,
                                           "longest_job": None, "longest_job_s": 0.0})
        row["jobs"] += 1
        if row["longest_job"] is None or cost.core_s > row["longest_job_s"]:
            row["longest_job"], row["longest_job_s"] = cost.name, cost.core_s
        row["runs"] += cost.trials
        row["core_s"] += cost.core_s
        if cost.stage in COSTED_STAGES:
            row["train_core_s"] += cost.core_s
            if cost.gpu_s is None:
                row["gpu_complete"] = False
            else:
                row["gpu_s"] += cost.gpu_s
    return rows


def duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def render(rows: dict[str, dict[str, Any]], units: UnitCosts, profile: str,
           target: str | None) -> str:
    m = units.machine
    gpu = units.gpu.get("machine", {}).get("device") if units.gpu.get("models") else None
    lines = [f"airfl plan: profile {profile}, target {target or 'all'}; a fresh run of every "
             "job listed",
             f"unit costs: {m.get('cpu', '?')}, {m.get('threads', 1)} thread per job, measured "
             f"{m.get('date', '?')}, torch {m.get('torch', '?')}; GPU: "
             + (gpu or "not measured"),
             f"{'paper':<10} {'jobs':>5} {'runs':>5} {'core-h':>9} {'train core-h':>12} "
             f"{'on ' + str(CORES) + ' cores':>12} {'GPU-h':>13} {'longest job':>12}"]
    order = sorted((p for p in rows if p != "total"), key=lambda p: (p == "shared", p))
    for paper in order + ["total"]:
        r = rows[paper]
        gpu_h = f"{r['gpu_s'] / 3600:.2f}" if r["gpu_complete"] and units.gpu.get("models") \
            else "not measured"
        if r["gpu_complete"] and r["train_core_s"] == 0 and units.gpu.get("models"):
            gpu_h = "0"
        lines.append(f"{paper:<10} {r['jobs']:>5} {r['runs']:>5} {r['core_s'] / 3600:>9.2f} "
                     f"{r['train_core_s'] / 3600:>12.2f} {duration(r['core_s'] / CORES):>12} "
                     f"{gpu_h:>13} {duration(r['longest_job_s']):>12}")
    total = rows["total"]
    lines.append(f"longest job: {total['longest_job']}, {duration(total['longest_job_s'])} on "
                 "one core; a cluster's wall-time limit must fit it (trials_per_job splits a "
                 "curve's trials into shorter jobs)")
    return "\n".join(lines)


def main(params: dict[str, Any], target: str | None, units_path: str | Path = UNIT_COSTS,
         as_json: bool = False) -> int:
    units = UnitCosts.load(units_path)
    rows = summary(plan(params, target, units))
    if as_json:
        print(json.dumps({"profile": params["profile"], "target": target or "all",
                          "machine": units.machine, "papers": rows}, indent=1))
    else:
        print(render(rows, units, params["profile"], target))
    return 0
