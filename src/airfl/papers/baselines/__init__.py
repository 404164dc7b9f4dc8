"""Shared baselines figure: the first figure that runs through every stage of the pipeline."""

from airfl.papers.baselines.accuracy_vs_rounds import EXPERIMENT

EXPERIMENTS = (EXPERIMENT,)
