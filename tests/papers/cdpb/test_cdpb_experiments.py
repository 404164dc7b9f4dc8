"""CDPB's catalogue (experiments.py): the params block is the wing's defaults, every registered
figure draws metrics its frame has, the claims on the stored frame equal those on the computed
one, and Fig. 4's strategy enum."""

from __future__ import annotations

import pytest
import yaml

from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import all_analytic
from airfl.papers.cdpb import analytic_figures


def test_params_block_is_the_wings_defaults(repo_root):
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    assert params["cdpb"]["analytic"] == analytic_figures.DEFAULTS


CHEAP = ("fig2a", "fig2b", "fig3", "fig5", "fig9a")


@pytest.fixture(scope="module")
def computed():
    """The cheap registered figures and their frames, computed once through the catalogue's
    `compute` on the params.yaml defaults."""
    figures = {f.figure: f for f in all_analytic() if f.paper == "cdpb"}
    return {name: (figures[name], figures[name].compute(dict(analytic_figures.DEFAULTS)))
            for name in CHEAP}


def test_every_registered_figure_draws_metrics_its_frame_has(computed):
    figures = [f for f in all_analytic() if f.paper == "cdpb"]
    assert {f.figure for f in figures} == set(analytic_figures.FIGURES)
    for figure, frame in computed.values():
        assert {p.metric for p in figure.panels} <= set(frame["metric"])
        assert all(figure.scheme_label(s) for s in frame["scheme"].unique())


def test_claims_on_the_stored_frame_equal_the_claims_on_the_computed_one(
        computed, assert_claims_survive_storage):
    """The claims stage reads the CSV back: storage must not change a claim's verdict (the
    checks test identities such as gamma * tau = const to float precision)."""
    for name in ("fig2a", "fig2b", "fig3", "fig5"):
        assert_claims_survive_storage(*computed[name])


def test_fig4_strategy_enum_is_the_wings_strategies_with_a_fixed_mechanism():
    """CDPB's curves are composed from `cdpb.fig4.strategies` (one `cdpb` scheme, its strategy a
    parameter): that enum must be the wing's strategies, CDPB-mixed aside."""
    from airfl.papers.cdpb.setting import STRATEGIES
    from airfl.pipeline.params import params_schema

    cdpb = params_schema()["$defs"]["cdpb"]["properties"]["fig4"]["properties"]["strategies"]
    assert sorted(cdpb["items"]["enum"]) == sorted(s for s in STRATEGIES if s != "cdpb_mixed")
