"""CDPB: privacy-enhanced over-the-air FL via client-driven power balancing (Kim, Seo, Choi).

Wing contents, one job per module:
setting.py (validated parameters, strategy names), channel_stats.py (p, K_t, sigma_q^2 as
functions of rho), privacy.py (Theorem 1 and the other RDP bounds, composition, conversion),
objective.py (Theorem 2 gamma and the utility G), design.py (Lemmas 1-2, Stage II, Algorithms
2-3), aggregation.py (round-by-round aggregation of every scheme), analytic_figures.py and
claims.py (the analytic figures and their claims).
"""

from airfl.core.wing import Wing

WING = Wing(name="cdpb", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            schemes={"cdpb": f"{__name__}.schemes:CdpbStrategy"},
            audits={"cdpb": f"{__name__}.audit:cdpb"})
