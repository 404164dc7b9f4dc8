"""The types a wing declares its figures with: Experiment (one figure's worth of training runs),
FigureSpec, Claim, Reference, and AnalyticFigure (a figure from formulas alone).

Wings list them in their catalogue module (EXPERIMENTS, ANALYTIC); the pipeline's registry
(airfl.pipeline.registry) collects them from every installed wing and expands them into jobs.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from airfl.params.config import experiment_params, get_dotted


HOLDS, CONTRADICTED, EQUIVALENT, INCONCLUSIVE, NOT_APPLICABLE = (
    "holds", "contradicted", "equivalent", "inconclusive", "n/a")
VERDICTS = (HOLDS, CONTRADICTED, EQUIVALENT, INCONCLUSIVE, NOT_APPLICABLE)
TRAINING_METRICS = ("train_loss", "train_accuracy")
"""The run-table columns measured on the training subset (`scale.train_eval_subset`): a run
measures them only where a panel drawing the curve, or a derivation reading its run table,
declares one (`Experiment.measures_training`); without them its run table has no such column."""
"""A claim's verdicts, as CLAIMS.md prints them. For a claim on a random quantity (a value that
changes with the trial's draws) they come from the paired 95 % interval over trials and the
claim's declared equivalence margin (`airfl.core.claims`): holds (the interval excludes 0 on the
claimed side), contradicted (on the other side), equivalent (inside +-margin, or below the
numerical resolution), inconclusive (none of these: the trials cannot decide); n/a: the claim
does not apply to this run. A deterministic claim (analytic formulas, a bound that holds by
construction) is holds or contradicted."""


@dataclass(frozen=True)
class ClaimResult:
    """One claim's outcome. `holds`: True holds, False contradicted, None neither: then
    `undecided` says which (equivalent or inconclusive), or, when it is None too, the claim does
    not apply (n/a). `reason`: one line with the numbers that decide the verdict (CLAIMS.md's
    summary of what fails and why); empty: `numbers` is that line.

    `trials` and `trials_to_decide`, where the claim is built from comparisons over trials
    (`airfl.core.claims`): the trials its comparisons had, and for an inconclusive claim how many
    trials would decide it if the observed differences and spreads were the true ones
    (`airfl.core.claims.PairedDifference.trials_to_decide`: 80 % power at the 95 % level; inf when
    no number up to `airfl.core.claim_power.MAX_TRIALS` would). None: not computed (a claim not built from
    such comparisons, or one with a single trial, whose spread is unknown)."""

    holds: bool | None
    numbers: str                      # our numbers, human-readable
    undecided: str | None = None      # EQUIVALENT or INCONCLUSIVE when holds is None
    reason: str = ""
    trials: int | None = None
    trials_to_decide: float | None = None

    def __post_init__(self):
        if self.undecided not in (None, EQUIVALENT, INCONCLUSIVE):
            raise ValueError(f"ClaimResult.undecided: {self.undecided!r}; allowed: "
                             f"{EQUIVALENT!r}, {INCONCLUSIVE!r} or None")
        if self.undecided is not None and self.holds is not None:
            raise ValueError(f"ClaimResult: holds={self.holds!r} with undecided="
                             f"{self.undecided!r}; a verdict is one of them")

    @classmethod
    def of(cls, verdict: str, numbers: str, reason: str = "", trials: int | None = None,
           trials_to_decide: float | None = None) -> "ClaimResult":
        """The result with this verdict (one of VERDICTS); `trials_to_decide` is kept for an
        inconclusive verdict only (a decided claim needs no more trials)."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict {verdict!r}; allowed: {', '.join(VERDICTS)}")
        holds = {HOLDS: True, CONTRADICTED: False}.get(verdict)
        undecided = verdict if verdict in (EQUIVALENT, INCONCLUSIVE) else None
        return cls(holds, numbers, undecided, reason, trials,
                   trials_to_decide if verdict == INCONCLUSIVE else None)

    @property
    def verdict(self) -> str:
        """One of VERDICTS, as CLAIMS.md prints it."""
        if self.undecided is not None:
            return self.undecided
        return NOT_APPLICABLE if self.holds is None else HOLDS if self.holds else CONTRADICTED

    @property
    def why(self) -> str:
        """The one-line reason: `reason`, else the numbers."""
        return self.reason or self.numbers


@dataclass(frozen=True)
class Claim:
    """A checkable statement from a paper about one figure, evaluated on the figure's CSV."""

    name: str
    statement: str                    # the paper's words, paraphrased
    evaluate: Callable[[pd.DataFrame], ClaimResult]
    panel: str | tuple[str, ...] | None = None  # the figure(s) (file stems) it is checked on;
    # several: their CSVs concatenated with a `figure` column naming the stem


@dataclass(frozen=True)
class FigureSpec:
    """What the figure stage draws: y against x, one line per curve label, mean and band over trials.

    `name`: the figure's file stem (default: the experiment's figure name), so that one
    experiment's runs can feed several panels. `time_grid_s`: resample every trial onto a common
    time grid (step-hold: the value after the last round completed by each grid time) before
    averaging, for schemes whose rounds take random time. `final`: plot each curve's value at its
    last evaluation against `x`, a curve parameter (e.g. an SNR offset), one line per label;
    `final_rounds_back`: with `final`, the value that many rounds before the last instead (1:
    the model before the last round's update, for comparisons with code that evaluates there).
    """

    x: str
    y: str
    xlabel: str
    ylabel: str
    logy: bool = False
    name: str | None = None
    time_grid_s: float | None = None
    final: bool = False
    final_rounds_back: int = 0        # with `final`: that many rounds before the last
    title: str | None = None          # default: the experiment's title
    curves: Callable[[str, dict[str, Any]], bool] | None = None  # which curves it draws (all)
    markers: tuple[tuple[str, str], ...] = ()  # (run-table column, legend): mean as a vertical line
    label: Callable[[str, dict[str, Any]], str] | None = None  # legend per curve in this panel
    logx: bool = False
    columns: tuple[str, ...] = ()     # more run-table columns its CSV carries (for its claims)

    def reads(self) -> tuple[str, ...]:
        """The run-table columns this panel's CSV carries beyond the test metrics: what it
        draws (x, y), its markers and `columns` (what its claims read). A training metric
        (`TRAINING_METRICS`) is measured for a curve only where a panel drawing it reads one
        (`Experiment.measures_training`)."""
        return tuple(dict.fromkeys([self.x, self.y, *(c for c, _ in self.markers),
                                    *self.columns]))


@dataclass(frozen=True)
class Table:
    """A table the figure stage writes beside an experiment's panels, from the same stored
    frame (every curve's evaluated rows, with their labels, privacy columns and numeric curve
    parameters `param_<key>`): figures/<paper>/<name>.csv and the same rows as a Markdown table
    (.md, under `title`), e.g. a leaderboard ranking the curves. `build(frame, curves)` returns
    the rows (`curves`: the composed block's curves with all their parameters); `note`: a
    paragraph printed under the Markdown table (what the columns mean). `audits`: the table also
    shows the privacy audits its wing registers: the figure job then depends on them and `build`
    gets their stored points as a third argument (a list of the audit stage's point dicts).
    `running_sums`: per-round run-table columns `build` reads as their running sum over each
    trial's rounds (the value on an evaluated row: the sum up to its round, e.g. a privacy
    budget spent per round, composed by basic composition); in its frame only, no panel's CSV
    carries them."""

    name: str
    title: str
    build: Callable[..., pd.DataFrame]
    note: str = ""
    audits: bool = False
    running_sums: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reference:
    """A per-paper precomputation every experiment of the paper reads (e.g. the exact optimum w*
    and the data constants of Biased FL): one DAG node, results/reference/<name>.{npz,json}."""

    name: str
    config_keys: tuple[str, ...]      # params.yaml keys it depends on
    dataset: str
    compute: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]  # -> arrays, json


@dataclass(frozen=True)
class Derivation:
    """A step between two trainings of one experiment (stage `derive`): from the stored designs,
    run records and run tables of some curves (`sources`) to parameters of other curves
    (`targets`), e.g. a power allocation learnt on a pilot run's budget trajectory, or a step
    size calibrated on a few runs. `compute(params, block, inputs)` gets
    `inputs[curve] = {"design": ..., "records": ..., "table": DataFrame}` for every source and
    returns {"params": {target: {...}}, "report": {...}, "table": DataFrame, "arrays": {...}},
    stored as results/derived/<experiment>/<name>.json (params and report), .csv and .npz.

    Sources and targets are curve names or glob patterns over the experiment's curves of the
    profile (`resolve`); the target "*" is every curve that is not a source. A derivation whose
    source pattern matches no curve does not run in that profile, and its targets train with
    their own parameters (e.g. a calibration the quick profile skips)."""

    name: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    compute: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]
    # sources read only where the composed block holds them (a profile that runs a pilot the
    # other skips, e.g. LAPA's Pilot B: paper profile only; quick rescales Pilot A's trajectory)
    optional: tuple[str, ...] = ()
    # run-table columns `compute` reads from its sources' tables beyond the test metrics (a
    # training metric here makes the sources measure it: `Experiment.measures_training`)
    reads: tuple[str, ...] = ()

    def resolve(self, curves) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(sources, targets) among `curves` (names, in their order), or None when the
        derivation does not run in this profile: a required source pattern matches none of them
        (e.g. OTA-FD's eta_0 calibration runs, paper profile only) or no target is left (e.g.
        LAPA's Pilot B level where Pilot B does not run). An `optional` source is read only
        where it matches (LAPA's Pilot B: the quick profile skips it)."""
        names = list(curves)
        found = [[c for c in names if fnmatch.fnmatchcase(c, p)] for p in self.sources]
        if not all(group or p in self.optional for p, group in zip(self.sources, found)):
            return None
        sources = tuple(dict.fromkeys(c for group in found for c in group))
        targets = tuple(c for c in names if c not in sources and any(
            fnmatch.fnmatchcase(c, p) for p in self.targets))
        return (sources, targets) if targets else None


@dataclass(frozen=True)
class Experiment:
    """One figure's worth of runs. Its resolved block (`params()`) has the generic layout the
    stages read (dataset, num_devices, partition, model, training, channel, scale, curves);
    a wing whose panels share sections composes it with `compose`. The params.yaml keys each
    job depends on are derived from `params()` by perturbation (pipeline.param_deps), so an
    experiment lists none; `shared_keys` names only the sections its `derivations` read as
    params.yaml writes them (the derive job's view; e.g. LAPA's DDPG reads lapa.control, which
    the composed block leaves out)."""

    paper: str
    figure: str
    config_key: str                   # dotted key of the experiment's block in params.yaml
    title: str
    description: str                  # what the figure shows (caption's first sentence)
    figure_spec: FigureSpec
    claims: tuple[Claim, ...] = field(default_factory=tuple)
    label: Callable[[str, dict[str, Any]], str] | None = None   # curve id, curve params -> legend
    compose: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    shared_keys: tuple[str, ...] = ()
    reference: Reference | None = None
    extra_figures: tuple[FigureSpec, ...] = ()   # more panels drawn from the same runs
    tables: tuple[Table, ...] = ()    # tables written beside the panels (figure stage)
    tuning_lead: Callable[[str], str] | None = None  # curve whose tuned eta a curve shares
    privacy: bool = True              # False: the paper accounts no privacy (no privacy jobs)
    tuning_source: str | None = None  # experiment whose tuned step sizes it reuses (no search)
    # clients' upload norms at theta_0 (one noise-free round, trial 0) -> parameters every curve
    # trains with (stage `calibrate`, results/calibration/<id>.json); None: no calibration
    calibration: Callable[[Any], dict[str, Any]] | None = None
    # the trial's round loop, `airfl.core.loop.run_trial` when None: papers whose devices keep
    # their own models (federated distillation) bring theirs, same signature and table layout
    trainer: Callable[..., Any] | None = None
    # steps between trainings (stage `derive`): parameters of some curves from others' runs
    derivations: tuple[Derivation, ...] = ()
    # curve parameters that only choose the panels drawing a curve and where (tags such as
    # `in_fig3`, a figure-only x value): no stage before the figure reads them, so a grid that
    # re-tags curves reruns the figure alone, in DVC as in Snakemake
    panel_keys: tuple[str, ...] = ()
    # whether the experiment runs under these params (e.g. a panel list per profile: LAPA's
    # Fig. 6 mixes); None: always. `registry.active_experiments` filters by it
    enabled: Callable[[dict[str, Any]], bool] | None = None

    @property
    def id(self) -> str:
        return f"{self.paper}/{self.figure}"

    def active_derivations(self, curves) -> tuple[Derivation, ...]:
        """The derivations that run with these curves (every source pattern matches one)."""
        return tuple(d for d in self.derivations if d.resolve(curves) is not None)

    def derivations_of(self, curve: str, curves) -> tuple[Derivation, ...]:
        """The derivations whose parameters a curve trains with (its design and train jobs
        wait for them), among the experiment's `curves` of the profile."""
        return tuple(d for d in self.active_derivations(curves) if curve in d.resolve(curves)[1])

    def is_enabled(self, params: dict[str, Any]) -> bool:
        return self.enabled is None or bool(self.enabled(params))

    def derivation(self, name: str) -> Derivation:
        for d in self.derivations:
            if d.name == name:
                return d
        raise KeyError(f"experiment {self.id} has no derivation {name!r}; it has: "
                       + ", ".join(d.name for d in self.derivations))

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.compose is not None:
            return self.compose(params)
        return experiment_params(params, self.config_key)

    def curves(self, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return self.params(params)["curves"]

    def run_curve(self, curve_params: dict[str, Any]) -> dict[str, Any]:
        """A curve's parameters as its runs read them: without the panel keys."""
        return {k: v for k, v in curve_params.items() if k not in self.panel_keys}

    def evaluation(self, curve: str, curves: dict[str, dict[str, Any]]) -> str:
        """The rounds at which `curve`'s runs are evaluated, as its readers declare them:
        "final" (round 0 and the last round only) when every panel that draws the curve
        reads only its last evaluation (`FigureSpec.final`) and no derivation reads its run
        table; "final-k" (round 0 and the last k + 1 rounds) when such a panel reads the value
        k rounds before the last (`final_rounds_back`, e.g. theta^(T-1)); "schedule" (the
        scale's `eval_every` / `eval_every_s`) otherwise. `curves`:
        the composed block's curves (a panel's `curves` filter reads their panel keys).
        Claims read the panels' CSVs, so the panels declare what they read too."""
        if any(curve in d.resolve(curves)[0] for d in self.active_derivations(curves)):
            return "schedule"
        back = 0
        for spec in (self.figure_spec, *self.extra_figures):
            if spec.curves is None or bool(spec.curves(curve, curves[curve])):
                if not spec.final:
                    return "schedule"
                back = max(back, spec.final_rounds_back)
        return f"final-{back}" if back else "final"

    def measures_training(self, curve: str, curves: dict[str, dict[str, Any]]) -> bool:
        """Whether `curve`'s runs measure the training metrics (`TRAINING_METRICS`, on the
        `scale.train_eval_subset` training samples), as their readers declare it: a panel that
        draws the curve reads one (`FigureSpec.reads`: x, y, markers or `columns`, the
        columns its claims read; claims read the panels' CSVs), or a derivation reads one from
        its run table (`Derivation.reads`). Otherwise the run skips the subset's draw and its
        evaluation, and its run table has no training columns: no figure, claim or derivation
        reads them (an exact saving: every other stream is keyed by its own name)."""
        def reads_training(columns) -> bool:
            return any(c in TRAINING_METRICS for c in columns)

        if any(reads_training(d.reads) and curve in d.resolve(curves)[0]
               for d in self.active_derivations(curves)):
            return True
        return any(reads_training(spec.reads())
                   for spec in (self.figure_spec, *self.extra_figures)
                   if spec.curves is None or bool(spec.curves(curve, curves[curve])))

    def curve_label(self, curve: str, curve_params: dict[str, Any]) -> str | None:
        """The experiment's legend for a curve; None where it names none (no `label`, or the
        label function returns None: e.g. a scheme of another wing), so that the pipeline
        uses the label the scheme's wing declares (`registry.curve_legend`)."""
        return self.label(curve, curve_params) if self.label else None


def measured_metrics(training: bool) -> dict[str, Any]:
    """What a train job records of the metrics it measures beyond the test metrics
    (`Experiment.measures_training`), in its provenance and in its job's declared values:
    nothing where it measures the training metrics too (as every run did before they were
    declared, so such a run's records stay as they were), `training_metrics: false` where
    not (a panel that starts reading them reruns the job)."""
    return {} if training else {"training_metrics": False}


def final_rounds_back(evaluation: str) -> int:
    """How many rounds before the last an `Experiment.evaluation` also evaluates ("final-k": k;
    "final" and "schedule": 0)."""
    return int(evaluation.split("-", 1)[1]) if evaluation.startswith("final-") else 0


@dataclass(frozen=True)
class Panel:
    """One subplot of an analytic figure: one metric of its tidy frame against x."""

    metric: str
    ylabel: str
    logy: bool = False


AnalyticClaim = tuple[str, str, str, bool | None]  # claim id, the paper's words, our numbers,
# holds (a formula's claim is deterministic: holds or contradicted; None: reported, n/a)


@dataclass(frozen=True)
class AnalyticFigure:
    """A figure computed from a paper's formulas alone (no training). `compute` takes the
    figure's params block and returns a tidy frame with columns x, scheme, metric, value (its
    `attrs` are stored beside it); `check` evaluates the paper's claims on the stored frame."""

    paper: str
    figure: str
    config_key: str                   # dotted key of its params block (the wing's analytic block)
    title: str
    description: str
    xlabel: str
    panels: tuple[Panel, ...]
    compute: Callable[[dict[str, Any]], pd.DataFrame]
    check: Callable[[pd.DataFrame], list[AnalyticClaim]] | None = None
    label: Callable[[str], str] | None = None   # scheme id -> legend name
    logx: bool = False

    @property
    def id(self) -> str:
        return f"{self.paper}/{self.figure}"

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        return dict(get_dotted(params, self.config_key))

    def scheme_label(self, scheme: str) -> str:
        return self.label(scheme) if self.label else scheme
