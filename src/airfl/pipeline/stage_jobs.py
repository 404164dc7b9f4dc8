"""Which jobs each stage of the table has and what they read: the functions the stage records
(`stage_table`) name by import string, for `dag.jobs` (dvc.yaml) and the Snakemake rules
(`snakemake_rules`). Only the DAG's generation runs them, never a stage's job: by naming them
in strings the table keeps their imports (the registry, tuning, plotting) out of the code every
stage depends on (`code_deps`), as a stage's `run` is named.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from airfl.core.experiments import measured_metrics
from airfl.pipeline import paths, stage_table
from airfl.pipeline.dvc_plots import Plot
from airfl.pipeline.stage_table import Context, figure_files


def experiment_of(experiment_id: str) -> Any:
    from airfl.pipeline.registry import get_experiment

    return get_experiment(experiment_id)


def manifest(ctx: Context, experiment: Any) -> list[str]:
    return [str(paths.dataset_manifest(ctx.block(experiment)["dataset"]))]


def reference(experiment: Any) -> list[str]:
    return [str(paths.reference(experiment.reference.name, "json"))] if experiment.reference \
        else []


def tuning(ctx: Context, experiment: Any, curve: str) -> list[str]:
    from airfl.pipeline.tuning import tuning_file

    source = tuning_file(experiment, ctx.block(experiment), curve)
    return [] if source is None else [str(source)]


def derived(ctx: Context, experiment: Any, curve: str) -> list[str]:
    """The derivation JSONs (stage `derive`) whose parameters the curve's jobs read."""
    return [str(paths.derived(experiment.id, d.name))
            for d in experiment.derivations_of(curve, ctx.block(experiment)["curves"])]


def datasets(ctx: Context) -> list[tuple[str]]:
    from airfl.pipeline.registry import active_experiments

    return [(d,) for d in sorted({ctx.block(e)["dataset"]
                                  for e in active_experiments(ctx.params)})]


def references(ctx: Context) -> list[tuple[str]]:
    from airfl.pipeline.registry import active_experiments

    return [(name,) for name in sorted({e.reference.name for e in active_experiments(ctx.params)
                                        if e.reference})]


def reference_inputs(ctx: Context, name: str) -> list[str]:
    from airfl.pipeline.registry import get_reference

    return [str(paths.dataset_manifest(get_reference(name).dataset))]


def reference_owner(name: str) -> tuple[str, ...]:
    from airfl.pipeline.registry import all_experiments

    (owner,) = {e.paper for e in all_experiments()
                if e.reference is not None and e.reference.name == name}
    return (owner,)


def partition_inputs(ctx: Context, experiment_id: str) -> list[str]:
    return manifest(ctx, experiment_of(experiment_id))


def calibrations(ctx: Context, experiment: Any) -> list[tuple[str]]:
    return [(experiment.id,)] if experiment.calibration else []


def calibrate_inputs(ctx: Context, experiment_id: str) -> list[str]:
    return [*manifest(ctx, experiment_of(experiment_id)), str(paths.partition(experiment_id))]


def tunes(ctx: Context, experiment: Any, curve: str) -> list[tuple[str, str]]:
    from airfl.pipeline.tuning import tuned_curves

    return [(experiment.id, curve)] if curve in tuned_curves(experiment, ctx.block(experiment)) \
        else []


def tune_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    experiment = experiment_of(experiment_id)
    return [*manifest(ctx, experiment), str(paths.partition(experiment_id)),
            *reference(experiment)]


def derivations(ctx: Context, experiment: Any) -> list[tuple[str, str]]:
    return [(experiment.id, d.name)
            for d in experiment.active_derivations(ctx.block(experiment)["curves"])]


def derive_inputs(ctx: Context, experiment_id: str, name: str) -> list[str]:
    """The designs, run records and run tables of the derivation's source curves."""
    experiment = experiment_of(experiment_id)
    sources, _ = experiment.derivation(name).resolve(ctx.block(experiment)["curves"])
    return [str(p) for c in sources
            for p in (paths.design(experiment_id, c), paths.run_records(experiment_id, c),
                      paths.run_table(experiment_id, c))]


def design_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    experiment = experiment_of(experiment_id)
    return [str(paths.partition(experiment_id)), *reference(experiment),
            *tuning(ctx, experiment, curve), *derived(ctx, experiment, curve)]


def trials_inputs(ctx: Context, experiment_id: str, curve: str, *_: str) -> list[str]:
    """What training a curve's trials reads (one job, or each block of a split curve)."""
    experiment = experiment_of(experiment_id)
    calibration = [str(paths.calibration(experiment_id))] if experiment.calibration else []
    return [*manifest(ctx, experiment), str(paths.partition(experiment_id)),
            str(paths.design(experiment_id, curve)), *reference(experiment),
            *tuning(ctx, experiment, curve), *calibration, *derived(ctx, experiment, curve)]


def _blocks(ctx: Context, experiment_id: str) -> list[str]:
    """A split curve's blocks of trials (the same for every curve of an experiment, memoised
    by the context), none for a curve trained in one job."""
    return ctx.trial_blocks(experiment_of(experiment_id))


def trial_block_jobs(ctx: Context, experiment: Any, curve: str) -> list[tuple[str, str, str]]:
    return [(experiment.id, curve, b) for b in _blocks(ctx, experiment.id)]


def train_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    """`trials_inputs`, and for a split curve the blocks its job merges."""
    return trials_inputs(ctx, experiment_id, curve) + \
        [o for b in _blocks(ctx, experiment_id)
         for o in stage_table.stage("trials").files(experiment_id, curve, b)]


def split_keys(ctx: Context, experiment_id: str, *_: str) -> list[str]:
    """A split curve's train and trials jobs read `trials_per_job`; one job a curve, nothing."""
    return ["trials_per_job"] if _blocks(ctx, experiment_id) else []


def gpu_job(ctx: Context, *_: str) -> int:
    """One GPU for a job that trains on it (params.yaml device: cuda), none on the CPU."""
    return 1 if ctx.params.get("device") == "cuda" else 0


def train_gpu(ctx: Context, experiment_id: str, curve: str) -> int:
    """A split curve's train job only merges its blocks: no GPU."""
    return 0 if _blocks(ctx, experiment_id) else gpu_job(ctx)


def block_constraints() -> dict[str, str]:
    return {"block": "[0-9]+-[0-9]+"}


def train_declared(ctx: Context, experiment_id: str, curve: str, *_: str) -> dict[str, Any]:
    """The rounds the curve's readers evaluate (`Experiment.evaluation`) and whether they read
    the training metrics (`Experiment.measures_training`, recorded as `measured_metrics`)."""
    experiment = experiment_of(experiment_id)
    curves = ctx.block(experiment)["curves"]
    return {"evaluation": experiment.evaluation(curve, curves),
            **measured_metrics(experiment.measures_training(curve, curves))}


def private(ctx: Context, experiment: Any, curve: str) -> list[tuple[str, str]]:
    return [(experiment.id, curve)] if experiment.privacy else []


def privacy_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    return [str(paths.run_records(experiment_id, curve))]


def figure_inputs(ctx: Context, experiment_id: str) -> list[str]:
    """The run tables, the privacy accounts (a private experiment), the reference, and the
    wing's audits where a table shows them (`Table.audits`)."""
    experiment = experiment_of(experiment_id)
    curves = list(experiment.curves(ctx.params))
    return [str(paths.run_table(experiment_id, c)) for c in curves] + \
        [str(paths.privacy(experiment_id, c)) for c in curves if experiment.privacy] + \
        reference(experiment) + \
        (audit_json({experiment.paper}) if any(t.audits for t in experiment.tables) else [])


def figure_plots(ctx: Context, experiment_id: str) -> list[Plot]:
    """Each panel's CSV with its own axes, in the order of `figure_names`."""
    experiment = experiment_of(experiment_id)
    specs = (experiment.figure_spec, *experiment.extra_figures)
    panels = figure_files(experiment_id)[:3 * len(specs)]        # then tables, then the summary
    csvs = [str(p) for p in panels if p.suffix == ".csv"]
    return [figure_plot(csv, spec, experiment) for csv, spec in zip(csvs, specs, strict=True)]


def figure_caption(ctx: Context, experiment_id: str) -> str:
    from airfl.pipeline.artifacts import caption, rst_text

    return rst_text(caption(ctx.params, experiment_of(experiment_id)))   # literal text in the RST


def analytic_figures(ctx: Context) -> list[tuple[str]]:
    from airfl.pipeline.registry import all_analytic

    return [(f.id,) for f in all_analytic()]


def analytic_paper(figure_id: str) -> tuple[str, ...]:
    from airfl.pipeline.registry import get_analytic

    return (get_analytic(figure_id).paper,)


def analytic_plots(ctx: Context, figure_id: str) -> list[Plot]:
    """The CSV, its panels drawn on one scale (log only when every panel is)."""
    from airfl.pipeline import dvc_plots
    from airfl.pipeline.registry import get_analytic

    figure = get_analytic(figure_id)
    logy = all(panel.logy for panel in figure.panels)
    return [dvc_plots.Plot(str(paths.figure(figure_id, "csv")), "x", "value", figure.title,
                           figure.xlabel, " | ".join(panel.ylabel for panel in figure.panels),
                           dvc_plots.template_name("panels", figure.logx, logy))]


def analytic_caption(ctx: Context, figure_id: str) -> str:
    from airfl.pipeline.artifacts import analytic_caption as caption_of, rst_text
    from airfl.pipeline.registry import get_analytic

    return rst_text(caption_of(ctx.params, get_analytic(figure_id)))


def analytic_constraints() -> dict[str, str]:
    """{name}: an analytic figure's name, only inside its own paper's folder."""
    from airfl.pipeline.registry import all_analytic

    return {"name": named_in_paper(f.id for f in all_analytic())}


def audits(ctx: Context | None = None) -> list[tuple[str, str]]:
    from airfl.pipeline.registry import wings

    return [(wing.name, name) for wing in wings() for name in sorted(wing.audits)]


def audit_inputs(ctx: Context, wing: str, mechanism: str) -> list[str]:
    """The partitions the mechanism's points rebuild (`Wing.audit_partitions`: the arena's LAPA
    audit reads its split's sizes and label histograms), so its job runs after them."""
    from airfl.pipeline.registry import get_wing

    return [str(paths.partition(e))
            for e in get_wing(wing).audit_partitions.get(mechanism, ())]


def audit_plots(ctx: Context, wing: str, mechanism: str) -> list[Plot]:
    from airfl.pipeline import dvc_plots

    return [dvc_plots.Plot(str(paths.audit_figure(wing, mechanism, "csv")), "eps_audited_lower",
                           "label", f"{wing}: {mechanism} (audit)", "epsilon", "mechanism",
                           dvc_plots.template_name("audit"))]


def audit_constraints() -> dict[str, str]:
    pairs = audits()
    return {"paper": one_of({w for w, _ in pairs}), "mechanism": one_of({m for _, m in pairs})}


def claims(ctx: Context) -> list[tuple[str, ...]]:
    from airfl.pipeline.registry import papers

    return [(paper,) for paper in papers()] + [()]


def claims_inputs(ctx: Context, paper: str | None = None) -> list[str]:
    """One paper's: the CSVs its claims are checked on; every paper's: the papers' rows and
    the audits of the wings without figures."""
    from airfl.pipeline.registry import papers, wings

    if paper is not None:
        return claim_inputs(paper, ctx.params)
    return [str(paths.claims_rows(p)) for p in papers()] + \
        audit_json({w.name for w in wings() if not w.catalogue})


def claims_constraints() -> dict[str, str]:
    from airfl.pipeline.registry import papers

    return {"paper": one_of(papers())}


def figure_plot(csv: str, spec: Any, experiment: Any) -> Plot:
    """A figure CSV as `dvc plots` draws it: the axes of its panel (`FigureSpec`)."""
    from airfl.pipeline import dvc_plots

    return dvc_plots.Plot(csv, spec.x, spec.y, spec.title or experiment.title, spec.xlabel,
                          spec.ylabel, dvc_plots.template_name("lines", spec.logx, spec.logy))


def audit_json(wing_names: Iterable[str]) -> list[str]:
    """The audit JSONs of these wings (claim inputs)."""
    from airfl.pipeline.registry import wings

    return [str(paths.audit(w.name, n)) for w in wings() if w.name in wing_names
            for n in sorted(w.audits)]


def claim_inputs(paper: str, params: dict[str, Any] | None = None) -> list[str]:
    """Every CSV a paper's claims are checked on (its experiments' and analytic figures; those
    the params run: `Experiment.enabled`), and its wing's audit results."""
    from airfl.pipeline.registry import active_experiments, all_analytic

    return [str(p) for e in active_experiments(params) if e.paper == paper
            for p in figure_files(e.id) if p.suffix == ".csv"] + \
        [str(paths.figure(f.id, "csv")) for f in all_analytic()
         if f.paper == paper and f.check is not None] + audit_json({paper})


def one_of(names: Iterable[str]) -> str:
    """A wildcard constraint: exactly these names."""
    import re

    return "|".join(re.escape(n) for n in sorted(names))


def named_in_paper(ids: Iterable[str]) -> str:
    """A constraint on {name} in ".../<paper>/{name}..." paths: the name of each id
    "<paper>/<name>", only inside its own paper's folder (a lookbehind), so that another paper's
    file of that name is no match."""
    import re

    return "|".join(f"(?<=/{re.escape(p)}/){re.escape(n)}"
                    for p, n in sorted(i.split("/", 1) for i in ids))
