"""DP as a perk: AirFL with a multi-antenna base station (Liang, Wen, Wu, Xing, Letaief).

Wing contents, one job each:

* :mod:`.beamforming` - the per-round combiner problem (P1): ZF (u = 1, the authors' default),
  phase-optimised ZF, SCA (general, m < K) and SDR (validation).
* :mod:`.uplink` - geometry, path loss, Rayleigh SIMO channels, the per-trial channel plan,
  transmit scaling, the effective noise on the model (fast and physical paths).
* :mod:`.privacy` - the user-level converging RDP bound (Prop. III.1) and its (eps, delta) forms.
* :mod:`.design` - the norm allocation (water-filling, bisection, cvxpy), the perk window
  (P_thr, P_full) and the finite-D allocation (App. D).
* :mod:`.aggregation` - per-round aggregation of Vanilla FL, FL w/ clipping, AirFL-MIMO, AirFL-DP.
* :mod:`.analytic_figures` - Fig. 2 and the analytic diagnostics as tidy frames;
  :mod:`.claims.analytic` - the claims those frames decide.

* :mod:`.schemes`, :mod:`.run_blocks`, :mod:`.experiments` - the pipeline scheme (kind ``dp_perk``),
  the run blocks of Figs. 3-6 and the registered figures (the catalogue);
  :mod:`.claims.training` - the claims checked on the training figures.
"""

from airfl.core.wing import Wing

WING = Wing(name="dp_perk", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            schemes={"dp_perk": f"{__name__}.schemes:DpPerkScheme"},
            audits={"airfl_dp": f"{__name__}.audit:dp_perk"})
