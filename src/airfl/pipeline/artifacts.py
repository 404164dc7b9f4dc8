"""What each figure of the registry produces and how it is described, apart from the code that
draws it: an experiment's panel names (file stems), its caption (the Snakemake report's and the
figure stage's), and reading an analytic figure's stored frame back (the claims stage)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.experiments import AnalyticFigure, Experiment, FigureSpec
from airfl.io import read_json
from airfl.pipeline import paths
from airfl.pipeline.partitioning import PARTITION_WORDS, partition_setting


def caption(params: dict[str, Any], experiment: Experiment) -> str:
    """What the figure shows, and the profile and dataset it was made with."""
    block = experiment.params(params)
    scale = block["scale"]
    horizon = f"{scale['horizon_s']:g} s of uplink time" if scale.get("horizon_s") else \
        f"{scale['rounds']} rounds"
    substituted = (f" Offline substitute for {block['substituted_for']} (not available here)."
                   if "substituted_for" in block else "")
    return (f"{experiment.description}{substituted} Dataset: {block['dataset']}, "
            f"{block['num_devices']} devices, "
            f"{block['partition']['kind']} partition ({PARTITION_WORDS[partition_setting(block)]}),"
            f" model {block['model']['name']}. "
            f"Profile '{params['profile']}': {horizon}, mean and +-1 s.d. band over "
            f"{scale['trials']} trials (seed {params['seed']}).")


def analytic_caption(params: dict[str, Any], figure: AnalyticFigure) -> str:
    """An analytic figure's report caption: what it shows and the profile it was made with."""
    return f"{figure.title}. {figure.description} Profile '{params['profile']}' (formulas only)."


_RST_SPECIAL = "\\*`|_"


def rst_text(text: str) -> str:
    """`text` as literal reStructuredText, for the Snakemake report's captions: a caption such
    as "|T| = tau_eps,max - ..." is otherwise read as substitution references and printed as
    docutils errors (issue 13)."""
    return "".join("\\" + c if c in _RST_SPECIAL else c for c in text)


def figure_names(experiment: Experiment) -> list[str]:
    return [spec.name or experiment.figure for spec in (experiment.figure_spec,
                                                        *experiment.extra_figures)]


def figure_id(experiment: Experiment, spec: FigureSpec) -> str:
    return f"{experiment.paper}/{spec.name or experiment.figure}"


def load_frame(figure: AnalyticFigure) -> pd.DataFrame:
    """The stored frame with its attributes restored (claims are checked on stored data only)."""
    frame = pd.read_csv(paths.figure(figure.id, "csv"))
    frame.attrs.update(read_json(paths.analytic(figure.id))["attrs"])
    return frame
