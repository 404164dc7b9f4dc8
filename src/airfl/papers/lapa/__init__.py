"""LAPA: dynamic privacy optimisation for wireless FL under heterogeneity (Sun, Liu, Ni, Wang,
Geng, Lai, Jamalipour; arXiv:2505.19823). 

* :mod:`.radio` - layout (Sec. V-A), path loss (eq. 39), calibrated Rayleigh channels, channel
  noise, BPSK SER <-> SNR (eq. 22's threshold).
* :mod:`.mechanism` - LAPA's round budget (PID-like error, eqs. 10-12), device split (eqs.
  13-16), clipping sensitivity and noise (eqs. 17-19); uniform DP and ARB (reconstructed).
* :mod:`.weights` - Wasserstein softmax (eq. 21), SER selection (eq. 22), FedAdp (Benchmark 2).
* :mod:`.schemes` - the pipeline scheme (kind ``lapa``); :mod:`.run_blocks` - the run block;
  :mod:`.analytic_figures` - Fig. 3 (the layout); :mod:`.claims` - the claims of Figs. 4-5;
  :mod:`.experiments` - the catalogue.
"""

from airfl.core.wing import Wing

WING = Wing(name="lapa", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            schemes={"lapa": f"{__name__}.schemes:LapaScheme"},
            audits={"uniform_dp": f"{__name__}.audit:lapa"})
