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
adds one so), and the stage import contract matches it by wildcard.

The jobs of the table are listed in its order, the stages of one experiment grouped by
experiment and those of one curve by curve (`dag.jobs`): the order of dvc.yaml.

A light module (no torch, no registry at import): `airfl --help` and the light stages read it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from airfl.pipeline import paths

if TYPE_CHECKING:           # light at import: `airfl --help` reads the table
    from airfl.pipeline.dvc_plots import Plot


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
    text: Callable[..., str] | None = None


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
    `inputs`: `(ctx, *args)` -> the files a job reads (its DVC deps and rule inputs);
    `plots`: `(ctx, *args)` -> the CSVs `dvc plots` draws (`dvc_plots.Plot`); `metrics`: `(*args)` ->
    its `dvc metrics` files; the other outputs are its `outs`. `declared`: `(ctx, *args)` -> what
    it reads from the code's declarations rather than params.yaml (`dag.Job.declared`); `wings`:
    `(*args)` -> the wings whose code a stage of no experiment loads (one of an experiment loads
    its paper's, and with `builds_schemes` the wings of its curves' schemes).
    The Snakemake rules (`snakemake_rules`): `rules`: their names, one per number of arguments
    given, all first (default: the stage's name); `per_job`: a rule per job, where the outputs
    vary in number between jobs; `report`: its report items; `constraints`: `()` -> wildcard
    constraints beyond the shared ones (workflow/rules/common.smk)."""

    name: str
    help: str
    args: tuple[Arg, ...]
    outputs: Callable[..., list[Path]]
    knobs: tuple[str, ...]
    run: str
    view: Callable[..., Any] | None = None
    light: bool = False
    expand: Callable[..., Iterable[tuple[str, ...]]] | None = None
    inputs: Callable[..., list[str]] | None = None
    plots: Callable[..., list[Plot]] | None = None
    metrics: Callable[..., list[str]] | None = None
    declared: Callable[..., dict[str, Any]] | None = None
    wings: Callable[..., tuple[str, ...]] | None = None
    builds_schemes: bool = False
    rules: tuple[str, ...] = ()
    per_job: bool = False
    report: Report | None = None
    constraints: Callable[[], dict[str, str]] | None = None

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

    @property
    def scope(self) -> str:
        """"curve", "experiment" (a stage with a view of an experiment's block) or "global"."""
        return "global" if self.view is None else "curve" if self.per_curve else "experiment"

    def job_args(self, ctx: Context, *within: Any) -> list[tuple[str, ...]]:
        """The arguments of its jobs (`expand`) for `within`: nothing, an experiment, or an
        experiment and one of its curves (`scope`)."""
        if self.expand is not None:
            return [tuple(a) for a in self.expand(ctx, *within)]
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


# ---- which jobs each stage has and what they read (`dag.jobs`, the rules) -------------------
def _experiment(experiment_id: str) -> Any:
    from airfl.pipeline.registry import get_experiment

    return get_experiment(experiment_id)


def _manifest(ctx: Context, experiment: Any) -> list[str]:
    return [str(paths.dataset_manifest(ctx.block(experiment)["dataset"]))]


def _reference(experiment: Any) -> list[str]:
    return [str(paths.reference(experiment.reference.name, "json"))] if experiment.reference \
        else []


def _tuning(ctx: Context, experiment: Any, curve: str) -> list[str]:
    from airfl.pipeline.tuning import tuning_file

    source = tuning_file(experiment, ctx.block(experiment), curve)
    return [] if source is None else [str(source)]


def _derived(ctx: Context, experiment: Any, curve: str) -> list[str]:
    """The derivation JSONs (stage `derive`) whose parameters the curve's jobs read."""
    return [str(paths.derived(experiment.id, d.name))
            for d in experiment.derivations_of(curve, ctx.block(experiment)["curves"])]


def _datasets(ctx: Context) -> list[tuple[str]]:
    from airfl.pipeline.registry import active_experiments

    return [(d,) for d in sorted({ctx.block(e)["dataset"]
                                  for e in active_experiments(ctx.params)})]


def _references(ctx: Context) -> list[tuple[str]]:
    from airfl.pipeline.registry import active_experiments

    return [(name,) for name in sorted({e.reference.name for e in active_experiments(ctx.params)
                                        if e.reference})]


def _reference_inputs(ctx: Context, name: str) -> list[str]:
    from airfl.pipeline.registry import get_reference

    return [str(paths.dataset_manifest(get_reference(name).dataset))]


def _reference_owner(name: str) -> tuple[str, ...]:
    from airfl.pipeline.registry import all_experiments

    (owner,) = {e.paper for e in all_experiments()
                if e.reference is not None and e.reference.name == name}
    return (owner,)


def _partition_inputs(ctx: Context, experiment_id: str) -> list[str]:
    return _manifest(ctx, _experiment(experiment_id))


def _calibrations(ctx: Context, experiment: Any) -> list[tuple[str]]:
    return [(experiment.id,)] if experiment.calibration else []


def _calibrate_inputs(ctx: Context, experiment_id: str) -> list[str]:
    return [*_manifest(ctx, _experiment(experiment_id)), str(paths.partition(experiment_id))]


def _tunes(ctx: Context, experiment: Any, curve: str) -> list[tuple[str, str]]:
    from airfl.pipeline.tuning import tuned_curves

    return [(experiment.id, curve)] if curve in tuned_curves(experiment, ctx.block(experiment)) \
        else []


def _tune_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    experiment = _experiment(experiment_id)
    return [*_manifest(ctx, experiment), str(paths.partition(experiment_id)),
            *_reference(experiment)]


def _derivations(ctx: Context, experiment: Any) -> list[tuple[str, str]]:
    return [(experiment.id, d.name)
            for d in experiment.active_derivations(ctx.block(experiment)["curves"])]


def _derive_inputs(ctx: Context, experiment_id: str, name: str) -> list[str]:
    """The designs, run records and run tables of the derivation's source curves."""
    experiment = _experiment(experiment_id)
    sources, _ = experiment.derivation(name).resolve(ctx.block(experiment)["curves"])
    return [str(p) for c in sources
            for p in (paths.design(experiment_id, c), paths.run_records(experiment_id, c),
                      paths.run_table(experiment_id, c))]


def _design_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    experiment = _experiment(experiment_id)
    return [str(paths.partition(experiment_id)), *_reference(experiment),
            *_tuning(ctx, experiment, curve), *_derived(ctx, experiment, curve)]


def _train_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    experiment = _experiment(experiment_id)
    calibration = [str(paths.calibration(experiment_id))] if experiment.calibration else []
    return [*_manifest(ctx, experiment), str(paths.partition(experiment_id)),
            str(paths.design(experiment_id, curve)), *_reference(experiment),
            *_tuning(ctx, experiment, curve), *calibration, *_derived(ctx, experiment, curve)]


def _train_declared(ctx: Context, experiment_id: str, curve: str) -> dict[str, Any]:
    """The rounds the curve's readers evaluate (`Experiment.evaluation`)."""
    experiment = _experiment(experiment_id)
    return {"evaluation": experiment.evaluation(curve, ctx.block(experiment)["curves"])}


def _private(ctx: Context, experiment: Any, curve: str) -> list[tuple[str, str]]:
    return [(experiment.id, curve)] if experiment.privacy else []


def _privacy_inputs(ctx: Context, experiment_id: str, curve: str) -> list[str]:
    return [str(paths.run_records(experiment_id, curve))]


def _figure_inputs(ctx: Context, experiment_id: str) -> list[str]:
    """The run tables, the privacy accounts (a private experiment) and the reference."""
    experiment = _experiment(experiment_id)
    curves = list(experiment.curves(ctx.params))
    return [str(paths.run_table(experiment_id, c)) for c in curves] + \
        [str(paths.privacy(experiment_id, c)) for c in curves if experiment.privacy] + \
        _reference(experiment)


def _figure_plots(ctx: Context, experiment_id: str) -> list[Plot]:
    """Each panel's CSV with its own axes, in the order of `figure_names`."""
    experiment = _experiment(experiment_id)
    csvs = [str(p) for p in _figure_files(experiment_id)[:-1] if p.suffix == ".csv"]
    specs = (experiment.figure_spec, *experiment.extra_figures)
    return [figure_plot(csv, spec, experiment) for csv, spec in zip(csvs, specs, strict=True)]


def _figure_caption(ctx: Context, experiment_id: str) -> str:
    from airfl.pipeline.artifacts import caption, rst_text

    return rst_text(caption(ctx.params, _experiment(experiment_id)))   # literal text in the RST


def _analytic_figures(ctx: Context) -> list[tuple[str]]:
    from airfl.pipeline.registry import all_analytic

    return [(f.id,) for f in all_analytic()]


def _analytic_paper(figure_id: str) -> tuple[str, ...]:
    from airfl.pipeline.registry import get_analytic

    return (get_analytic(figure_id).paper,)


def _analytic_plots(ctx: Context, figure_id: str) -> list[Plot]:
    """The CSV, its panels drawn on one scale (log only when every panel is)."""
    from airfl.pipeline import dvc_plots
    from airfl.pipeline.registry import get_analytic

    figure = get_analytic(figure_id)
    logy = all(panel.logy for panel in figure.panels)
    return [dvc_plots.Plot(str(paths.figure(figure_id, "csv")), "x", "value", figure.title, figure.xlabel,
                 " | ".join(panel.ylabel for panel in figure.panels),
                 dvc_plots.template_name("panels", figure.logx, logy))]


def _analytic_caption(ctx: Context, figure_id: str) -> str:
    from airfl.pipeline.artifacts import analytic_caption, rst_text
    from airfl.pipeline.registry import get_analytic

    return rst_text(analytic_caption(ctx.params, get_analytic(figure_id)))


def _analytic_constraints() -> dict[str, str]:
    """{name}: an analytic figure's name, only inside its own paper's folder."""
    from airfl.pipeline.registry import all_analytic

    return {"name": named_in_paper(f.id for f in all_analytic())}


def _audits(ctx: Context | None = None) -> list[tuple[str, str]]:
    from airfl.pipeline.registry import wings

    return [(wing.name, name) for wing in wings() for name in sorted(wing.audits)]


def _audit_plots(ctx: Context, wing: str, mechanism: str) -> list[Plot]:
    from airfl.pipeline import dvc_plots

    return [dvc_plots.Plot(str(paths.audit_figure(wing, mechanism, "csv")), "eps_audited_lower", "label",
                 f"{wing}: {mechanism} (audit)", "epsilon", "mechanism",
                 dvc_plots.template_name("audit"))]


def _audit_constraints() -> dict[str, str]:
    audits = _audits()
    return {"paper": one_of({w for w, _ in audits}), "mechanism": one_of({m for _, m in audits})}


def _claims(ctx: Context) -> list[tuple[str, ...]]:
    from airfl.pipeline.registry import papers

    return [(paper,) for paper in papers()] + [()]


def _claims_inputs(ctx: Context, paper: str | None = None) -> list[str]:
    """One paper's: the CSVs its claims are checked on; every paper's: the papers' rows and
    the audits of the wings without figures."""
    from airfl.pipeline.registry import papers, wings

    if paper is not None:
        return claim_inputs(paper, ctx.params)
    return [str(paths.claims_rows(p)) for p in papers()] + \
        audit_json({w.name for w in wings() if not w.catalogue})


def _claims_constraints() -> dict[str, str]:
    from airfl.pipeline.registry import papers

    return {"paper": one_of(papers())}


def figure_plot(csv: str, spec: Any, experiment: Any) -> Plot:
    """A figure CSV as `dvc plots` draws it: the axes of its panel (`FigureSpec`)."""
    from airfl.pipeline import dvc_plots

    return dvc_plots.Plot(csv, spec.x, spec.y, spec.title or experiment.title, spec.xlabel, spec.ylabel,
                dvc_plots.template_name("lines", spec.logx, spec.logy))


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
            for p in _figure_files(e.id) if p.suffix == ".csv"] + \
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


_EXPERIMENT = Arg("experiment", "experiment id, e.g. biased_fl/fig2a (`airfl list` names them)",
                  pattern="{paper}/{figure}")
_CURVE = Arg("curve", "curve of the experiment (`airfl list` names them)")
_STAGES = "airfl.pipeline.stages"
_FIGURE = "figure.rst"

# In the order of `airfl --help` and of dvc.yaml's jobs (module docstring).
STAGES: tuple[Stage, ...] = (
    Stage("data", "fetch and md5-check a dataset into data/ (or copy it from the mirror)",
          (Arg("dataset", "mnist, fashion_mnist, cifar10 or cifar100"),),
          lambda dataset: [paths.dataset_manifest(dataset)],
          ("data.root", "data.mirror", "data.download"), f"{_STAGES}.data:run",
          expand=_datasets),
    Stage("reference", "a paper's reference optimum and data constants (e.g. biased_fl)",
          (Arg("name", "the reference's name, e.g. biased_fl"),),
          lambda name: [paths.reference(name, "npz"), paths.reference(name, "json")],
          ("seed", "profile", "data.root"), f"{_STAGES}.reference:run",
          expand=_references, inputs=_reference_inputs, wings=_reference_owner),
    Stage("partition", "partition an experiment's training data over its devices", (_EXPERIMENT,),
          lambda e: [paths.partition(e), paths.partition_summary(e), paths.partition_heatmap(e)],
          ("seed", "data.root"), f"{_STAGES}.partition:run", view=partition_view,
          inputs=_partition_inputs, report=Report("partition.rst")),
    Stage("calibrate", "an experiment's calibration at theta_0 (e.g. CDPB's clipping norm)",
          (_EXPERIMENT,), lambda e: [paths.calibration(e)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.calibrate:run",
          view=calibrate_view, expand=_calibrations, inputs=_calibrate_inputs,
          builds_schemes=True),
    Stage("derive", "a step between trainings: parameters of some curves from other curves' "
          "stored runs (e.g. LAPA's DDPG power control)",
          (_EXPERIMENT, Arg("derivation", "the experiment's derivation, e.g. ddpg",
                            pattern="{name}")),
          lambda e, name: [paths.derived(e, name, s) for s in ("json", "csv", "npz")],
          ("seed", "profile", "threads"), f"{_STAGES}.derive:run", view=derive_view,
          expand=_derivations, inputs=_derive_inputs),
    Stage("tune", "search a curve's step size (and baseline parameters) on selection trials",
          (_EXPERIMENT, _CURVE), lambda e, c: [paths.tuning(e, c)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.tune:run",
          view=curve_view, expand=_tunes, inputs=_tune_inputs, builds_schemes=True),
    Stage("design", "solve the designs of a curve's trials before training", (_EXPERIMENT, _CURVE),
          lambda e, c: [paths.design(e, c)], ("seed", "profile"), f"{_STAGES}.design:run",
          view=curve_view, inputs=_design_inputs, builds_schemes=True),
    Stage("train", "train every trial of one curve (results/runs/)", (_EXPERIMENT, _CURVE),
          lambda e, c: [paths.run_table(e, c), paths.run_records(e, c), paths.run_info(e, c)],
          ("seed", "profile", "device", "threads", "data.root"), f"{_STAGES}.train:run",
          view=train_view, inputs=_train_inputs, declared=_train_declared, builds_schemes=True),
    Stage("privacy", "account a trained curve's privacy per round (results/privacy/)",
          (_EXPERIMENT, _CURVE), lambda e, c: [paths.privacy(e, c)],
          ("privacy.delta",),          # the run's records carry the rest (a curve's own delta)
          f"{_STAGES}.privacy:run", view=privacy_view, light=True, expand=_private,
          inputs=_privacy_inputs, wings=lambda *_: ()),
    Stage("figure", "draw an experiment's figures from its stored runs", (_EXPERIMENT,),
          _figure_files, ("seed", "profile"), f"{_STAGES}.figure:run", view=figure_view,
          inputs=_figure_inputs, plots=_figure_plots,
          metrics=lambda e: [str(paths.summary(e))], per_job=True,   # panels vary in number
          report=Report(_FIGURE, text=_figure_caption)),
    Stage("analytic", "compute and draw an analytic figure (formulas only)",
          (Arg("experiment", "analytic figure id, e.g. cdpb/fig3", pattern="{paper}/{name}"),),
          lambda f: [*(paths.figure(f, s) for s in ("csv", "png", "pdf")), paths.analytic(f)],
          ("profile",), f"{_STAGES}.analytic:run", expand=_analytic_figures,
          plots=_analytic_plots, wings=_analytic_paper, rules=("analytic_figure",),
          report=Report(_FIGURE, text=_analytic_caption), constraints=_analytic_constraints),
    Stage("audit", "audit a registered DP mechanism: a lower bound on its epsilon "
          "(results/audit/)",
          (Arg("paper", "the wing that registers it (e.g. cdpb, generic)"),
           Arg("mechanism", "the mechanism's name (params.yaml audit.<wing>)")),
          lambda w, m: [paths.audit(w, m), *(paths.audit_figure(w, m, s)
                                             for s in ("csv", "png", "pdf"))],
          ("seed", "profile", "audit.draws", "audit.loop_draws", "audit.alpha"),
          f"{_STAGES}.audit:run", expand=_audits, plots=_audit_plots,
          metrics=lambda w, m: [str(paths.audit(w, m))], wings=lambda w, m: (w,),
          rules=("audit_mechanism",), report=Report(_FIGURE), constraints=_audit_constraints),
    Stage("claims", "evaluate one paper's claims (figures/<paper>/CLAIMS.md), or with no paper "
          "collect every paper's into figures/CLAIMS.md",
          (Arg("paper", "a paper with figures, e.g. cdpb", optional=True),),
          _claims_files, ("seed", "profile"), f"{_STAGES}.claims:run", expand=_claims,
          inputs=_claims_inputs, metrics=lambda *p: [str(paths.claims_metrics(*p))],
          wings=lambda *p: tuple(p), rules=("paper_claims", "claims"),
          report=Report("claims.rst", ".md", category=lambda *_: "claims",
                        subcategory=lambda _, *p: p[0] if p else None),
          constraints=_claims_constraints),
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
