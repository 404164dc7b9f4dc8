"""The pipeline's jobs, expanded from the experiment registry: one description for both tools.

The Snakefile's rules take their inputs, outputs and params from the functions here, and
`airfl dvc-yaml` writes dvc.yaml from `jobs()`; a test fails when the committed dvc.yaml drifts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from airfl.pipeline import dvc_plots, param_deps, paths, stage_table
from airfl.config import get_dotted
from airfl.experiments import AnalyticFigure, Experiment, FigureSpec
from airfl.pipeline.code_deps import digest, stage_code
from airfl.pipeline.stage_params import stage_keys
from airfl.pipeline.trial_blocks import trial_blocks
from airfl.pipeline.registry import (active_experiments, all_analytic, all_experiments,
                                     get_analytic, get_experiment, get_wing, papers,
                                     scheme_wings, wings)

def code(stage: str, *wing_names: str) -> list[str]:
    """The source files a stage runs when it loads these wings (`code_deps`), as DVC `deps`
    and, digested, as Snakemake's code parameter."""
    packages = sorted({get_wing(name).package for name in wing_names})
    return list(stage_code(stage, tuple(packages)))


def experiment_code(stage: str, experiment: Experiment, params: dict[str, Any],
                    curve: str | None = None) -> list[str]:
    """A stage of one experiment loads its paper's wing and, when it builds schemes, the wings
    offering the schemes of its curve (all curves: None)."""
    names = [experiment.paper]
    if stage in ("tune", "design", "calibrate", "train", "trials"):
        curves = experiment.curves(params)
        offered = scheme_wings()
        for name in ([curve] if curve is not None else list(curves)):
            kind = curves[name].get("scheme") if isinstance(curves[name], dict) else None
            if kind in offered:
                names.append(offered[kind].name)
    return code(stage, *names)


@dataclass(frozen=True)
class Plot:
    """One figure CSV as `dvc plots` draws it: its axes as the PNG has them (columns, labels,
    log scales) and the template (airfl.pipeline.dvc_plots) that draws one line per scheme."""

    path: str
    x: str
    y: str
    title: str
    x_label: str
    y_label: str
    template: str

    def props(self) -> dict[str, str]:
        """dvc.yaml's plot properties."""
        return {"template": self.template, "x": self.x, "y": self.y, "title": self.title,
                "x_label": self.x_label, "y_label": self.y_label}


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


def outputs(stage: str, *args: str) -> list[str]:
    """The files the job `airfl <stage> <args>` writes (the stage table's `outputs`)."""
    return stage_table.stage(stage).files(*args)


def partition_outputs(experiment_id: str) -> list[str]:
    return outputs("partition", experiment_id)


def derived_sources(experiment: Experiment, name: str, curves) -> list[str]:
    """The designs, run records and run tables of a derivation's source curves."""
    sources, _ = experiment.derivation(name).resolve(curves)
    return [str(p) for c in sources
            for p in (paths.design(experiment.id, c), paths.run_records(experiment.id, c),
                      paths.run_table(experiment.id, c))]


def derived_inputs(experiment: Experiment, curve: str, curves) -> list[str]:
    """The derivation JSONs a curve's design and train jobs read (stage `derive`)."""
    return [str(paths.derived(experiment.id, d.name))
            for d in experiment.derivations_of(curve, curves)]


def figure_outputs(experiment: Experiment) -> list[str]:
    """Every panel's CSV, PNG and PDF, then the experiment's summary JSON."""
    return outputs("figure", experiment.id)


def experiment_jobs(experiment: Experiment, params: dict[str, Any]) -> list[Job]:
    eid = experiment.id
    block = experiment.params(params)
    keys = param_deps.derive(experiment, params)

    def reads(stage: str, curve: str | None = None) -> list[str]:
        """The exact params.yaml keys the job reads: its stage's top-level
        knobs and the leaves behind its view of the block (param_deps)."""
        return [*stage_table.stage(stage).knobs, *keys[(stage, curve)]]

    manifest = str(paths.dataset_manifest(block["dataset"]))
    jobs = [Job("partition", _slug("partition", eid), [eid], [manifest], partition_outputs(eid),
                reads("partition"))]
    reference = [str(paths.reference(experiment.reference.name, "json"))] \
        if experiment.reference else []
    from airfl.pipeline.tuning import tuned_curves, tuning_file

    searching = tuned_curves(experiment, block)
    calibration = [str(paths.calibration(eid))] if experiment.calibration else []
    if calibration:                 # one noise-free round at theta_0, read by every train job
        jobs.append(Job("calibrate", _slug("calibrate", eid), [eid],
                        [manifest, str(paths.partition(eid))], outputs("calibrate", eid),
                        reads("calibrate")))
    for derivation in experiment.active_derivations(block["curves"]):   # source runs -> params
        jobs.append(Job("derive", _slug("derive", eid, derivation.name), [eid, derivation.name],
                        derived_sources(experiment, derivation.name, block["curves"]),
                        outputs("derive", eid, derivation.name), reads("derive", derivation.name)))
    blocks = trial_blocks(params, experiment, block)    # a split curve's jobs, or None
    for curve in experiment.curves(params):
        source = tuning_file(experiment, block, curve)
        derived = derived_inputs(experiment, curve, block["curves"])
        tuning = [] if source is None else [str(source)]
        if curve in searching:
            jobs.append(Job("tune", _slug("tune", eid, curve), [eid, curve],
                            [manifest, str(paths.partition(eid)), *reference],
                            outputs("tune", eid, curve), reads("tune", curve)))
        train_deps = [manifest, str(paths.partition(eid)), str(paths.design(eid, curve)),
                      *reference, *tuning, *calibration, *derived]
        evaluation = {"evaluation": experiment.evaluation(curve, block["curves"])}
        jobs.append(Job("design", _slug("design", eid, curve), [eid, curve],
                        [str(paths.partition(eid)), *reference, *tuning, *derived],
                        outputs("design", eid, curve), reads("design", curve)))
        parts = [Job("trials", _slug("trials", eid, curve, b), [eid, curve, b], train_deps,
                     outputs("trials", eid, curve, b), reads("train", curve),
                     declared=evaluation) for b in blocks or ()]
        jobs += parts + [      # split: the train job merges its blocks' outputs
            Job("train", _slug("train", eid, curve), [eid, curve],
                train_deps + [o for part in parts for o in part.outs],
                outputs("train", eid, curve),
                reads("train", curve) + (["trials_per_job"] if blocks else []),
                declared=evaluation),
        ]
        if experiment.privacy:
            jobs.append(Job("privacy", _slug("privacy", eid, curve), [eid, curve],
                            [str(paths.run_records(eid, curve))], outputs("privacy", eid, curve),
                            reads("privacy", curve)))
    curves = list(experiment.curves(params))
    figure_deps = [str(paths.run_table(eid, c)) for c in curves] + \
        [str(paths.privacy(eid, c)) for c in curves if experiment.privacy] + reference
    outs = figure_outputs(experiment)
    csvs = [o for o in outs[:-1] if o.endswith(".csv")]
    specs = (experiment.figure_spec, *experiment.extra_figures)     # the order of figure_names
    jobs.append(Job("figure", _slug("figure", eid), [eid], figure_deps,
                    [o for o in outs[:-1] if not o.endswith(".csv")], reads("figure"),
                    plots=[figure_plot(csv, spec, experiment)
                           for csv, spec in zip(csvs, specs, strict=True)],
                    metrics=[outs[-1]]))
    return jobs


def figure_plot(csv: str, spec: FigureSpec, experiment: Experiment) -> Plot:
    return Plot(csv, spec.x, spec.y, spec.title or experiment.title, spec.xlabel, spec.ylabel,
                dvc_plots.template_name("lines", spec.logx, spec.logy))


def rule_params(stage: str, experiment: Experiment, params: dict[str, Any],
                curve: str | None = None, block: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Snakemake rule's `params:` for the job: the values of its stage's top-level knobs and
    its view of the block, the view whose keys dvc.yaml lists (param_deps), so a one-knob
    change reruns the same jobs in both tools. `curve`: the curve, or the derivation's name of
    a `derive` job. `block`: the resolved block, when cached."""
    block = experiment.params(params) if block is None else block
    derivation = experiment.derivation(curve) if stage == "derive" else None
    training = stage in ("train", "trials")
    out = {"knobs": {k: get_dotted(params, k) for k in stage_table.stage(stage).knobs},
           "view": param_deps.block_view(
               stage, block, curve, experiment.panel_keys, derivation,
               param_deps.shared_sections(experiment, params) if derivation else None,
               experiment.evaluation(curve, block["curves"]) if training else None)}
    blocks = trial_blocks(params, experiment, block) if training else None
    if blocks:                      # split (trials_per_job): absent for one job a curve
        out["trial_blocks"] = blocks
    return out


def trial_block_inputs(experiment: Experiment, params: dict[str, Any], curve: str,
                       block: dict[str, Any] | None = None) -> list[str]:
    """What a split curve's train job merges: its blocks' outputs (stage `trials`); none for
    a curve trained in one job."""
    block = experiment.params(params) if block is None else block
    return [o for b in trial_blocks(params, experiment, block) or ()
            for o in outputs("trials", experiment.id, curve, b)]


def declared_values(stage: str, params: dict[str, Any], *args: str) -> dict[str, Any]:
    """A Snakemake rule's `params:` for a job that is no stage of one experiment: the values of
    the keys its stage declares for these arguments, the keys its DVC manifest lists
    (stage_params.stage_keys), so a change reruns it in both tools."""
    return {key: get_dotted(params, key) for key in stage_keys(stage, *args)}


def analytic_outputs(figure: AnalyticFigure) -> list[str]:
    """The CSV (what is drawn), PNG, PDF and the attributes JSON of an analytic figure."""
    return outputs("analytic", figure.id)


def analytic_job(figure: AnalyticFigure) -> Job:
    outs = analytic_outputs(figure)
    logy = all(panel.logy for panel in figure.panels)    # one scale for every panel
    plot = Plot(outs[0], "x", "value", figure.title, figure.xlabel,
                " | ".join(panel.ylabel for panel in figure.panels),
                dvc_plots.template_name("panels", figure.logx, logy))
    return Job("analytic", _slug("analytic", figure.id), [figure.id], [],
               outs[1:], list(stage_keys("analytic", figure.id)), plots=[plot])


def audit_outputs(wing: str, mechanism: str) -> list[str]:
    """An audit's JSON (what the claims read), and the CSV, PNG and PDF of its figure."""
    return outputs("audit", wing, mechanism)


def audit_jobs() -> list[Job]:
    """One `airfl audit <wing> <mechanism>` job per mechanism a wing registers for auditing;
    its params: the audit block's shared settings, the seed, the profile, the wing's audit
    settings and its own block (stage_params.stage_keys)."""
    out = []
    for wing in wings():
        for name in sorted(wing.audits):
            outs = audit_outputs(wing.name, name)
            out.append(Job("audit", _slug("audit", wing.name, name), [wing.name, name], [],
                           [o for o in outs[1:] if not o.endswith(".csv")],   # the CSV: a plot
                           list(stage_keys("audit", wing.name, name)),
                           plots=[Plot(outs[1], "eps_audited_lower", "label",
                                       f"{wing.name}: {name} (audit)", "epsilon", "mechanism",
                                       dvc_plots.template_name("audit"))],
                           metrics=[outs[0]]))
    return out


def audit_json(wing_names) -> list[str]:
    """The audit JSONs of these wings (claim inputs)."""
    return [audit_outputs(w.name, n)[0] for w in wings() if w.name in wing_names
            for n in sorted(w.audits)]


def claim_inputs(paper: str, params: dict[str, Any] | None = None) -> list[str]:
    """Every CSV a paper's claims are checked on (its experiments' and analytic figures; those
    the params run: `Experiment.enabled`), and its wing's audit results."""
    return [o for e in active_experiments(params) if e.paper == paper for o in figure_outputs(e)
            if o.endswith(".csv")] + \
        [analytic_outputs(f)[0] for f in all_analytic() if f.paper == paper and f.check is not None] \
        + audit_json({paper})


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


def datasets(params: dict[str, Any]) -> list[str]:
    return sorted({e.params(params)["dataset"] for e in active_experiments(params)})


def jobs(params: dict[str, Any]) -> list[Job]:
    """Every job of the pipeline, in data-flow order."""
    out = [Job("data", _slug("data", d), [d], [], outputs("data", d),
               list(stage_keys("data", d))) for d in datasets(params)]
    references = {e.reference.name: e.reference for e in active_experiments(params) if e.reference}
    for name, ref in sorted(references.items()):
        out.append(Job("reference", _slug("reference", name), [name],
                       [str(paths.dataset_manifest(ref.dataset))],
                       outputs("reference", name),
                       list(stage_keys("reference", name))))
    for experiment in active_experiments(params):
        out += experiment_jobs(experiment, params)
    out += [analytic_job(figure) for figure in all_analytic()]
    out += audit_jobs()
    for paper in papers():
        out.append(Job("claims", _slug("claims", paper), [paper], claim_inputs(paper, params),
                       [o for o in outputs("claims", paper) if o != str(paths.claims_metrics(paper))],
                       list(stage_keys("claims", paper)), metrics=[str(paths.claims_metrics(paper))]))
    out.append(Job("claims", "claims", [], [str(paths.claims_rows(p)) for p in papers()]
                   + audit_json({w.name for w in wings() if not w.catalogue}),
                   [o for o in outputs("claims") if o != str(paths.claims_metrics())],
                   list(stage_keys("claims")),
                   metrics=[str(paths.claims_metrics())]))
    for job in out:
        job.code = job_code(job.stage, job.args, params)
    return out


def job_code(stage: str, args: list[str], params: dict[str, Any]) -> list[str]:
    """The code of the job `airfl <stage> <args>`: which wings it loads follows from its
    arguments (an experiment and curve, a reference, an analytic figure, a paper)."""
    if stage in ("data", "privacy") or (stage == "claims" and not args):
        return code(stage)                   # no wing: a dataset, stored records, claim files
    if stage in ("claims", "audit"):
        return code(stage, args[0])
    if stage == "reference":
        (owner,) = {e.paper for e in all_experiments()
                    if e.reference is not None and e.reference.name == args[0]}
        return code(stage, owner)
    if stage == "analytic":
        return code(stage, get_analytic(args[0]).paper)
    return experiment_code(stage, get_experiment(args[0]), params,
                           args[1] if len(args) > 1 else None)


@cache
def _digest(deps: tuple[str, ...]) -> str:
    return digest(deps)


def code_digest(stage: str, args: list[str], params: dict[str, Any]) -> str:
    """A hash of the job's code files: the Snakemake rules' `code` parameter, so that a code
    edit reruns the same jobs under Snakemake as under DVC."""
    return _digest(tuple(job_code(stage, args, params)))
