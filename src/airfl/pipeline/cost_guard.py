"""The bound a run must not pass silently: before Snakemake (workflow/rules/cost.smk) or one
`airfl <stage>` job starts, its jobs are costed by the plan's model (`airfl.pipeline.plan`) and a
run estimated above params.yaml `confirm_cost_above_core_hours` stops with the estimate and how
to go on. A Snakemake job is known here only by its rule and wildcards: `planned_job` maps them to
a stage and its arguments without building airfl's whole DAG."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from airfl.params.config import ConfigError
from airfl.pipeline.plan import (CORES, COSTED_STAGES, UNIT_COSTS, JobCost, PlannedJob,
                                 UnitCosts, duration, job_cost, render, summary)

COLLECT_RULES = ("all",)
"""Rules that run no command (the Snakefile's `all`; the generated collect targets are
`snakemake_rules.target_rule_names`): a plan costs them nothing."""


def rule_stage(rule: str) -> str | None:
    """The stage a Snakemake rule runs (`Stage.rule_names`; a per-job rule is its first name,
    `_` and the job's arguments), None for a collect target, which runs nothing; any other
    rule stops with a one-line message naming it."""
    from airfl.pipeline import stage_table
    from airfl.pipeline.snakemake_rules import target_rule_names

    for record in stage_table.STAGES:
        names = record.rule_names()
        if rule in names or (record.per_job and rule.startswith(names[0] + "_")):
            return record.name
    if rule in COLLECT_RULES or rule in target_rule_names():
        return None
    raise ConfigError(f"plan: rule {rule!r} is neither a stage's rule nor a collect target; "
                      "cannot cost it")


def planned_job(rule: str, wildcards: dict[str, str]) -> PlannedJob | None:
    """The job a Snakemake rule and its wildcards run (None: a collect target, no job):
    `train` with paper, figure and curve runs `airfl train paper/figure curve`; a per-job rule
    (`figure_<paper>_<figure>`) is costed as its stage's fixed cost, its paper from its name."""
    stage = rule_stage(rule)
    if stage is None:
        return None
    args: list[str] = []
    if "paper" in wildcards and "figure" in wildcards:
        args.append(f"{wildcards['paper']}/{wildcards['figure']}")
    elif "paper" in wildcards:
        args.append(wildcards["paper"])
    args += [wildcards[k] for k in ("curve", "block", "mechanism", "name", "dataset")
             if k in wildcards]
    if stage in COSTED_STAGES and not args:
        raise ConfigError(f"plan: rule {rule!r} has no paper/figure wildcards to cost it by")
    if not args and "_" in rule:                # figure_<paper>_<figure>
        from airfl.pipeline.registry import papers

        rest = rule.split("_", 1)[1]
        args = [max((p for p in papers() if rest == p or rest.startswith(p + "_")), key=len,
                    default=rest)]
    return PlannedJob(stage, "-".join([stage, *args]), tuple(args))


BUILT_FIRST = ("audit",)
"""Stages whose job is costed from what it builds first (an audit job: its points): the job
calls the guard once they are built (`job_over_bound` with `points`), so nothing is built twice,
and stops with `stage_error.OverBound` when it is over the bound."""


GUARDED_STAGES = (*COSTED_STAGES, *BUILT_FIRST)
"""Stages whose jobs the guard costs by their work; every other stage costs its fixed cost."""


def light_cost(job: PlannedJob, params: dict[str, Any], units: UnitCosts,
               blocks: Callable | None = None) -> JobCost:
    """`job_cost` for a job known by stage and arguments: training work from the params, every
    other stage its fixed cost (its paper read from its first argument where it has one);
    `blocks`: the experiments' composed blocks where already composed (`job_cost`)."""
    if job.stage in GUARDED_STAGES:
        return job_cost(job, params, units, blocks=blocks)
    paper = job.args[0].split("/")[0] if job.args and job.stage not in ("data", "reference") \
        else "shared"
    return JobCost(job.stage, job.name, paper, units.stage(job.stage))


def over_bound(costs: list[JobCost], params: dict[str, Any], units: UnitCosts,
               how_to_confirm: str) -> str | None:
    """The estimate and how to go on when the jobs' core-hours exceed the declared bound
    `confirm_cost_above_core_hours` (None: within it, or the bound is null)."""
    bound = params.get("confirm_cost_above_core_hours")
    core_h = sum(c.core_s for c in costs) / 3600
    if bound is None or core_h <= bound:
        return None
    table = render(summary(costs), units, params["profile"], None).splitlines()
    return "\n".join([
        f"airfl: this run is estimated at {core_h:,.1f} core-hours "
        f"({duration(core_h * 3600 / CORES)} on {CORES} cores), above "
        f"confirm_cost_above_core_hours = {bound:g}; nothing started.",
        *table[1:],
        f"To start it anyway: {how_to_confirm}."])


def job_over_bound(stage: str, args: list[str], params: dict[str, Any],
                   units_path: str | Path = UNIT_COSTS, points: list | None = None) -> str | None:
    """`over_bound` for one `airfl <stage> <args>` job (train, tune, calibrate, audit; an audit
    costed from `points`, the points its stage built, where given); None for other stages or
    where no unit costs are measured (nothing to estimate from)."""
    if stage not in GUARDED_STAGES or not Path(units_path).exists():
        return None
    units = UnitCosts.load(units_path)
    job = PlannedJob(stage, "-".join([stage, *args]), tuple(args))
    return over_bound([job_cost(job, params, units, points)], params, units,
                      f"`airfl --yes {stage} {' '.join(args)}`, or raise "
                      "confirm_cost_above_core_hours in params.yaml (or --set it)")


def snakemake_over_bound(jobs: list[tuple[str, dict[str, str]]], params: dict[str, Any],
                         units_path: str | Path = UNIT_COSTS) -> str | None:
    """`over_bound` for the (rule, wildcards) of the jobs a Snakemake run is about to start."""
    if params.get("confirm_cost_above_core_hours") is None or not Path(units_path).exists():
        return None
    units = UnitCosts.load(units_path)
    costs = [light_cost(job, params, units) for job in
             (planned_job(rule, wildcards) for rule, wildcards in jobs) if job is not None]
    return over_bound(costs, params, units, "add `--config confirm_cost_above_core_hours=N` "
                      "(N above the estimate) to the snakemake command, or raise it in "
                      "params.yaml")
