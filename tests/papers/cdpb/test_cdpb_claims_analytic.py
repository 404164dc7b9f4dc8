"""CDPB's claims on its analytic figures (claims/analytic.py): they hold exactly where the
formulas say, the Fig. 9(a) weight where an interior beta starts to win, and a claim fails when
the data contradicts it."""

from __future__ import annotations


import numpy as np

from airfl.papers.cdpb import analytic_figures as af
from airfl.papers.cdpb.claims.analytic import Claim, claims_fig3


EXPECTED_NOT_HOLDING = {"fig5.hmin_weakest_all", "fig7b.literal_grows_with_P"}
#: the paper's hopes, not claims (the optimal portion is "an open question", §V): no verdict
EXPECTED_HOPES = {"fig9a.mixed_improves", "fig9b.interior_optimum"}


def test_claims_hold_exactly_where_the_formulas_say(frames):
    results = {}
    for name, (_, claims) in af.FIGURES.items():
        for claim in claims(frames[name]):
            assert isinstance(claim, Claim) and (isinstance(claim.holds, bool)
                                                 or claim.claim_id in EXPECTED_HOPES)
            assert claim.paper_words and claim.our_numbers
            results[claim.claim_id] = claim.holds
    assert len(results) >= 30
    assert {k for k, v in results.items() if v is None} == EXPECTED_HOPES
    assert {k for k, v in results.items() if v is False} == EXPECTED_NOT_HOLDING


def test_fig9a_stored_weight_is_where_an_interior_beta_starts_to_win(frames):
    """The stored privacy weight is the bisected threshold: with the same formulas and taus an
    interior beta beats both ends at it, and does not at the weight WEIGHT_RTOL below it."""
    from airfl.papers.cdpb.claims.analytic import interior_advantage

    scan = frames["fig9a"].attrs["interior_weight"]
    w = scan["lam2_threshold"]
    assert w is not None and w > frames["fig9a"].attrs["params"]["lam2"]
    p = af.resolve({})
    taus = np.arange(1, p["fig9_rounds"] + 1)
    assert interior_advantage(af._fig9a_curves(p, taus, lam1=1.0, lam2=w)) > 0
    below = w / (1.0 + af.WEIGHT_RTOL)
    assert interior_advantage(af._fig9a_curves(p, taus, lam1=1.0, lam2=below)) <= 0
    assert scan["advantage"][0] <= 0          # the paper's weight: no interior win


def test_a_claim_fails_when_the_data_contradicts_it(frames):
    """Swap the CDPB-i and CDPB-n curves of Fig. 3: 'CDPB is best' must then fail."""
    frame = frames["fig3"].copy()
    frame["scheme"] = frame["scheme"].replace({"cdpb_i": "cdpb_n", "cdpb_n": "cdpb_i"})
    frame.attrs = dict(frames["fig3"].attrs)
    held = {c.claim_id: c.holds for c in claims_fig3(frame)}
    assert held["fig3.cdpb_best"] is False and held["fig3.hmin_worst"] is True
