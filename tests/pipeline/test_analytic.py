"""Analytic figures (formulas only): the stage stores the tidy frame, its attributes and the
plot; the claims stage checks claims on the stored frame; the DAG has one job per figure."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

import types

from airfl.pipeline import dag, paths
from airfl.pipeline.artifacts import load_frame
from airfl.pipeline.params import validate_params
from airfl.core.wing import Wing
from airfl.core.experiments import AnalyticFigure, Panel
from airfl.pipeline.registry import get_analytic


def _compute(block):
    x = [1.0, 2.0, 3.0]
    frame = pd.DataFrame({"x": x * 2, "scheme": ["a"] * 3 + ["b"] * 3, "metric": "m",
                          "value": [3.0, 2.0, 1.0, 4.0, 5.0, 6.0]})
    frame.attrs.update(figure="toy", x="x", params={"K": block["K"]})
    return frame


def _check(frame):
    a = frame[frame.scheme == "a"].value.to_numpy()
    return [("toy.decreasing", "a decreases", f"a = {list(a)}", bool((a[1:] < a[:-1]).all())),
            ("toy.k", "K is stored", str(frame.attrs["params"]["K"]),
             frame.attrs["params"]["K"] == 100)]


TOY = AnalyticFigure(paper="toy", figure="fig1", config_key="cdpb.analytic", title="Toy",
                     description="A toy.", xlabel="x (units)", panels=(Panel("m", "m (units)"),),
                     compute=_compute, check=_check, label=str.upper)


@pytest.fixture()
def workspace(tmp_path, monkeypatch, repo_root, extra_wings):
    monkeypatch.chdir(tmp_path)
    extra_wings(Wing(name="toy", package="airfl.papers", catalogue="toy_catalogue"),
                types.SimpleNamespace(ANALYTIC=(TOY,)))
    return validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))


def test_stage_stores_frame_attributes_and_plot_and_claims_read_them_back(workspace,
                                                                          monkeypatch):
    from airfl.pipeline.stages import analytic, claims

    analytic.run(workspace, "toy/fig1")
    stored = pd.read_csv(paths.figure("toy/fig1", "csv"))
    assert list(stored["label"].unique()) == ["A", "B"]
    assert json.loads(paths.analytic("toy/fig1").read_text())["attrs"]["params"] == {"K": 100}
    assert paths.figure("toy/fig1", "png").stat().st_size > 0
    assert paths.figure("toy/fig1", "pdf").stat().st_size > 0
    assert load_frame(TOY).attrs["params"]["K"] == 100
    results = claims.evaluate_paper("toy")
    assert [(r["claim"], r["verdict"]) for r in results] == [("toy.decreasing", "holds"),
                                                            ("toy.k", "holds")]


def test_dag_has_one_job_per_analytic_figure_and_claims_depend_on_it(workspace):
    jobs = dag.jobs(workspace)
    (job,) = [j for j in jobs if j.stage == "analytic" and j.args == ["toy/fig1"]]
    assert job.args == ["toy/fig1"] and "cdpb.analytic" in job.params
    (plot,) = job.plots
    assert (plot.path, plot.x, plot.y) == (str(paths.figure("toy/fig1", "csv")), "x", "value")
    assert plot.template.startswith("airfl_panels")
    (claims,) = [j for j in jobs if j.stage == "claims" and j.args == ["toy"]]
    assert str(paths.figure("toy/fig1", "csv")) in claims.deps
    assert get_analytic("toy/fig1") is TOY
    with pytest.raises(KeyError, match="known: .*toy/fig1"):
        get_analytic("toy/nope")


def test_report_captions_are_literal_restructuredtext(repo_root):
    """captions such as "|T| = tau_eps,max - ..." printed docutils errors in the
    Snakemake report (substitution references); every caption must render without a warning
    and keep its text."""
    from docutils.core import publish_doctree
    from docutils.utils import Reporter

    from airfl.pipeline.artifacts import analytic_caption, caption, rst_text
    from airfl.pipeline.params import load_params
    from airfl.pipeline.registry import all_analytic, all_experiments

    params = load_params(repo_root / "params.yaml")
    texts = [caption(params, e) for e in all_experiments()] + \
        [analytic_caption(params, f) for f in all_analytic()]
    assert any("|T|" in t for t in texts)
    for text in texts:
        tree = publish_doctree(rst_text(text), settings_overrides={
            "report_level": Reporter.WARNING_LEVEL, "halt_level": Reporter.WARNING_LEVEL})
        assert tree.astext() == text
