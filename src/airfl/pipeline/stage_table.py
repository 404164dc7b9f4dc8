"""Every stage of the pipeline, declared once: the one table the CLI, the rule files, the DAG
(`dag.py`), the parameter dependencies (`stage_params`, `param_deps`), the fork server and the
import contracts read.

A `Stage` record holds what those places need to know of a stage: its name, its command-line
arguments, the files it writes (built from `paths`), the top-level params.yaml knobs it reads,
its slice of an experiment's block (a stage of one experiment) and its `run` function as an
import string. A new stage is one record here and its module under `stages/`: the CLI, the
fork server, the declared params and the parameter views find it here (tests/pipeline/
test_stage_table.py adds one so), the stage import contract matches it by wildcard, and the
Snakefile includes its rules file, workflow/rules/<name>.smk, which states its inputs in
Snakemake's terms. Which jobs it has in dvc.yaml and their deps are still expanded in `dag.py`.

A light module (no torch, no registry at import): `airfl --help` and the light stages read it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airfl.pipeline import paths


@dataclass(frozen=True)
class Arg:
    """One positional argument of `airfl <stage>`: `name` is also its wildcard in the rules."""

    name: str
    help: str
    optional: bool = False


@dataclass(frozen=True)
class Stage:
    """One stage (module docstring). `knobs`: the top-level params.yaml keys its jobs read
    besides what their arguments name; `view`: for a stage of one experiment, the part of the
    experiment's resolved block a job reads (`param_deps.block_view`), None for the others;
    `outputs`: the job's files from its arguments (wildcard patterns in the rule files);
    `light`: it needs neither torch nor the experiment registry (its start-up skips them)."""

    name: str
    help: str
    args: tuple[Arg, ...]
    outputs: Callable[..., list[Path]]
    knobs: tuple[str, ...]
    run: str
    view: Callable[..., Any] | None = None
    light: bool = False

    @property
    def module(self) -> str:
        return self.run.partition(":")[0]

    def load(self) -> Callable[..., Any]:
        """The stage's `run` function (imports its module)."""
        module, _, function = self.run.partition(":")
        return getattr(importlib.import_module(module), function)

    @property
    def per_curve(self) -> bool:
        """A job per curve of an experiment (its second argument is the curve)."""
        return [a.name for a in self.args] == ["experiment", "curve"]

    def files(self, *args: str) -> list[str]:
        """The job's outputs as the rule files and dvc.yaml write them."""
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
               evaluation: str | None = None, **_: Any) -> dict[str, Any]:
    """train: `curve_view`, plus the rounds the curve's readers declare (`evaluation`:
    `Experiment.evaluation`: "schedule", "final" or "final-k"), which decide what the job evaluates."""
    view = curve_view(block, curve, panel_keys)
    if evaluation is not None:
        view["evaluation"] = evaluation
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
def _figure_files(experiment_id: str) -> list[Path]:
    """Every panel's CSV, PNG and PDF, then the experiment's summary JSON."""
    from airfl.pipeline.artifacts import figure_names
    from airfl.pipeline.registry import get_experiment

    experiment = get_experiment(experiment_id)
    stems = [f"{experiment.paper}/{name}" for name in figure_names(experiment)]
    return [paths.figure(stem, s) for stem in stems for s in ("csv", "png", "pdf")] + \
        [paths.summary(experiment.id)]


def _claims_files(paper: str | None = None) -> list[Path]:
    """A paper's CLAIMS.md, metrics and rows; every paper's CLAIMS.md and metrics."""
    return [paths.claims_markdown(paper), paths.claims_metrics(paper)] + \
        ([paths.claims_rows(paper)] if paper is not None else [])


_EXPERIMENT = Arg("experiment", "experiment id, e.g. biased_fl/fig2a (`airfl list` names them)")
_CURVE = Arg("curve", "curve of the experiment (`airfl list` names them)")
_STAGES = "airfl.pipeline.stages"

# In data-flow order (the order of `airfl --help` and of the rule files).
STAGES: tuple[Stage, ...] = (
    Stage("data", "fetch and md5-check a dataset into data/ (or copy it from the mirror)",
          (Arg("dataset", "mnist, fashion_mnist, cifar10 or cifar100"),),
          lambda dataset: [paths.dataset_manifest(dataset)],
          ("data.root", "data.mirror", "data.download"), f"{_STAGES}.data:run"),
    Stage("partition", "partition an experiment's training data over its devices", (_EXPERIMENT,),
          lambda e: [paths.partition(e), paths.partition_summary(e), paths.partition_heatmap(e)],
          ("seed", "data.root"), f"{_STAGES}.partition:run", view=partition_view),
    Stage("reference", "a paper's reference optimum and data constants (e.g. biased_fl)",
          (Arg("name", "the reference's name, e.g. biased_fl"),),
          lambda name: [paths.reference(name, "npz"), paths.reference(name, "json")],
          ("seed", "profile", "data.root"), f"{_STAGES}.reference:run"),
    Stage("calibrate", "an experiment's calibration at theta_0 (e.g. CDPB's clipping norm)",
          (_EXPERIMENT,), lambda e: [paths.calibration(e)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.calibrate:run",
          view=calibrate_view),
    Stage("tune", "search a curve's step size (and baseline parameters) on selection trials",
          (_EXPERIMENT, _CURVE), lambda e, c: [paths.tuning(e, c)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.tune:run",
          view=curve_view),
    Stage("derive", "a step between trainings: parameters of some curves from other curves' "
          "stored runs (e.g. LAPA's DDPG power control)",
          (_EXPERIMENT, Arg("derivation", "the experiment's derivation, e.g. ddpg")),
          lambda e, name: [paths.derived(e, name, s) for s in ("json", "csv", "npz")],
          ("seed", "profile", "threads"), f"{_STAGES}.derive:run", view=derive_view),
    Stage("design", "solve the designs of a curve's trials before training", (_EXPERIMENT, _CURVE),
          lambda e, c: [paths.design(e, c)], ("seed", "profile"), f"{_STAGES}.design:run",
          view=curve_view),
    Stage("trials", "train one block of a split curve's trials (trials_per_job; the curve's "
          "train job merges the blocks)",
          (_EXPERIMENT, _CURVE, Arg("block", "the trials first-last, e.g. 0-3 (`airfl plan` "
                                    "and dvc.yaml name a curve's blocks)")),
          lambda e, c, b: [paths.trial_block(e, c, b, s) for s in ("npz", "records.json", "json")],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.trials:run",
          view=train_view),
    Stage("train", "train every trial of one curve (results/runs/), or merge its blocks of "
          "trials when it is split (trials_per_job)", (_EXPERIMENT, _CURVE),
          lambda e, c: [paths.run_table(e, c), paths.run_records(e, c), paths.run_info(e, c)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.train:run",
          view=train_view),
    Stage("privacy", "account a trained curve's privacy per round (results/privacy/)",
          (_EXPERIMENT, _CURVE), lambda e, c: [paths.privacy(e, c)],
          ("privacy.delta",),          # the run's records carry the rest (a curve's own delta)
          f"{_STAGES}.privacy:run", view=privacy_view, light=True),
    Stage("figure", "draw an experiment's figures from its stored runs", (_EXPERIMENT,),
          _figure_files, ("seed", "profile"), f"{_STAGES}.figure:run", view=figure_view),
    Stage("analytic", "compute and draw an analytic figure (formulas only)",
          (Arg("experiment", "analytic figure id, e.g. cdpb/fig3"),),
          lambda f: [*(paths.figure(f, s) for s in ("csv", "png", "pdf")), paths.analytic(f)],
          ("profile",), f"{_STAGES}.analytic:run"),
    Stage("audit", "audit a registered DP mechanism: a lower bound on its epsilon "
          "(results/audit/)",
          (Arg("paper", "the wing that registers it (e.g. cdpb, generic)"),
           Arg("mechanism", "the mechanism's name (params.yaml audit.<wing>)")),
          lambda w, m: [paths.audit(w, m), *(paths.audit_figure(w, m, s)
                                             for s in ("csv", "png", "pdf"))],
          ("seed", "profile", "audit.draws", "audit.loop_draws", "audit.alpha"),
          f"{_STAGES}.audit:run"),
    Stage("claims", "evaluate one paper's claims (figures/<paper>/CLAIMS.md), or with no paper "
          "collect every paper's into figures/CLAIMS.md",
          (Arg("paper", "a paper with figures, e.g. cdpb", optional=True),),
          _claims_files, ("seed", "profile"), f"{_STAGES}.claims:run"),
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
