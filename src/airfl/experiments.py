"""Experiments (one per figure panel), claims, and the registry the pipeline expands into jobs.

The registry is the single source of truth for the DAG: the Snakefile expands it into jobs and
`airfl dvc-yaml` generates dvc.yaml from it (a test fails when the committed dvc.yaml drifts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from airfl.config import experiment_params, get_dotted


@dataclass(frozen=True)
class ClaimResult:
    holds: bool
    numbers: str                      # our numbers, human-readable


@dataclass(frozen=True)
class Claim:
    """A checkable statement from a paper about one figure, evaluated on the figure's CSV."""

    name: str
    statement: str                    # the paper's words, paraphrased
    evaluate: Callable[[pd.DataFrame], ClaimResult]


@dataclass(frozen=True)
class FigureSpec:
    """What the figure stage draws: y against x, one line per curve label, mean and band over trials."""

    x: str
    y: str
    xlabel: str
    ylabel: str
    logy: bool = False


@dataclass(frozen=True)
class Experiment:
    paper: str
    figure: str
    config_key: str                   # dotted key of the experiment's block in params.yaml
    title: str
    description: str                  # what the figure shows (caption's first sentence)
    figure_spec: FigureSpec
    claims: tuple[Claim, ...] = field(default_factory=tuple)
    label: Callable[[str, dict[str, Any]], str] | None = None   # curve id, curve params -> legend

    @property
    def id(self) -> str:
        return f"{self.paper}/{self.figure}"

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        return experiment_params(params, self.config_key)

    def curves(self, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return get_dotted(params, self.config_key + ".curves")

    def curve_label(self, curve: str, curve_params: dict[str, Any]) -> str:
        return self.label(curve, curve_params) if self.label else curve

    def param_keys(self, curve: str | None = None) -> list[str]:
        """The params.yaml keys a stage of this experiment depends on (for DVC and Snakemake)."""
        shared = [f"{self.config_key}.{k}" for k in ("dataset", "num_devices", "partition", "model",
                                                     "training", "channel", "scale")]
        if curve is None:
            return shared + [f"{self.config_key}.curves"]
        return shared + [f"{self.config_key}.curves.{curve}"]


def all_experiments() -> list[Experiment]:
    """Every registered experiment, from every wing."""
    from airfl.papers import EXPERIMENTS

    return list(EXPERIMENTS)


def get_experiment(experiment_id: str) -> Experiment:
    for experiment in all_experiments():
        if experiment.id == experiment_id:
            return experiment
    known = ", ".join(e.id for e in all_experiments())
    raise KeyError(f"unknown experiment {experiment_id!r}; known: {known}")
