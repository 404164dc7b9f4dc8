"""The pipeline's jobs, expanded from the stage table and the experiment registry: one
description for both tools.

`airfl dvc-yaml` writes dvc.yaml from `jobs()`, and the Snakemake rules (`snakemake_rules`)
take their inputs, outputs and params from the same records and the functions here; a test
fails when the committed dvc.yaml drifts.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from airfl.pipeline import param_deps, paths, stage_table
from airfl.params.config import get_dotted
from airfl.core.experiments import AnalyticFigure, Experiment
from airfl.pipeline.code_deps import digest, stage_code
from airfl.pipeline.dvc_plots import Plot
from airfl.pipeline.stage_params import stage_keys
from airfl.pipeline.registry import (active_experiments, all_analytic, get_experiment,
                                     get_wing, scheme_wings, wings)

def code(stage: str, *wing_names: str) -> list[str]:
    """The source files a stage runs when it loads these wings (`code_deps`), as DVC `deps`
    and, digested, as Snakemake's code parameter."""
    packages = sorted({get_wing(name).package for name in wing_names})
    return list(stage_code(stage, tuple(packages)))


def experiment_code(stage: str, experiment: Experiment, params: dict[str, Any],
                    curve: str | None = None, ctx: Context | None = None) -> list[str]:
    """A stage of one experiment loads its paper's wing and, when it builds schemes, the wings
    offering the schemes of its curve (all curves: None); `ctx`: the composed blocks, where
    already composed (composing one per job cost a dry run seconds)."""
    names = [experiment.paper]
    if stage_table.stage(stage).builds_schemes:
        curves = experiment.curves(params) if ctx is None else ctx.block(experiment)["curves"]
        offered = scheme_wings()
        for name in ([curve] if curve is not None else list(curves)):
            kind = curves[name].get("scheme") if isinstance(curves[name], dict) else None
            if kind in offered:
                names.append(offered[kind].name)
    return code(stage, *names)


@dataclass
class Job:
    stage: str
    name: str                         # unique, DVC-safe
    args: list[str]
    deps: list[str]
    outs: list[str]
    params: list[str]
    plots: list[Plot] = field(default_factory=list)   # the CSVs `dvc plots` draws, as drawn
    metrics: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)   # source files it runs (job_code)
    # what it reads from the code's declarations rather than from params.yaml (a train job:
    # the rounds its readers evaluate, `Experiment.evaluation`): in its manifest as values, so
    # DVC reruns it when they change, as Snakemake does (they are in its rule's params)
    declared: dict[str, Any] = field(default_factory=dict)


def _slug(*parts: str) -> str:
    return "-".join(p.replace("/", "-") for p in parts)


class Context:
    """One expansion of the DAG for fixed params: the experiments' resolved blocks and derived
    parameter keys, each computed once (read-only: shared by the jobs and the rules)."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self._blocks: dict[str, dict[str, Any]] = {}
        self._keys: dict[str, dict[tuple, list[str]]] = {}
        self._code: dict[tuple, str] = {}
        self._trial_blocks: dict[str, list[str]] = {}

    def block(self, experiment: Experiment) -> dict[str, Any]:
        if experiment.id not in self._blocks:
            self._blocks[experiment.id] = experiment.params(self.params)
        return self._blocks[experiment.id]

    def trial_blocks(self, experiment: Experiment) -> list[str]:
        """The `first-last` blocks of each of the experiment's split curves (`trial_blocks`),
        none when a curve is one job; computed once per experiment (every curve's train,
        trials and inputs read them)."""
        if experiment.id not in self._trial_blocks:
            from airfl.pipeline.trial_blocks import trial_blocks

            self._trial_blocks[experiment.id] = \
                trial_blocks(self.params, experiment, self.block(experiment)) or []
        return self._trial_blocks[experiment.id]

    def keys(self, experiment: Experiment) -> dict[tuple, list[str]]:
        """(stage, curve or derivation) -> the leaf keys of the wing's block its view reads."""
        if experiment.id not in self._keys:
            self._keys[experiment.id] = param_deps.derive(experiment, self.params)
        return self._keys[experiment.id]

    def code_digest(self, stage: str, args: tuple[str, ...]) -> str:
        """`code_digest`, memoised: Snakemake evaluates a job's params more than once."""
        if (stage, args) not in self._code:
            self._code[(stage, args)] = code_digest(stage, list(args), self.params, self)
        return self._code[(stage, args)]


def outputs(stage: str, *args: str) -> list[str]:
    """The files the job `airfl <stage> <args>` writes (the stage table's `outputs`)."""
    return stage_table.stage(stage).files(*args)


def partition_outputs(experiment_id: str) -> list[str]:
    return outputs("partition", experiment_id)


def figure_outputs(experiment: Experiment) -> list[str]:
    """Every panel's CSV, PNG and PDF, then the experiment's summary JSON."""
    return outputs("figure", experiment.id)


def job_params(ctx: Context, record: stage_table.Stage, args: tuple[str, ...]) -> list[str]:
    """The exact params.yaml keys the job reads: a stage of one experiment, its top-level knobs
    and the leaves behind its view of the block (param_deps); the others, what its stage
    declares for these arguments (stage_params)."""
    if record.view is None:
        return list(stage_keys(record.name, *args))
    keys = ctx.keys(get_experiment(args[0]))
    more = record.call("more_keys", ctx, *args) if record.more_keys else []
    return [*record.knobs, *more, *keys[(record.name, args[1] if len(args) > 1 else None)]]


def make_job(ctx: Context, record: stage_table.Stage, args: tuple[str, ...]) -> Job:
    """The job `airfl <stage> <args>` as its record describes it: deps, outs, plots, metrics."""
    plots = record.call("plots", ctx, *args) if record.plots else []
    metrics = record.call("metrics", *args) if record.metrics else []
    shown = {plot.path for plot in plots} | set(metrics)
    return Job(record.name, _slug(record.name, *args), list(args),
               record.call("inputs", ctx, *args) if record.inputs else [],
               [o for o in record.files(*args) if o not in shown], job_params(ctx, record, args),
               plots=plots, metrics=metrics,
               declared=record.call("declared", ctx, *args) if record.declared else {})


def _runs(records, key) -> list[list[stage_table.Stage]]:
    """The table cut into maximal runs of consecutive records with the same `key`."""
    runs: list[list[stage_table.Stage]] = []
    for record in records:
        if runs and key(runs[-1][0]) == key(record):
            runs[-1].append(record)
        else:
            runs.append([record])
    return runs


def experiment_jobs(experiment: Experiment, params: dict[str, Any],
                    ctx: Context | None = None) -> list[Job]:
    """The jobs of one experiment: its stages in table order, those of one curve per curve."""
    ctx = ctx or Context(params)
    records = [s for s in stage_table.STAGES if s.scope != "global"]
    jobs_: list[Job] = []
    for run in _runs(records, lambda s: s.scope == "curve"):
        if run[0].scope == "curve":
            for curve in experiment.curves(params):
                jobs_ += [make_job(ctx, s, a) for s in run
                          for a in s.job_args(ctx, experiment, curve)]
        else:
            jobs_ += [make_job(ctx, s, a) for s in run for a in s.job_args(ctx, experiment)]
    return jobs_


def rule_params(ctx: Context, stage: str, args: tuple[str, ...]) -> dict[str, Any]:
    """A Snakemake rule's `params:` for the job `airfl <stage> <args>` of one experiment: the
    values of its stage's top-level knobs, its view of the block (the view whose keys dvc.yaml
    lists, param_deps) and the values of its record's `more_keys`, so a one-knob change reruns
    the same jobs in both tools. A job per curve also hands its view the rounds the curve's
    readers declare (`Experiment.evaluation`, `Experiment.measures_training`; a view that
    reads them keeps them), a job per
    derivation (a second argument that names a derivation) its derivation and the wing's
    shared sections."""
    record = stage_table.stage(stage)
    experiment = get_experiment(args[0])
    block = ctx.block(experiment)
    second = args[1] if len(args) > 1 else None
    derivation = experiment.derivation(second) \
        if [a.name for a in record.args][1:2] == ["derivation"] else None
    out = {"knobs": {k: get_dotted(ctx.params, k) for k in record.knobs},
           "view": param_deps.block_view(
               stage, block, second, experiment.panel_keys, derivation,
               param_deps.shared_sections(experiment, ctx.params) if derivation else None,
               experiment.evaluation(second, block["curves"]) if record.per_curve else None,
               experiment.measures_training(second, block["curves"]) if record.per_curve
               else None)}
    more = record.call("more_keys", ctx, *args) if record.more_keys else []
    if more:                        # e.g. a split curve's `trials_per_job`
        out["more"] = {k: get_dotted(ctx.params, k) for k in more}
    return out


def declared_values(stage: str, params: dict[str, Any], *args: str) -> dict[str, Any]:
    """A Snakemake rule's `params:` for a job that is no stage of one experiment: the values of
    the keys its stage declares for these arguments, the keys its DVC manifest lists
    (stage_params.stage_keys), so a change reruns it in both tools."""
    return {key: get_dotted(params, key) for key in stage_keys(stage, *args)}


def analytic_outputs(figure: AnalyticFigure) -> list[str]:
    """The CSV (what is drawn), PNG, PDF and the attributes JSON of an analytic figure."""
    return outputs("analytic", figure.id)


def analytic_job(figure: AnalyticFigure) -> Job:
    return make_job(Context({}), stage_table.stage("analytic"), (figure.id,))


def audit_outputs(wing: str, mechanism: str) -> list[str]:
    """An audit's JSON (what the claims read), and the CSV, PNG and PDF of its figure."""
    return outputs("audit", wing, mechanism)


def audit_jobs() -> list[Job]:
    """One `airfl audit <wing> <mechanism>` job per mechanism a wing registers for auditing."""
    ctx, record = Context({}), stage_table.stage("audit")
    return [make_job(ctx, record, args) for args in record.job_args(ctx)]


def paper_targets(paper: str, params: dict[str, Any] | None = None) -> list[str]:
    """What `snakemake <paper>` builds: the paper's figures, partitions and claims (of the
    experiments the params run)."""
    targets = [str(paths.claims_markdown(paper))]
    for experiment in active_experiments(params):
        if experiment.paper == paper:
            targets += figure_outputs(experiment) + partition_outputs(experiment.id)
    targets += [o for w in wings() if w.name == paper for n in sorted(w.audits)
                for o in audit_outputs(paper, n)]
    return targets + [o for f in all_analytic() if f.paper == paper for o in analytic_outputs(f)]


def analytic_targets() -> list[str]:
    """What `snakemake analytic` builds: every figure computed from formulas alone."""
    return [o for f in all_analytic() for o in analytic_outputs(f)]


def audit_targets() -> list[str]:
    """What `snakemake audit` builds: every registered audit."""
    record = stage_table.stage("audit")
    return [o for args in record.job_args(Context({})) for o in audit_outputs(*args)]


def jobs(params: dict[str, Any], papers: Collection[str] | None = None) -> list[Job]:
    """Every job of the pipeline, in the table's order (stage_table): the stages of no
    experiment as they come, those of one experiment per experiment (`experiment_jobs`).
    `papers`: only the experiments of these papers (the stages of no experiment all), for a
    caller that reads one paper's figures: deriving each experiment's parameters is the slow
    part (pipeline.param_deps, ~1 s an experiment)."""
    ctx = Context(params)
    out: list[Job] = []
    for run in _runs(stage_table.STAGES, lambda s: s.scope == "global"):
        if run[0].scope == "global":
            out += [make_job(ctx, s, a) for s in run for a in s.job_args(ctx)]
        else:
            for experiment in active_experiments(params):
                if papers is None or experiment.paper in papers:
                    out += experiment_jobs(experiment, params, ctx)
    for job in out:
        job.code = job_code(job.stage, job.args, params, ctx)
    return out


def job_code(stage: str, args: list[str], params: dict[str, Any],
             ctx: Context | None = None) -> list[str]:
    """The code of the job `airfl <stage> <args>`: which wings it loads follows from its
    arguments (the record's `wings`; a stage of one experiment, its experiment's); `ctx`: the
    composed blocks of these params, where already composed."""
    record = stage_table.stage(stage)
    if record.wings is not None or record.view is None:
        return code(stage, *(record.call("wings", *args) if record.wings else ()))
    return experiment_code(stage, get_experiment(args[0]), params,
                           args[1] if len(args) > 1 else None, ctx)


@cache
def _digest(deps: tuple[str, ...]) -> str:
    return digest(deps)


def code_digest(stage: str, args: list[str], params: dict[str, Any],
                ctx: Context | None = None) -> str:
    """A hash of the job's code files: the Snakemake rules' `code` parameter, so that a code
    edit reruns the same jobs under Snakemake as under DVC."""
    return _digest(tuple(job_code(stage, args, params, ctx)))
