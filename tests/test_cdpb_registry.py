"""CDPB's registered analytic figures: every panel draws a metric the frame has, with the
params.yaml block (which must equal the wing's DEFAULTS: spec App. B)."""

from __future__ import annotations

import yaml

from airfl.config import validate_params
from airfl.experiments import all_analytic
from airfl.papers.cdpb import analytic_figures


def test_params_block_is_the_specs_defaults(repo_root):
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    assert params["cdpb"]["analytic"] == analytic_figures.DEFAULTS


def test_every_registered_figure_draws_metrics_its_frame_has():
    figures = [f for f in all_analytic() if f.paper == "cdpb"]
    assert {f.figure for f in figures} == set(analytic_figures.FIGURES)
    cheap = {"fig2a", "fig2b", "fig3", "fig5", "fig9a"}
    for figure in figures:
        if figure.figure not in cheap:
            continue
        frame = figure.compute(dict(analytic_figures.DEFAULTS))
        assert {p.metric for p in figure.panels} <= set(frame["metric"])
        assert all(figure.scheme_label(s) for s in frame["scheme"].unique())
