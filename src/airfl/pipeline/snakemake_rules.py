"""The Snakemake rules, generated from the stage table (`stage_table`): workflow/rules/stages.smk
defines every rule of this list in its one loop.

A stage has one rule per number of arguments given (`Stage.rule_names`), its outputs and log
the record's with each argument's wildcard pattern (`Arg.wildcards`), its inputs the record's
`inputs` of the arguments read back from the wildcards: the files dvc.yaml lists as the job's
deps (`dag.make_job`). Where a stage's outputs vary in number between jobs (`Stage.per_job`: a
figure's panels), no wildcard pattern spells them, and it has a rule per job instead. Every
rule's params are the values behind the keys the job's DVC manifest lists (`dag.rule_params`
for a stage of one experiment, `dag.declared_values` for the others) and the digest of its code
(`dag.code_digest`), so that a one-knob or code change reruns the same jobs in both tools. The
shell command is `{AIRFL} <stage> <arguments> > {log} 2>&1` (AIRFL: workflow/rules/common.smk).
The collect targets come last: one per paper (`snakemake <paper>`), `analytic` and `audit`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airfl.pipeline import dag, paths, stage_table
from airfl.pipeline.registry import active_experiments, papers
from airfl.pipeline.stage_table import Stage


@dataclass
class Rule:
    """One Snakemake rule; `shell` None: a collect target (only `name` and `input`)."""

    name: str
    input: Any                                   # a list, or a function of the wildcards
    output: list[str] = field(default_factory=list)
    report: dict[str, dict[str, Any]] = field(default_factory=dict)   # output -> report() args
    params: dict[str, Any] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    shell: str | None = None
    constraints: dict[str, str] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)      # name -> f(wildcards)


def _shell(stage: str, args: list[str]) -> str:
    """The job's command: each wildcard `{x}` of an argument read as `{wildcards.x}`."""
    words = [re.sub(r"\{(\w+)\}", r"{wildcards.\1}", a) for a in args]
    return " ".join(["{AIRFL}", stage, *words]) + " > {log} 2>&1"


def _report(record: Stage, outputs: list[str], args: list[str]) -> dict[str, dict[str, Any]]:
    spec = record.report
    if spec is None:
        return {}
    return {f: {"caption": f"../report/{spec.caption}", "category": spec.category(*args),
                "subcategory": spec.subcategory(f, *args)}
            for f in outputs if f.endswith(spec.suffix)}


def _params(ctx: dag.Context, record: Stage, args_of: Callable[[Any], tuple[str, ...]]
            ) -> dict[str, Any]:
    """The rule's params, each a function of the job's wildcards (module docstring)."""
    def values(w: Any) -> dict[str, Any]:
        args = args_of(w)
        if record.view is None:
            return dag.declared_values(record.name, ctx.params, *args)
        return dag.rule_params(ctx, record.name, args)

    params = {"setting" if record.view is not None else "declared": values,
              "code": lambda w: ctx.code_digest(record.name, args_of(w))}
    if record.report is not None and record.report.text is not None:
        text = stage_table.resolve(record.report.text)
        params["caption"] = lambda w: text(ctx, *args_of(w))
    return params


def _rule(ctx: dag.Context, record: Stage, name: str, args: list[str],
          args_of: Callable[[Any], tuple[str, ...]]) -> Rule:
    outputs = record.files(*args)
    inputs = (lambda w: record.call("inputs", ctx, *args_of(w))) if record.inputs else []
    resources = {"gpu": lambda w: record.call("gpu", ctx, *args_of(w))} if record.gpu else {}
    return Rule(name, inputs, outputs, _report(record, outputs, args),
                _params(ctx, record, args_of), [str(paths.log(record.name, *args))],
                _shell(record.name, args),
                record.call("constraints") if record.constraints else {}, resources)


def _wildcard_rules(ctx: dag.Context, record: Stage) -> list[Rule]:
    """A rule per number of arguments given: all, then without each optional one."""
    out = []
    for dropped, name in enumerate(record.rule_names()):
        given = record.args[:len(record.args) - dropped]
        patterns = [a.wildcards for a in given]

        def args_of(w: Any, given=given) -> tuple[str, ...]:
            values = dict(w.items())
            return tuple(a.wildcards.format(**values) for a in given)

        out.append(_rule(ctx, record, name, patterns, args_of))
    return out


def _job_rules(ctx: dag.Context, record: Stage) -> list[Rule]:
    """A rule per job (`Stage.per_job`), named for the stage and its arguments."""
    if record.scope == "global":
        jobs = record.job_args(ctx)
    elif record.scope == "experiment":
        jobs = [a for e in active_experiments(ctx.params) for a in record.job_args(ctx, e)]
    else:
        jobs = [a for e in active_experiments(ctx.params) for c in e.curves(ctx.params)
                for a in record.job_args(ctx, e, c)]
    return [_rule(ctx, record, "_".join([record.rule_names()[0], *args]).replace("/", "_"),
                  list(args), lambda w, args=args: args) for args in jobs]


def target_rule_names() -> list[str]:
    """The collect targets' rule names (`target_rules`): each paper, analytic and audit."""
    return [*papers(), "analytic", "audit"]


def target_rules(params: dict[str, Any]) -> list[Rule]:
    """`snakemake <paper>` (its figures, partitions and claims), `snakemake analytic` (every
    figure computed from formulas alone) and `snakemake audit` (every registered audit,
    without the training DAG)."""
    targets = {"analytic": dag.analytic_targets, "audit": dag.audit_targets}
    return [Rule(name, targets[name]() if name in targets else dag.paper_targets(name, params))
            for name in target_rule_names()]


def rules(ctx: dag.Context) -> list[Rule]:
    """Every rule: the stages' in table order, then the collect targets."""
    out = []
    for record in stage_table.STAGES:
        out += _job_rules(ctx, record) if record.per_job else _wildcard_rules(ctx, record)
    return out + target_rules(ctx.params)
