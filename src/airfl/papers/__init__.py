"""The wings: one package per paper (plus shared baselines). Each exposes EXPERIMENTS.

Wings may import the core; the core never imports a wing; wings never import each other.
"""

from airfl.papers import baselines

EXPERIMENTS = (*baselines.EXPERIMENTS,)
