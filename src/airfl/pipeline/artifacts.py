"""What each figure of the registry produces and how it is described, apart from the code that
draws it: an experiment's panel names (file stems), its caption (the Snakemake report's and the
figure stage's), and reading an analytic figure's stored frame back (the claims stage)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.core.experiments import AnalyticFigure, Experiment, FigureSpec
from airfl.runtime.io import read_json, read_table
from airfl.pipeline import paths
from airfl.pipeline.partitioning import PARTITION_WORDS, partition_setting
from airfl.figures.styles import label_styles


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


def with_colours(frame: pd.DataFrame, key: str = "style_key") -> pd.DataFrame:
    """Each row with the colour its curve is drawn in (airfl.figures.styles.label_styles over the
    figure's curves, as the PNG), so `dvc plots` draws each scheme in the figure's colour."""
    styles = label_styles(zip(frame["label"], frame[key]))
    return frame.assign(color=frame["label"].map(lambda k: styles[k].colour))


DATASET_NAMES = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10",
                 "cifar100": "CIFAR-100"}


def _listed(values) -> str:
    return " + ".join(str(v) for v in dict.fromkeys(values))


def made_with(runs: list[dict[str, Any]], trials: list[int],
              paper_scale: str | None = None) -> str:
    """A figure's footer: the profile, trials, seed, dataset and model its runs were made with
    and what they substitute for, from the runs' stored provenance (`runs`: each drawn curve's
    params as its train stage recorded them) and the trials drawn per curve. `paper_scale`:
    "dataset / model" of params.yaml's paper profile, named where the runs used others."""
    blocks = [r["experiment"] for r in runs]
    counts = sorted(set(trials))
    trial_text = (f"{counts[0]} trial" + ("s" if counts[0] != 1 else "")) if len(counts) == 1 \
        else f"{counts[0]}-{counts[-1]} trials"
    band = "mean ± 1 s.d. over " if counts and counts[-1] > 1 else ""
    datasets = _listed(DATASET_NAMES.get(b["dataset"], b["dataset"]) for b in blocks)
    models = _listed(b["model"]["name"] for b in blocks)
    text = (f"Profile '{_listed(r['profile'] for r in runs)}', {band}{trial_text} "
            f"(seed {_listed(r['seed'] for r in runs)}); trained on {datasets} with model "
            f"{models}")
    substituted = [b["substituted_for"] for b in blocks if b.get("substituted_for")]
    if substituted:
        text += (f"; offline substitute for the paper's {_listed(substituted)} "
                 "(not available here)")
    elif paper_scale and all(f"{b['dataset']} / {b['model']['name']}" != paper_scale
                             for b in blocks):
        text += f"; the paper profile trains {paper_scale}"
    return text + "."


def paper_scale(params: dict[str, Any], experiment: Experiment) -> str | None:
    """"dataset / model" of the experiment's block under the paper profile as params.yaml
    declares it (what an offline substitution stands in for, where one applies here); None
    when the block cannot be composed for that profile."""
    try:
        block = experiment.params({**params, "profile": "paper"})
    except (KeyError, ValueError, TypeError):
        return None
    if block.get("substituted_for"):
        return str(block["substituted_for"])
    model = block.get("model")
    return f"{block['dataset']} / {model['name']}" \
        if isinstance(model, dict) and "dataset" in block else None


def substitution(runs: list[dict[str, Any]]) -> str:
    """The title's second line when the runs trained an offline substitute (stored provenance):
    what ran in place of what, so the title never names data the figure does not show."""
    blocks = [r["experiment"] for r in runs if r["experiment"].get("substituted_for")]
    if not blocks:
        return ""
    ran = _listed(f"{DATASET_NAMES.get(b['dataset'], b['dataset'])} / {b['model']['name']}"
                  for b in blocks)
    return f"[offline substitute: {ran} in place of {_listed(b['substituted_for'] for b in blocks)}]"


def analytic_made_with(profile: str) -> str:
    """An analytic figure's footer: formulas only, no training, no trials."""
    return f"Profile '{profile}'; computed from the paper's formulas (no training, no trials)."


def analytic_caption(params: dict[str, Any], figure: AnalyticFigure) -> str:
    """An analytic figure's report caption: what it shows and the profile it was made with."""
    return f"{figure.title}. {figure.description} Profile '{params['profile']}' (formulas only)."


_RST_SPECIAL = "\\*`|_"


def rst_text(text: str) -> str:
    """`text` as literal reStructuredText, for the Snakemake report's captions: a caption such
    as "|T| = tau_eps,max - ..." is otherwise read as substitution references and printed as
    docutils errors."""
    return "".join("\\" + c if c in _RST_SPECIAL else c for c in text)


def figure_names(experiment: Experiment) -> list[str]:
    return [spec.name or experiment.figure for spec in (experiment.figure_spec,
                                                        *experiment.extra_figures)]


def figure_id(experiment: Experiment, spec: FigureSpec) -> str:
    return f"{experiment.paper}/{spec.name or experiment.figure}"


def load_frame(figure: AnalyticFigure) -> pd.DataFrame:
    """The stored frame with its attributes restored (claims are checked on stored data only)."""
    frame = read_table(paths.figure(figure.id, "csv"))
    frame.attrs.update(read_json(paths.analytic(figure.id))["attrs"])
    return frame
