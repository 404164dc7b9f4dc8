"""Every stage of the pipeline, declared once: the one table the CLI, the Snakemake rules, the DAG
(`dag.py`), the parameter dependencies (`stage_params`, `param_deps`), the fork server and the
import contracts read.

A `Stage` record holds what those places need to know of a stage: its name, its command-line
arguments (with their wildcard patterns), the files it writes and reads (built from `paths`),
which jobs it has (`expand`), the top-level params.yaml knobs it reads, its slice of an
experiment's block (a stage of one experiment), what of its outputs `dvc plots`, `dvc metrics`
and the Snakemake report show, and its `run` function as an import string. A new stage is one
record here and its module under `stages/`: the CLI, the fork server, the declared params, the
parameter views, dvc.yaml (`dag.jobs`) and the Snakemake rules (`snakemake_rules`, one
generating loop in workflow/rules/stages.smk) find it here (tests/pipeline/test_stage_table.py
adds one so), and the stage import contract matches it by wildcard. The records name the
functions that expand their jobs by import string, as they name `run` (the table's own live in
`stage_jobs`; a new stage's may live in its module), so that no stage's code depends on them.

The jobs of the table are listed in its order, the stages of one experiment grouped by
experiment and those of one curve by curve (`dag.jobs`): the order of dvc.yaml.

A light module (no torch, no registry at import): `airfl --help` and the light stages read it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from airfl.pipeline import paths


class Context(Protocol):
    """What the records' job functions read of one expansion of the DAG (`dag.Context`): the
    params and each experiment's resolved block."""

    params: dict[str, Any]

    def block(self, experiment: Any) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Arg:
    """One positional argument of `airfl <stage>`: `name` is also its wildcard in the rules."""

    name: str
    help: str
    optional: bool = False
    pattern: str = ""        # its wildcards in a rule's paths; default "{<name>}"

    @property
    def wildcards(self) -> str:
        return self.pattern or f"{{{self.name}}}"


def resolve(function: Callable[..., Any] | str) -> Callable[..., Any]:
    """A record's function: itself, or the one its import string "module:name" names (the
    table imports no module of the DAG's generation: `stage_jobs`)."""
    if not isinstance(function, str):
        return function
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)


def _stem(path: str, *_: str) -> str:
    return Path(path).stem


def _paper_of(first: str, *_: str) -> str:
    """The paper of an id "<paper>/<name>" or a wildcard pattern "{paper}/{figure}"."""
    return first.split("/")[0]


@dataclass(frozen=True)
class Report:
    """The outputs ending in `suffix` are items of the Snakemake report: `caption` names the
    file under workflow/report/; `category` and `subcategory` come from the job's arguments
    (wildcard patterns in a rule) and the item's path; `text`: (context, *args) -> the
    rule's `caption` param, which the caption file shows."""

    caption: str
    suffix: str = ".png"
    category: Callable[..., str] = _paper_of
    subcategory: Callable[..., str | None] = _stem
    text: Callable[..., str] | str | None = None


@dataclass(frozen=True)
class Stage:
    """One stage (module docstring). `knobs`: the top-level params.yaml keys its jobs read
    besides what their arguments name; `view`: for a stage of one experiment, the part of the
    experiment's resolved block a job reads (`param_deps.block_view`), None for the others;
    `outputs`: the job's files from its arguments (wildcard patterns in the rules);
    `light`: it needs neither torch nor the experiment registry (its start-up skips them).

    The jobs (`dag.jobs`, dvc.yaml; a context `ctx` gives the params and the blocks):
    `expand`: their arguments: `(ctx)` for a stage of no experiment, `(ctx, experiment)` for one
    of an experiment, `(ctx, experiment, curve)` for one of a curve (default: one job each);
    Each may be an import string "module:name" (`resolve`), as the table's are (`stage_jobs`).
    `inputs`: `(ctx, *args)` -> the files a job reads (its DVC deps and rule inputs);
    `plots`: `(ctx, *args)` -> the CSVs `dvc plots` draws (`dvc_plots.Plot`); `metrics`:
    `(*args)` ->
    its `dvc metrics` files; the other outputs are its `outs`. `declared`: `(ctx, *args)` -> what
    it reads from the code's declarations rather than params.yaml (`dag.Job.declared`); `wings`:
    `(*args)` -> the wings whose code a stage of no experiment loads (one of an experiment loads
    its paper's, and with `builds_schemes` the wings of its curves' schemes).
    The Snakemake rules (`snakemake_rules`): `rules`: their names, one per number of arguments
    given, all first (default: the stage's name); `per_job`: a rule per job, where the outputs
    vary in number between jobs; `report`: its report items; `constraints`: `()` -> wildcard
    constraints beyond the shared ones (workflow/rules/common.smk); `more_keys`: `(ctx, *args)` ->
    top-level params.yaml keys a job reads beyond its knobs and view where that depends on the
    job (a split curve's `trials_per_job`), listed by dvc.yaml and in the rule's params; `gpu`:
    `(ctx, *args)` -> the GPUs a job holds (a Snakemake resource: a GPU host runs one such job
    at a time with `--resources gpu=1`; the SLURM profile sends it to a GPU partition)."""

    name: str
    help: str
    args: tuple[Arg, ...]
    outputs: Callable[..., list[Path]]
    knobs: tuple[str, ...]
    run: str
    view: Callable[..., Any] | None = None
    light: bool = False
    expand: Callable[..., Iterable[tuple[str, ...]]] | str | None = None
    inputs: Callable[..., list[str]] | str | None = None
    plots: Callable[..., list[Any]] | str | None = None     # dvc_plots.Plot
    metrics: Callable[..., list[str]] | str | None = None
    declared: Callable[..., dict[str, Any]] | str | None = None
    wings: Callable[..., tuple[str, ...]] | str | None = None
    builds_schemes: bool = False
    rules: tuple[str, ...] = ()
    per_job: bool = False
    report: Report | None = None
    constraints: Callable[[], dict[str, str]] | str | None = None
    more_keys: Callable[..., list[str]] | str | None = None
    gpu: Callable[..., int] | str | None = None

    def call(self, field: str, *args: Any) -> Any:
        """Its function `field` (a callable, or an import string "module:name") on `args`."""
        return resolve(getattr(self, field))(*args)

    @property
    def module(self) -> str:
        return self.run.partition(":")[0]

    def load(self) -> Callable[..., Any]:
        """The stage's `run` function (imports its module)."""
        module, _, function = self.run.partition(":")
        return getattr(importlib.import_module(module), function)

    @property
    def per_curve(self) -> bool:
        """Jobs per curve of an experiment (its second argument is the curve; a third, e.g. a
        block of trials, makes several jobs a curve)."""
        return [a.name for a in self.args][:2] == ["experiment", "curve"]

    @property
    def scope(self) -> str:
        """"curve", "experiment" (a stage with a view of an experiment's block) or "global"."""
        return "global" if self.view is None else "curve" if self.per_curve else "experiment"

    def job_args(self, ctx: Context, *within: Any) -> list[tuple[str, ...]]:
        """The arguments of its jobs (`expand`) for `within`: nothing, an experiment, or an
        experiment and one of its curves (`scope`)."""
        if self.expand is not None:
            return [tuple(a) for a in self.call("expand", ctx, *within)]
        if self.scope == "global":
            raise ValueError(f"stage {self.name!r} of no experiment declares no `expand`")
        return [(within[0].id, *within[1:])]

    def rule_names(self) -> tuple[str, ...]:
        """One Snakemake rule per number of arguments given: all, then without each optional."""
        optional = sum(a.optional for a in self.args)
        return self.rules or tuple(self.name if i == 0 else f"{self.name}_{i}"
                                   for i in range(optional + 1))

    def files(self, *args: str) -> list[str]:
        """The job's outputs as the rules and dvc.yaml write them."""
        return [str(p) for p in self.outputs(*args)]


# ---- the slices of an experiment's block each stage of one experiment reads ----------------
def _setting(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "curves"}


def partition_view(block: dict[str, Any], **_: Any) -> dict[str, Any]:
    """stages/partition.py: the split only, and with one per trial, how many
    (pipeline.partitioning)."""
    from airfl.pipeline.partitioning import partition_trials

    view = {k: block[k] for k in ("dataset", "num_devices", "partition")}
    if partition_trials(block) is not None:
        view.update(partition_per=block["partition_per"], trials=block["scale"]["trials"])
    return view


def calibrate_view(block: dict[str, Any], **_: Any) -> dict[str, Any]:
    """stages/calibrate.py: noise-free norms at theta_0; its first curve only places devices,
    which the norms never see."""
    return {"setting": _setting(block)}


def curve_view(block: dict[str, Any], curve: str, panel_keys: tuple[str, ...] = (),
               **_: Any) -> dict[str, Any]:
    """tune, design and train: the settings and the curve, without the experiment's
    `panel_keys` (figure-only tags); design_trials and the round loop get the block."""
    return {"setting": _setting(block),
            "curve": {k: v for k, v in block["curves"][curve].items() if k not in panel_keys}}


def train_view(block: dict[str, Any], curve: str, panel_keys: tuple[str, ...] = (),
               evaluation: str | None = None, training_metrics: bool | None = None,
               **_: Any) -> dict[str, Any]:
    """train: `curve_view`, plus the rounds the curve's readers declare (`evaluation`:
    `Experiment.evaluation`: "schedule", "final" or "final-k") and whether they read the
    training metrics (`training_metrics`: `Experiment.measures_training`, as
    `measured_metrics` records it), which decide what the job evaluates."""
    view = curve_view(block, curve, panel_keys)
    if evaluation is not None:
        view["evaluation"] = evaluation
    if training_metrics is not None:
        from airfl.core.experiments import measured_metrics     # light: no torch, no registry
        view.update(measured_metrics(training_metrics))
    return view


def derive_view(block: dict[str, Any], derivation: Any, shared: dict[str, Any] | None = None,
                **_: Any) -> dict[str, Any]:
    """stages/derive.py: the settings, the derivation's source and target curves (never the
    other curves) and the wing's shared sections as params.yaml writes them (LAPA's DDPG reads
    `lapa.control.ddpg`, which the composed block leaves out)."""
    named = sum(derivation.resolve(block["curves"]) or ((), ()), ())
    return {"setting": _setting(block), "curves": {c: block["curves"].get(c) for c in named},
            "shared": shared}


def privacy_view(block: dict[str, Any], **_: Any) -> dict[str, Any]:
    """stages/privacy.py reads the run's records only."""
    return {}


def figure_view(block: dict[str, Any], **_: Any) -> dict[str, Any]:
    """Every curve (labels, panels, the stale-run check)."""
    return block


# ---- outputs that depend on the registry ----------------------------------------------------
def figure_files(experiment_id: str) -> list[Path]:
    """Every panel's CSV, PNG and PDF, each table's CSV and Markdown (`Experiment.tables`),
    then the experiment's summary JSON."""
    from airfl.pipeline.artifacts import figure_names
    from airfl.pipeline.registry import get_experiment

    experiment = get_experiment(experiment_id)
    stems = [f"{experiment.paper}/{name}" for name in figure_names(experiment)]
    tables = [f"{experiment.paper}/{table.name}" for table in experiment.tables]
    return [paths.figure(stem, s) for stem in stems for s in ("csv", "png", "pdf")] + \
        [paths.figure(stem, s) for stem in tables for s in ("csv", "md")] + \
        [paths.summary(experiment.id)]


def _claims_files(paper: str | None = None) -> list[Path]:
    """A paper's CLAIMS.md, metrics and rows; every paper's CLAIMS.md and metrics."""
    return [paths.claims_markdown(paper), paths.claims_metrics(paper)] + \
        ([paths.claims_rows(paper)] if paper is not None else [])


_EXPERIMENT = Arg("experiment", "experiment id, e.g. biased_fl/fig2a (`airfl list` names them)",
                  pattern="{paper}/{figure}")
_CURVE = Arg("curve", "curve of the experiment (`airfl list` names them)")
_STAGES = "airfl.pipeline.stages"
_JOBS = "airfl.pipeline.stage_jobs"
_FIGURE = "figure.rst"

# In the order of `airfl --help` and of dvc.yaml's jobs (module docstring).
STAGES: tuple[Stage, ...] = (
    Stage("data", "fetch and md5-check a dataset into data/ (or copy it from the mirror)",
          (Arg("dataset", "mnist, fashion_mnist, cifar10 or cifar100"),),
          lambda dataset: [paths.dataset_manifest(dataset)],
          ("data.root", "data.mirror", "data.download"), f"{_STAGES}.data:run",
          expand=f"{_JOBS}:datasets"),
    Stage("reference", "a paper's reference optimum and data constants (e.g. biased_fl)",
          (Arg("name", "the reference's name, e.g. biased_fl"),),
          lambda name: [paths.reference(name, "npz"), paths.reference(name, "json")],
          ("seed", "profile", "data.root"), f"{_STAGES}.reference:run",
          expand=f"{_JOBS}:references", inputs=f"{_JOBS}:reference_inputs",
          wings=f"{_JOBS}:reference_owner"),
    Stage("partition", "partition an experiment's training data over its devices", (_EXPERIMENT,),
          lambda e: [paths.partition(e), paths.partition_summary(e), paths.partition_heatmap(e)],
          ("seed", "data.root"), f"{_STAGES}.partition:run", view=partition_view,
          inputs=f"{_JOBS}:partition_inputs", report=Report("partition.rst")),
    Stage("calibrate", "an experiment's calibration at theta_0 (e.g. CDPB's clipping norm)",
          (_EXPERIMENT,), lambda e: [paths.calibration(e)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.calibrate:run",
          view=calibrate_view, expand=f"{_JOBS}:calibrations",
          inputs=f"{_JOBS}:calibrate_inputs", builds_schemes=True, gpu=f"{_JOBS}:gpu_job"),
    Stage("derive", "a step between trainings: parameters of some curves from other curves' "
          "stored runs (e.g. LAPA's DDPG power control)",
          (_EXPERIMENT, Arg("derivation", "the experiment's derivation, e.g. ddpg",
                            pattern="{name}")),
          lambda e, name: [paths.derived(e, name, s) for s in ("json", "csv", "npz")],
          ("seed", "profile", "threads"), f"{_STAGES}.derive:run", view=derive_view,
          expand=f"{_JOBS}:derivations", inputs=f"{_JOBS}:derive_inputs"),
    Stage("tune", "search a curve's step size (and baseline parameters) on selection trials",
          (_EXPERIMENT, _CURVE), lambda e, c: [paths.tuning(e, c)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.tune:run",
          view=curve_view, expand=f"{_JOBS}:tunes", inputs=f"{_JOBS}:tune_inputs",
          builds_schemes=True, gpu=f"{_JOBS}:gpu_job"),
    Stage("design", "solve the designs of a curve's trials before training", (_EXPERIMENT, _CURVE),
          lambda e, c: [paths.design(e, c)], ("seed", "profile"), f"{_STAGES}.design:run",
          view=curve_view, inputs=f"{_JOBS}:design_inputs", builds_schemes=True),
    Stage("trials", "train one block of a split curve's trials (trials_per_job; the curve's "
          "train job merges the blocks)",
          (_EXPERIMENT, _CURVE, Arg("block", "the trials first-last, e.g. 0-3 (`airfl plan` "
                                    "and dvc.yaml name a curve's blocks)")),
          lambda e, c, b: [paths.trial_block(e, c, b, s) for s in ("npz", "records.json", "json")],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.trials:run",
          view=train_view, expand=f"{_JOBS}:trial_block_jobs", inputs=f"{_JOBS}:trials_inputs",
          declared=f"{_JOBS}:train_declared", builds_schemes=True,
          more_keys=f"{_JOBS}:split_keys", gpu=f"{_JOBS}:gpu_job",
          constraints=f"{_JOBS}:block_constraints"),
    Stage("train", "train every trial of one curve (results/runs/), or merge its blocks of "
          "trials when it is split (trials_per_job)", (_EXPERIMENT, _CURVE),
          lambda e, c: [paths.run_table(e, c), paths.run_records(e, c), paths.run_info(e, c)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.train:run",
          view=train_view, inputs=f"{_JOBS}:train_inputs", declared=f"{_JOBS}:train_declared",
          builds_schemes=True, more_keys=f"{_JOBS}:split_keys", gpu=f"{_JOBS}:train_gpu"),
    Stage("privacy", "account a trained curve's privacy per round (results/privacy/)",
          (_EXPERIMENT, _CURVE), lambda e, c: [paths.privacy(e, c)],
          ("privacy.delta",),          # the run's records carry the rest (a curve's own delta)
          f"{_STAGES}.privacy:run", view=privacy_view, light=True, expand=f"{_JOBS}:private",
          inputs=f"{_JOBS}:privacy_inputs", wings=lambda *_: ()),
    Stage("figure", "draw an experiment's figures from its stored runs", (_EXPERIMENT,),
          figure_files, ("seed", "profile"), f"{_STAGES}.figure:run", view=figure_view,
          inputs=f"{_JOBS}:figure_inputs", plots=f"{_JOBS}:figure_plots",
          metrics=lambda e: [str(paths.summary(e))], per_job=True,   # panels vary in number
          report=Report(_FIGURE, text=f"{_JOBS}:figure_caption")),
    Stage("analytic", "compute and draw an analytic figure (formulas only)",
          (Arg("experiment", "analytic figure id, e.g. cdpb/fig3", pattern="{paper}/{name}"),),
          lambda f: [*(paths.figure(f, s) for s in ("csv", "png", "pdf")), paths.analytic(f)],
          ("profile",), f"{_STAGES}.analytic:run", expand=f"{_JOBS}:analytic_figures",
          plots=f"{_JOBS}:analytic_plots", wings=f"{_JOBS}:analytic_paper",
          rules=("analytic_figure",), report=Report(_FIGURE, text=f"{_JOBS}:analytic_caption"),
          constraints=f"{_JOBS}:analytic_constraints"),
    Stage("audit", "audit a registered DP mechanism: a lower bound on its epsilon "
          "(results/audit/)",
          (Arg("paper", "the wing that registers it (e.g. cdpb, generic)"),
           Arg("mechanism", "the mechanism's name (params.yaml audit.<wing>)")),
          lambda w, m: [paths.audit(w, m), *(paths.audit_figure(w, m, s)
                                             for s in ("csv", "png", "pdf"))],
          ("seed", "profile", "audit.draws", "audit.loop_draws", "audit.alpha"),
          f"{_STAGES}.audit:run", expand=f"{_JOBS}:audits", plots=f"{_JOBS}:audit_plots",
          inputs=f"{_JOBS}:audit_inputs",
          metrics=lambda w, m: [str(paths.audit(w, m))], wings=lambda w, m: (w,),
          rules=("audit_mechanism",), report=Report(_FIGURE),
          constraints=f"{_JOBS}:audit_constraints"),
    Stage("claims", "evaluate one paper's claims (figures/<paper>/CLAIMS.md), or with no paper "
          "collect every paper's into figures/CLAIMS.md",
          (Arg("paper", "a paper with figures, e.g. cdpb", optional=True),),
          _claims_files, ("seed", "profile"), f"{_STAGES}.claims:run", expand=f"{_JOBS}:claims",
          inputs=f"{_JOBS}:claims_inputs", metrics=lambda *p: [str(paths.claims_metrics(*p))],
          wings=lambda *p: tuple(p), rules=("paper_claims", "claims"),
          report=Report("claims.rst", ".md", category=lambda *_: "claims",
                        subcategory=lambda _, *p: p[0] if p else None),
          constraints=f"{_JOBS}:claims_constraints"),
)

# The readers look the table up when they run (never a copy taken at import), so that the
# table is the one list: a test adds a stage to it and finds it in every reader.
def stage(name: str) -> Stage:
    for record in STAGES:
        if record.name == name:
            return record
    raise ValueError(f"unknown stage {name!r}; allowed: {', '.join(s.name for s in STAGES)}")


def curve_stages() -> tuple[Stage, ...]:
    """The stages with a job per curve of an experiment (a view of its block, per curve)."""
    return tuple(s for s in STAGES if s.view is not None and s.per_curve)
