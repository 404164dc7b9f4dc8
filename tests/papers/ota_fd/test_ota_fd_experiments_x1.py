"""OTA-FD's X1 (experiments/x1.py): the legends (the FL benchmarks' from X2-X7's rule, the
proposed curves' full-scale eps), the eps panel's curves, and the figure's declaration."""

from __future__ import annotations

from airfl.papers.ota_fd.calibration import PREFIX
from airfl.papers.ota_fd.experiments import x1


def test_legends_of_the_methods_the_proposed_eps_and_the_benchmarks():
    assert x1.curve_label("fd_noiseless", {"method": "fd_noiseless"}) == "Noiseless FD"
    assert x1.curve_label("p", {"method": "otafd_prop", "eps_full": 5.0}) \
        == "OTA-FD, ε = 5 (full scale)"
    assert x1.curve_label("otafd_uniformw_e5", {"method": "otafd_prop", "benchmark": True,
                                                "eps_full": 5.0}) \
        == "OTA-FD, uniform weights, ε = 5"
    assert x1.curve_label("fl", {"method": "fl_noiseless"}) == "Noiseless FL"


def test_the_eps_panel_draws_the_proposed_curves_only():
    assert x1._dp_only("p", {"method": "otafd_prop"})
    assert not x1._dp_only("b", {"method": "otafd_prop", "benchmark": True})
    assert not x1._dp_only("n", {"method": "fd_noiseless"})


def test_x1_is_declared_on_its_params_block_with_every_extra_figure():
    assert x1.X1.id == "ota_fd/x1" and x1.X1.config_key == "ota_fd.x1"
    names = {spec.name for spec in x1.X1.extra_figures}
    assert {"x1_channel_uses", "x1_eps", "x1_privacy"} <= names
    assert not x1.X1.figure_spec.curves(PREFIX + "0.5", {"method": "fd_noiseless"})
    assert x1.X1.figure_spec.curves("fd_noiseless", {"method": "fd_noiseless"})
    assert {c.name for c in x1.X1.claims} >= {"x1_privacy", "x1_weighting", "x1_an_same"}
