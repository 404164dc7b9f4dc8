"""Stage `figure`: draw an experiment's figures from stored runs only; write what is drawn as CSV.

Derived metrics come from the paper's reference (when the experiment has one): the
sub-optimality gap F(w_t) - F(w*) and the accuracy normalised by the accuracy of w*. Also writes
the experiment's summary (final mean and s.d. over trials per curve; DVC metrics).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from airfl.core.experiments import TRAINING_METRICS, Experiment, FigureSpec
from airfl.runtime.io import (ArtifactError, json_form, read_json, read_table, write_csv,
                              write_json, write_text)
from airfl.pipeline import paths
from airfl.pipeline.artifacts import (caption, figure_id, made_with, paper_scale,
                                      substitution, with_colours)
from airfl.pipeline.partitioning import partition_setting
from airfl.pipeline.registry import curve_legend, get_experiment, with_local_lr
from airfl.figures.plotting import line_plot, save_figure
from airfl.pipeline.stages import StageError
from airfl.pipeline.stage_params import declared


# The privacy stage's columns a figure carries: the paper's bound and the mechanism as
# simulated (empty where not computed yet), named for what they hold.
EPSILONS = ("epsilon_paper", "epsilon_simulated")


def stale_runs(params: dict[str, Any], experiment: Experiment, curves: dict[str, dict[str, Any]]
               ) -> list[str]:
    """Each curve whose run was made with other parameters than the current ones (seed,
    profile, the experiment's settings or the curve's own, as params.yaml states them): a
    figure drawn from it would claim parameters it does not show."""
    block = experiment.params(params)
    current = json_form({"seed": params["seed"], "profile": params["profile"],
                          "experiment": {k: v for k, v in block.items() if k != "curves"}})
    stale = []
    for curve in curves:
        made = read_json(paths.run_info(experiment.id, curve))["provenance"]["params"]
        wanted = {**current,
                  "declared_curve": json_form(experiment.run_curve(block["curves"][curve]))}
        differs = [key for key, value in wanted.items()     # runs older than this check
                   if (key in made or key != "declared_curve") and made.get(key) != value]
        if differs:
            stale.append(f"{curve} ({', '.join(differs)})")
    return stale


def run_table(experiment_id: str, curve: str, trials: int) -> pd.DataFrame:
    """A curve's stored runs, checked (airfl.runtime.io.read_table) and holding every trial of the
    scale: a table that lost whole trials (cut at a line end) is removed like a garbled one,
    never drawn as if it were complete. The last round is not checked: some runs stop early
    (Biased FL stops at its target gap)."""
    path = paths.run_table(experiment_id, curve)
    runs = read_table(path, ("trial", "round", "test_accuracy"))
    found = sorted(int(t) for t in runs["trial"].dropna().unique())
    if found != list(range(trials)):
        path.unlink(missing_ok=True)
        raise ArtifactError(f"{path} holds trials {found}, not the {trials} of the scale; removed "
                            f"it, so that the next run rebuilds it (`snakemake {path}` if "
                            "Snakemake finds nothing to do)")
    return runs


def _curve_frame(experiment: Experiment, curve: str, curve_params: dict[str, Any],
                 extra: tuple[str, ...] = (), trials: int = 1,
                 running: tuple[str, ...] = ()) -> pd.DataFrame:
    """The curve's evaluated rows; `running`: per-round columns replaced by their running sum
    over each trial's rounds (`Table.running_sums`), taken before the unevaluated rounds go."""
    runs = run_table(experiment.id, curve, trials).sort_values(["trial", "round"], kind="stable")
    for column in running:
        if column in runs:
            runs[column] = runs.groupby("trial")[column].cumsum()
    if experiment.privacy:
        eps = read_table(paths.privacy(experiment.id, curve), ("trial", "round", *EPSILONS))
        runs = runs.merge(eps[["trial", "round", *EPSILONS]], on=["trial", "round"], how="left")
    runs = runs.dropna(subset=["test_accuracy"])
    base = curve_legend(experiment, curve, curve_params)
    label = base
    if experiment.privacy and "delta" in curve_params:   # DP curves show their final guarantee
        final_eps = eps.groupby("trial")["epsilon_paper"].last().max()
        label = f"{base} (ε = {final_eps:.3g}, δ = {curve_params['delta']:g})" \
            if math.isfinite(final_eps) else base
    columns = ["trial", "round", "time_s", "test_accuracy", "test_loss", "train_loss", "objective",
               *EPSILONS, *extra, *running]
    # a training metric the run did not measure (no panel drawing the curve reads it:
    # `Experiment.measures_training`) stays in its place, empty, so that the columns of every
    # curve line up as when all were measured; `panel_csv` keeps it only where a panel reads it
    frame = runs.reindex(columns=[c for c in dict.fromkeys(columns)
                                  if c in runs.columns or c in TRAINING_METRICS])
    for key, value in curve_params.items():          # curve parameters a figure may plot against
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            frame[f"param_{key}"] = value
    frame.insert(0, "style_key", base)
    frame.insert(0, "label", label)
    frame.insert(0, "curve", curve)
    return frame


def derive(frame: pd.DataFrame, reference: dict[str, Any] | None) -> pd.DataFrame:
    """Sub-optimality gap and normalised accuracy from the reference optimum (Biased FL, Sec. V)."""
    if reference is None:
        return frame
    frame = frame.copy()
    if "objective" in frame:
        frame["suboptimality_gap"] = frame["objective"] - reference["F_star"]
    frame["normalized_accuracy"] = frame["test_accuracy"] / reference["accuracy_star"]
    return frame


def resample(frame: pd.DataFrame, step_s: float) -> pd.DataFrame:
    """Step-hold each (curve, trial) onto the grid 0, step, ..., up to the shortest run's end."""
    horizon = frame.groupby(["curve", "trial"])["time_s"].max().min()
    grid = np.arange(0.0, horizon + 1e-12, step_s)
    pieces = []
    for (curve, trial), rows in frame.groupby(["curve", "trial"], sort=False):
        rows = rows.sort_values("time_s")
        position = np.searchsorted(rows["time_s"].to_numpy(), grid, side="right") - 1
        picked = rows.iloc[np.clip(position, 0, None)].copy()
        picked["time_s"] = grid
        pieces.append(picked)
    return pd.concat(pieces, ignore_index=True)


def finals(frame: pd.DataFrame, rounds_back: int = 0) -> pd.DataFrame:
    """Each (curve, trial)'s last evaluated row, or its row ``rounds_back`` rounds before the
    last (none where that round was not evaluated)."""
    last = frame.groupby(["curve", "trial"])["round"].transform("max")
    return frame[frame["round"] == last - rounds_back]


def panel_columns(frame: pd.DataFrame, spec: FigureSpec) -> pd.DataFrame:
    """The panel's frame without the training metrics it does not read (`FigureSpec.reads`):
    a panel's CSV carries them only where it declares them, so no claim reads a column the
    runs it draws did not measure (`Experiment.measures_training`)."""
    unread = [c for c in TRAINING_METRICS if c in frame.columns and c not in spec.reads()]
    return frame.drop(columns=unread)


def drawn_frame(frame: pd.DataFrame, spec: FigureSpec, curves: dict[str, dict[str, Any]]
                ) -> pd.DataFrame:
    if spec.curves is not None:
        frame = frame[frame["curve"].map(lambda c: bool(spec.curves(c, curves[c])))]
    if spec.label is not None:
        names = frame["curve"].map(lambda c: spec.label(c, curves[c]))
        frame = frame.assign(label=names, style_key=names)
    if spec.final:
        return finals(frame, spec.final_rounds_back)
    if spec.time_grid_s:
        return resample(frame, spec.time_grid_s)
    return frame


@declared("figure")
def run(params: dict[str, Any], experiment_id: str) -> None:
    experiment = get_experiment(experiment_id)
    curves = experiment.curves(params)
    stale = stale_runs(params, experiment, curves)
    if stale:
        raise StageError(f"{experiment_id}: runs made with other parameters than params.yaml's: "
                         f"{'; '.join(stale)}. Rerun their train stage (snakemake does when "
                         "the run is in its targets); no figure written.")
    reference = read_json(paths.reference(experiment.reference.name, "json")) \
        if experiment.reference else None
    specs = (experiment.figure_spec, *experiment.extra_figures)
    # marker columns and the run-table columns a panel draws (x or y beyond the usual ones)
    extra = tuple(dict.fromkeys([*(column for spec in specs for column, _ in spec.markers),
                                 *(c for spec in specs for c in (spec.x, spec.y)),
                                 *(c for spec in specs for c in spec.columns)]))
    # the per-round columns a table reads as running sums (its frame's, no panel CSV's)
    running = tuple(dict.fromkeys(c for table in experiment.tables for c in table.running_sums))
    if set(running) & set(extra):
        raise StageError(f"{experiment_id}: a table's running sums {sorted(set(running) & set(extra))} "
                         "are also a panel's per-round columns")
    block = experiment.params(params)
    trials = block["scale"]["trials"]                       # a run table must hold them all
    # each curve with the local step size its scheme is given (a `param_lr` column, where read)
    frame = derive(pd.concat([_curve_frame(experiment, c, with_local_lr(p, block["training"]["lr"]),
                                           extra, trials, running)
                              for c, p in curves.items()], ignore_index=True), reference)
    made = {c: read_json(paths.run_info(experiment.id, c))["provenance"]["params"]
            for c in curves}
    frame = with_setting(frame, made).assign(partition_per=partition_setting(block))  # claims
    paper = paper_scale(params, experiment)                                             # state it
    for spec in specs:
        fid = figure_id(experiment, spec)
        drawn = with_colours(panel_columns(drawn_frame(frame.drop(columns=[
            c for c in running if c in frame.columns]), spec, curves), spec))
        write_csv(paths.figure(fid, "csv"), drawn)
        runs = [made[c] for c in dict.fromkeys(drawn["curve"])]
        footer = made_with(runs, drawn.groupby("curve")["trial"].nunique().tolist(), paper)
        title = " ".join(t for t in (spec.title or experiment.title, substitution(runs)) if t)
        fig = line_plot(drawn, spec.x, spec.y, spec.xlabel, spec.ylabel, title, spec.logy,
                        markers=spec.markers, logx=spec.logx, footer=footer)
        save_figure(fig, paths.figure(fid, "png").with_suffix(""))
    for table in experiment.tables:
        rows = table.build(frame, curves, *([audit_points(experiment.paper)] if table.audits
                                            else []))
        write_csv(paths.figure(f"{experiment.paper}/{table.name}", "csv"), rows)
        write_text(paths.figure(f"{experiment.paper}/{table.name}", "md"),
                   markdown_table(rows, table.title, table.note))
    write_json(paths.summary(experiment_id), {"caption": caption(params, experiment),
                                              "final": _final_summary(frame)})


def audit_points(wing: str) -> list[dict[str, Any]]:
    """Every audited point of the wing's registered audits (results/audit/<wing>/*.json), in
    the order of their names: what a table with `audits` shows."""
    from airfl.pipeline.registry import get_wing

    return [point for name in sorted(get_wing(wing).audits)
            for point in read_json(paths.audit(wing, name))["points"]]


def markdown_table(rows: pd.DataFrame, title: str, note: str = "") -> str:
    """A table as Markdown: `title` as a heading, a pipe table of the rows (numbers to 4
    significant digits, empty cells for missing values), then `note`."""
    def cell(value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value).replace("|", "\\|")

    lines = [f"# {title}", "", "| " + " | ".join(map(str, rows.columns)) + " |",
             "|" + "---|" * len(rows.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in rows.itertuples(index=False)]
    return "\n".join(lines + ([ "", note] if note else []) + [""])


def with_setting(frame: pd.DataFrame, made: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Each row with the dataset and model its run trained, and what they substitute for (an
    offline run of a paper-scale figure), as the run's stored provenance records them."""
    block = {c: p["experiment"] for c, p in made.items()}
    frame = frame.assign(dataset=frame["curve"].map(lambda c: block[c]["dataset"]),
                         model=frame["curve"].map(lambda c: block[c]["model"]["name"]))
    if any("substituted_for" in b for b in block.values()):
        frame = frame.assign(substituted_for=frame["curve"].map(
            lambda c: block[c].get("substituted_for")))
    return frame


def _final_summary(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    summary = {}
    for curve, rows in finals(frame).groupby("curve", sort=False):
        entry = {"round": int(rows["round"].max())}
        for metric in ("test_accuracy", "suboptimality_gap", "normalized_accuracy"):
            if metric in rows:
                entry[f"{metric}_mean"] = float(rows[metric].mean())
                entry[f"{metric}_sd"] = float(rows[metric].std(ddof=1)) if len(rows) > 1 else 0.0
        for column in EPSILONS:
            if column in rows and rows[column].notna().any():     # empty: not computed
                entry[f"{column}_max"] = float(rows[column].max())
        summary[curve] = entry
    return summary
