"""The wings: one package per paper (plus shared baselines). Each exposes EXPERIMENTS.

Wings may import the core; the core never imports a wing; wings never import each other.
"""

from airfl.papers import baselines
from airfl.papers.biased_fl import experiments as biased_fl

EXPERIMENTS = (*baselines.EXPERIMENTS, *biased_fl.EXPERIMENTS)
