"""CDPB's per-round RDP (privacy.py): Theorem 1 against Appendix A, the baselines' privacy,
Lemma 3, the dimension-corrected bound against the generic accountant, composition and
conversions, the privacy events."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from airfl.papers.cdpb import channel_stats as cs
from airfl.papers.cdpb import privacy as pv
from airfl.papers.cdpb.design import rho_gamma_closed
from airfl.papers.cdpb.setting import CdpbSetting
from airfl.privacy import RdpAccountant, rdp_subsampled_gaussian

from cdpb_helpers import assert_printed


S = CdpbSetting()


# ------------------------------------------------------------------------- privacy
def test_theorem1_reference_value():
    assert_printed(float(pv.rdp_paper_thm1(0.5, 50.0, 2)), "1.5174998")


def test_theorem1_at_rho_max_matches_appendix_a():
    assert_printed(float(pv.strategy_rdp_round(S, "cdpb_i", 1.0)), "1.334434")
    assert_printed(float(pv.strategy_rdp_round(S, "cdpb_n", 1.0)), "1.328228")


def test_baseline_privacy_matches_appendix_a():
    """Per-round eps_r of the baselines (reference values recomputed from the paper's formulas, rho as printed in Sec. V)."""
    assert_printed(float(pv.strategy_rdp_round(S, "gamma_bar", rho_gamma_closed(S, 0.0))),
                   "1.568488")
    assert_printed(float(pv.strategy_rdp_round(S, "is", 0.9016)), "2.002967")
    assert_printed(float(pv.strategy_rdp_round(S, "hmin", cs.hmin_rho(S))), "2.089567")
    assert_printed(float(pv.strategy_rdp_round(S, "noise_free", 0.9016)), "198.890")


def test_privacy_inputs_of_baselines():
    """h_min has no amplification (p = 1); IS is amplified by its hidden coin (p = q_IS)."""
    assert float(pv.privacy_inputs(S, "hmin", 0.01)[0]) == 1.0
    assert float(pv.privacy_inputs(S.replace(q_IS=0.7), "is", 0.9)[0]) == 0.7
    p, s2 = pv.privacy_inputs(S, "noise_free", 0.9)
    assert (float(p), float(s2)) == (pytest.approx(math.exp(-0.9)), 0.01)


def test_fig5_ordering_holds_for_q_is_in_errata_range_only():
    """IS baseline (Sec. V): q_IS in about (0.525, 0.985) gives gamma_bar < IS < h_min."""
    gb = float(pv.strategy_rdp_round(S, "gamma_bar", rho_gamma_closed(S, 0.0)))
    hm = float(pv.strategy_rdp_round(S, "hmin", cs.hmin_rho(S)))

    def is_eps(q):
        return float(pv.strategy_rdp_round(S.replace(q_IS=q), "is", 0.9016))

    assert all(gb < is_eps(q) < hm for q in (0.53, 0.9, 0.98))
    assert is_eps(0.52) < gb and is_eps(0.99) > hm


def test_theorem1_loosens_lemma3():
    """Theorem 1 replaces E_{(j-1)j} by E_{(alpha-1)j} and doubles every term of (34), so it is
    never below Lemma 3 (Wang et al. Thm. 9); at p = 0 it is ln2/(alpha-1)."""
    p, s2 = np.meshgrid(np.linspace(0.0, 1.0, 21), np.geomspace(0.05, 500.0, 21))
    for alpha in (2, 3, 5, 10):
        paper, wang = pv.rdp_paper_thm1(p, s2, alpha), pv.rdp_wang_thm9(p, s2, alpha)
        assert np.all(paper >= wang - 1e-12)
        assert np.all(wang >= 0)
        # at p = 1 nothing is amplified: Lemma 3 must bound the plain Gaussian alpha W^2/s2
        assert np.all(wang[:, -1] >= pv.rdp_no_amplification(s2[:, -1], alpha) - 1e-12)
        at_zero = float(pv.rdp_paper_thm1(0.0, 10.0, alpha))
        assert at_zero == pytest.approx(math.log(2) / (alpha - 1))


CORRECTED_CASES = [(p, z, a) for p in (0.01, 0.37, 0.9, 1.0) for z in (0.5, 1.0, 2.0, 5.0)
                   for a in (2, 3, 8, 32)]


def _corrected(p, z, alpha, d=100, rho=0.8):
    """Our corrected bound at the sigma_q^2 that gives noise multiplier z."""
    return float(pv.rdp_dimension_corrected(p, z * z * d * rho, alpha, rho, d))


@pytest.mark.parametrize("p,z,alpha", CORRECTED_CASES)
def test_dimension_corrected_matches_airfl_privacy(p, z, alpha):
    """Same series (MTZ19 §3.3), independent code: only rounding may differ (rtol 1e-9)."""
    assert float(pv.corrected_noise_multiplier(z * z * 100 * 0.8, 0.8, 100)) == pytest.approx(z)
    ref = float(rdp_subsampled_gaussian(p, z, [alpha])[0])
    assert _corrected(p, z, alpha) == pytest.approx(ref, rel=1e-9)


def test_dimension_corrected_matches_dp_accounting():
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    for p, z, alpha in CORRECTED_CASES:
        acc = rdp_acc.RdpAccountant([alpha])
        acc.compose(dp_event.PoissonSampledDpEvent(p, dp_event.GaussianDpEvent(z)))
        assert _corrected(p, z, alpha) == pytest.approx(float(acc.rdp[0]), rel=1e-9)


def test_dimension_corrected_is_far_larger_than_theorem1():
    """Our reading: the dimension-corrected RDP is "orders of magnitude larger" than Theorem 1.
    At the CDPB-i operating point and
    alpha = 2 that holds for ResNet-18 (d = 11.2M: > 1e4 times); for the quick softmax model
    (d = 650) the factor is about 9."""
    paper = float(pv.strategy_rdp_round(S, "cdpb_i", 0.9016))
    ratio = {d: float(pv.strategy_rdp_round(S.replace(rdp_bound="dimension_corrected",
                                                      model_dim=d), "cdpb_i", 0.9016)) / paper
             for d in (650, 11_200_000)}
    assert 5 < ratio[650] < 20 and ratio[11_200_000] > 1e4


def test_composition_and_conversions():
    eps_r = float(pv.strategy_rdp_round(S, "cdpb_i", 0.9016))
    assert float(pv.rdp_total(eps_r, 72)) == pytest.approx(72 * eps_r)
    np.testing.assert_allclose(pv.cumulative_rdp([eps_r] * 72)[-1], 72 * eps_r, rtol=1e-14)
    classic, order = pv.to_dp([2], [72 * eps_r], 1e-5, "classic")
    assert (classic, order) == (pytest.approx(72 * eps_r + math.log(1e5)), 2.0)
    curve = 72 * pv.strategy_rdp_orders(S, "cdpb_i", 0.9016)
    optimal, _ = pv.to_dp(pv.INTEGER_ORDERS, curve, 1e-5, "optimal")
    assert optimal < classic
    acc = RdpAccountant(pv.INTEGER_ORDERS).compose(
        pv.privacy_event(S, "cdpb_i", 0.9016, rounds=72))
    assert acc.get_epsilon(1e-5) == pytest.approx(optimal, rel=1e-12)


def test_privacy_event_of_corrected_bound_is_a_subsampled_gaussian():
    s = S.replace(rdp_bound="dimension_corrected", model_dim=650)
    event = pv.privacy_event(s, "cdpb_n", 0.66)
    p, s2 = pv.privacy_inputs(s, "cdpb_n", 0.66)
    assert event.to_dict()["kind"] == "subsampled_gaussian"
    rdp = RdpAccountant([2, 5]).compose(event).rdp
    np.testing.assert_allclose(rdp, [float(pv.rdp_dimension_corrected(p, s2, a, 0.66, 650))
                                     for a in (2, 5)], rtol=1e-9)
    json.dumps(event.to_dict())
