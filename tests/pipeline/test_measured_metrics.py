"""The training metrics (`TRAINING_METRICS`, on the `scale.train_eval_subset` training samples)
are measured only where a reader declares them (`Experiment.measures_training`): a curve whose
panels do not read them skips the subset's draw and its evaluation, with every other number of
its run and its figures unchanged; and the declaration is complete: no claim reads a training
metric from a panel that does not declare it."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
import yaml

from airfl.core.experiments import TRAINING_METRICS, Experiment
from airfl.pipeline import paths
from airfl.pipeline.params import validate_params
from small_runs import raw_params, small_ota_fd
from airfl.pipeline.registry import all_experiments, curve_legend, get_experiment


@pytest.fixture()
def raw(repo_root, mnist_mirror):
    return raw_params(repo_root, mnist_mirror)


def _paper(repo_root) -> dict:
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    return validate_params({**raw, "profile": "paper"})


def test_the_panels_declare_which_curves_measure_the_training_metrics(repo_root):
    """DP as a perk: the curves Fig. 3(b)/4(b) draw (training loss vs round), and those the
    Fig. 3(a)/4(a) trade-off and the Fig. 6 identity claims read it from, measure it; its
    Fig. 5-only curves, and every curve of the other wings (no panel reads a training metric),
    do not."""
    params = _paper(repo_root)
    for experiment in all_experiments():
        if not experiment.is_enabled(params):
            continue
        curves = experiment.curves(params)
        specs = (experiment.figure_spec, *experiment.extra_figures)
        for curve in curves:
            reading = [s for s in specs if (s.curves is None or s.curves(curve, curves[curve]))
                       and set(s.reads()) & set(TRAINING_METRICS)]
            assert experiment.measures_training(curve, curves) == bool(reading), \
                (experiment.id, curve)
    fig3 = get_experiment("dp_perk/fig3a")
    curves = fig3.curves(params)
    measured = {c for c in curves if fig3.measures_training(c, curves)}
    assert {c for c in curves if curves[c].get("in_fig3") or curves[c].get("in_fig6")} == measured
    assert measured and len(measured) < len(curves)
    lapa = get_experiment("lapa/fig4")
    assert not any(lapa.measures_training(c, lapa.curves(params)) for c in lapa.curves(params))


BASE = ("time_s", "test_accuracy", "test_loss", "train_loss", "train_accuracy", "objective",
        "epsilon_paper", "epsilon_simulated", "suboptimality_gap", "normalized_accuracy")


def _synthetic(experiment: Experiment, curves: dict, rng: np.random.Generator) -> pd.DataFrame:
    """An experiment's frame as the figure stage builds it (`figure._curve_frame`), every
    metric and every column a panel reads filled with random values: 4 trials of 21 rounds per
    curve."""
    reads = {c for s in (experiment.figure_spec, *experiment.extra_figures) for c in s.reads()}
    pieces = []
    for curve, curve_params in curves.items():
        label = curve_legend(experiment, curve, curve_params)
        for trial in range(4):
            frame = pd.DataFrame({"curve": curve, "label": label, "style_key": label,
                                  "trial": trial, "round": np.arange(21)})
            for column in sorted((set(BASE) | reads) - set(frame.columns)):
                frame[column] = rng.uniform(0.1, 0.9, len(frame))
            for key, value in curve_params.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    frame[f"param_{key}"] = value
            pieces.append(frame.assign(dataset="mnist", model="softmax",
                                       partition_per="experiment"))
    return pd.concat(pieces, ignore_index=True)


def _verdict(claim, frames: list[pd.DataFrame]) -> str:
    try:
        return claim.evaluate(pd.concat(frames, ignore_index=True)).verdict
    except Exception as error:        # noqa: BLE001 - compared, not hidden
        return f"{type(error).__name__}: {error}"


def test_no_claim_reads_a_training_metric_its_panel_does_not_declare(repo_root):
    """Every claim of every experiment (paper profile), on random panel data with every
    metric, and on the same panels as their CSVs are written (`figure.panel_columns`: a
    training metric only where the panel declares it), gives the same verdict: a claim that
    read `train_loss` from a panel not declaring it would raise a KeyError on the second.
    Nearly all claims reach a verdict on such data (checked), so the comparison is not
    vacuous; the claims that read the training loss are among them."""
    from airfl.pipeline.stages.figure import drawn_frame, panel_columns

    params = _paper(repo_root)
    rng = np.random.default_rng(0)
    panels, frames = {}, {}
    for experiment in all_experiments():
        if experiment.is_enabled(params):
            curves = experiment.curves(params)
            frames[experiment.id] = (_synthetic(experiment, curves, rng), curves)
            for spec in (experiment.figure_spec, *experiment.extra_figures):
                panels[(experiment.paper, spec.name or experiment.figure)] = (experiment, spec)
    decided, differ, total = [], [], 0
    for experiment in all_experiments():
        if not experiment.is_enabled(params):
            continue
        for claim in experiment.claims:
            stems = claim.panel if isinstance(claim.panel, tuple) else \
                (claim.panel or experiment.figure,)
            if any((experiment.paper, stem) not in panels for stem in stems):
                continue              # e.g. an audit's figure: drawn from no run table
            total += 1
            drawn = []
            for stem in stems:
                owner, spec = panels[(experiment.paper, stem)]
                frame, curves = frames[owner.id]
                drawn.append((drawn_frame(frame, spec, curves).assign(figure=stem), spec))
            full = _verdict(claim, [f for f, _ in drawn])
            written = _verdict(claim, [panel_columns(f, spec) for f, spec in drawn])
            if written != full:
                differ.append(f"{experiment.id}:{claim.name}: {written} (with every metric: "
                              f"{full})")
            if ":" not in full:
                decided.append(f"{experiment.id}:{claim.name}")
    assert not differ, "claims read a training metric their panel does not declare:\n" + \
        "\n".join(differ)
    assert len(decided) >= 0.9 * total
    assert {"dp_perk/fig3a:fig3_tradeoff", "dp_perk/fig4a:fig4_tradeoff",
            "dp_perk/fig3a:fig6_identical_below"} <= set(decided)


def test_a_panel_csv_carries_a_training_metric_only_where_it_reads_one():
    """`figure.panel_columns`: DP as a perk's Fig. 3(b) (training loss vs round) and its
    Fig. 3(a) (whose trade-off claim reads the loss) keep `train_loss`; Fig. 5 drops it."""
    from airfl.pipeline.stages.figure import panel_columns

    fig3 = get_experiment("dp_perk/fig3a")
    specs = {s.name or fig3.figure: s for s in (fig3.figure_spec, *fig3.extra_figures)}
    frame = pd.DataFrame({"round": [0], "test_accuracy": [0.5], "test_loss": [1.0],
                          "train_loss": [1.1]})
    assert "train_loss" in panel_columns(frame, specs["fig3a"])
    assert "train_loss" in panel_columns(frame, specs["fig3b"])
    assert list(panel_columns(frame, specs["fig5"])) == ["round", "test_accuracy", "test_loss"]


def test_a_curve_no_panel_reads_training_metrics_on_never_evaluates_the_training_subset(
        raw, tmp_path, monkeypatch):
    """OTA-FD X5 (no panel reads a training metric), 3 rounds on small sets, its own
    trainer (a model per device): its train jobs never draw the training subset and their run
    tables have no training columns; measuring them anyway (a panel that would read them)
    draws the subset once per curve and adds the columns, every other column bit for bit the
    same (the subset's stream is its own) and the figure CSV byte for byte the same."""
    from airfl.pipeline import trial as trial_module
    from airfl.pipeline.stages import design, figure, partition, privacy, train

    monkeypatch.chdir(tmp_path)
    params = small_ota_fd(raw, "x5", rounds=3, eval_every=1)
    eid = "ota_fd/x5"
    curves = list(get_experiment(eid).curves(params))
    drawn = []
    real = trial_module.train_eval_data

    def counted(*args, **kwargs):
        drawn.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(trial_module, "train_eval_data", counted)

    def stages():
        for curve in curves:
            design.run(params, eid, curve)
            train.run(params, eid, curve, progress=False)
            privacy.run(params, eid, curve)

    partition.run(params, eid)
    stages()
    assert drawn == []
    skipped = {c: pd.read_csv(paths.run_table(eid, c)) for c in curves}
    assert not any(set(TRAINING_METRICS) & set(t.columns) for t in skipped.values())
    figure.run(params, eid)
    figure_bytes = paths.figure(eid, "csv").read_bytes()
    monkeypatch.setattr(Experiment, "measures_training", lambda self, curve, curves: True)
    stages()
    assert drawn == [eid] * len(curves)
    for curve, table in skipped.items():
        measured = pd.read_csv(paths.run_table(eid, curve))
        evaluated = measured.dropna(subset=["test_accuracy"])
        assert evaluated[list(TRAINING_METRICS)].notna().all().all()
        pd.testing.assert_frame_equal(measured.drop(columns=list(TRAINING_METRICS)), table,
                                      check_exact=True)
    figure.run(params, eid)
    assert paths.figure(eid, "csv").read_bytes() == figure_bytes


def test_the_plan_costs_the_training_subset_only_where_it_is_measured(repo_root):
    """`airfl plan`: LAPA's paper-scale Fig. 4 curves (no panel reads a training metric) are
    costed without the 10,000-sample training subset: their evaluated samples are the test
    set's only; DP as a perk's Fig. 3(b) curves keep it."""
    from airfl.pipeline import train_cost

    params = _paper(repo_root)
    lapa = get_experiment("lapa/fig4")
    block = lapa.params(params)
    curve = next(iter(block["curves"]))
    assert block["scale"]["train_eval_subset"] == 10000
    declared = train_cost.train_work(lapa, block, block["curves"][curve],
                               training_metrics=lapa.measures_training(curve, block["curves"]))
    everything = train_cost.train_work(lapa, block, block["curves"][curve])
    test = block["scale"]["test_subset"] or 10000
    assert everything.eval_samples == pytest.approx(declared.eval_samples * (test + 10000) / test)
    assert declared.client_steps == everything.client_steps
