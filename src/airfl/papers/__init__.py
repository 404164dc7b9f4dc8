"""The wings: one package per paper (plus shared baselines). Each exposes EXPERIMENTS (training
figures) and/or ANALYTIC (figures from formulas alone).

Wings may import the core; the core never imports a wing; wings never import each other.
"""

from airfl.papers.baselines import EXPERIMENTS as _BASELINES
from airfl.papers.biased_fl.experiments import EXPERIMENTS as _BIASED_FL
from airfl.papers.cdpb.experiments import ANALYTIC as _CDPB_ANALYTIC
from airfl.papers.cdpb.experiments import EXPERIMENTS as _CDPB
from airfl.papers.dp_perk.experiments import ANALYTIC as _DP_PERK_ANALYTIC
from airfl.papers.dp_perk.experiments import EXPERIMENTS as _DP_PERK

EXPERIMENTS = (*_BASELINES, *_BIASED_FL, *_CDPB, *_DP_PERK)
ANALYTIC = (*_CDPB_ANALYTIC, *_DP_PERK_ANALYTIC)
