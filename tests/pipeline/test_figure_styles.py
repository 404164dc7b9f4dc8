"""Every registered figure's curves, in both profiles, drawn without two curves alike: no shared
colour (airfl.figures.styles.collisions), the paper's proposed scheme the most prominent wherever it is
drawn, and every paper's figures drawing its proposed scheme somewhere. Computed from the
declarations (legends as the figure stage names them), nothing is rendered."""

from __future__ import annotations

import pytest

from airfl.pipeline.artifacts import figure_id
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import active_experiments, curve_legend
from airfl.figures.styles import collisions, figure_styles


def figure_curve_names(params):
    """{figure id: the style keys of its curves, in drawing order} for every active experiment
    (a panel's own `label` where it has one, else the curve's legend without its DP suffix)."""
    out = {}
    for experiment in active_experiments(params):
        curves = experiment.curves(params)
        for spec in (experiment.figure_spec, *experiment.extra_figures):
            drawn = [(c, p) for c, p in curves.items() if spec.curves is None or spec.curves(c, p)]
            names = [spec.label(c, p) if spec.label else curve_legend(experiment, c, p)
                     for c, p in drawn]
            out[figure_id(experiment, spec)] = list(dict.fromkeys(names))
    return out


@pytest.fixture(scope="module", params=["quick", "paper"])
def figures(request, repo_root):
    params = load_params(repo_root / "params.yaml", {"profile": request.param})
    return figure_curve_names(params)


def test_no_two_curves_of_any_figure_share_a_colour(figures):
    problems = {fid: collisions(figure_styles(names)) for fid, names in figures.items()}
    assert {fid: p for fid, p in problems.items() if p} == {}
    assert len(figures) > 40 and max(len(n) for n in figures.values()) >= 5   # really checked


def test_the_proposed_scheme_is_the_most_prominent_curve(figures):
    for fid, names in figures.items():
        styles = figure_styles(names)
        proposed = [n for n in names if styles[n].proposed]
        others = [n for n in names if not styles[n].proposed]
        for name in proposed:
            assert all(styles[name].linewidth > styles[o].linewidth
                       and styles[name].zorder > styles[o].zorder for o in others), (fid, name)


def test_every_paper_draws_its_proposed_scheme_prominently(figures):
    # the baselines and the arena propose no scheme: they compare others' on equal terms
    papers = {fid.split("/")[0] for fid in figures} - {"baselines", "arena"}
    with_proposed = {fid.split("/")[0] for fid, names in figures.items()
                     if any(s.proposed for s in figure_styles(names).values())}
    assert papers <= with_proposed, sorted(papers - with_proposed)


def test_a_plug_in_scheme_gets_its_declared_label_and_a_free_colour(extra_wings, repo_root):
    """A scheme from another installed package, added as one more curve of the baselines
    figure: its wing's `labels` name it (not its curve key), and it is drawn in a colour and
    with a marker no other curve of the figure has (the hash once gave it those of "OTA-FL,
    SNR 10 dB")."""
    from airfl.core.wing import Wing
    from airfl.papers.baselines.experiments import EXPERIMENT

    extra_wings(Wing(name="plug", package="plug", schemes={"trimmed_mean": "plug:Trimmed"},
                     labels={"trimmed_mean": "Trimmed mean"}))
    params = load_params(repo_root / "params.yaml", {"profile": "quick"})
    curves = {**EXPERIMENT.curves(params), "trimmed": {"scheme": "trimmed_mean", "trim": 0.1}}
    names = [curve_legend(EXPERIMENT, c, p) for c, p in curves.items()]
    assert names[-1] == "Trimmed mean" and "OTA-FL, SNR 10 dB" in names
    styles = figure_styles(names)
    assert collisions(styles) == []
    assert styles["Trimmed mean"].marker not in {styles[n].marker for n in names[:-1]}
    # a scheme no wing labels keeps its curve key
    assert curve_legend(EXPERIMENT, "mine", {"scheme": "unlabelled"}) == "mine"
