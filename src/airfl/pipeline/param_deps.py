"""Which params.yaml values each job reads: derived, never listed by hand.

A job of an experiment reads a *view* of params.yaml: a few top-level knobs of its stage
(`knobs` in the stage table, `stage_table`) and a part of the experiment's resolved block (`block_view`), e.g. a
train job reads the block's settings and its own curve, never the other curves. Snakemake takes the view
itself as the rule's `params:` (a change of any value in it reruns the job); DVC needs the
dotted keys behind it, which `derive` finds by perturbation: a leaf key of the wing's
params.yaml block is a dependency of a job when changing its value changes that job's view
while the job still exists. Both tools therefore rerun the same jobs after a one-knob change:

* a curve's own parameter reaches only that curve's jobs and the figure;
* a knob only the analytic figures read (`dp_perk.analytic.fig2_B`) reaches no training job;
* a grid that generates curves (`dp_perk.training.fig5_eps_tilde`) reaches the figure but no
  existing curve: a new grid point is a new job (the DAG changes shape: `airfl dvc-yaml`).

Lists are single values for DVC (it compares a list as a whole), so a list is perturbed by
appending an element and by leaving out each one in turn (a changed element could rename a
curve into another's name). A number the wing cannot compose
changed (it must name a grid point, e.g. `fig6_eps_tilde`) is tried at the other numbers of the
block; a knob no changed value of which composes counts for every job of the experiment: the
safe side.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airfl.params.config import flatten, get_dotted, set_dotted
from airfl.core.experiments import Experiment
from airfl.pipeline import stage_table
from airfl.pipeline.stage_table import curve_stages


def block_view(stage: str, block: dict[str, Any], curve: str | None = None,
               panel_keys: tuple[str, ...] = (), derivation: Any = None,
               shared: dict[str, Any] | None = None, evaluation: str | None = None,
               training_metrics: bool | None = None) -> Any:
    """The part of an experiment's resolved block a job of `stage` reads: what
    `airfl <stage>` takes from `Experiment.params` (stages/*.py), the stage's `view` in the
    stage table (`stage_table`). `curve`: a curve's jobs; `panel_keys`: the experiment's
    figure-only tags, left out of a curve before the figure stage; `derivation` (an
    experiments.Derivation) and `shared` (the experiment's `shared_keys` as params.yaml writes
    them): a `derive` job's. A train job's rule also carries the rounds its readers declare
    (`evaluation`: `Experiment.evaluation`) and whether they read the training metrics
    (`training_metrics`: `Experiment.measures_training`), so that a panel that starts drawing a
    curve's every evaluation, or its training loss, reruns its train job; they are no params.yaml leaf, so `derive` leaves them out
    (DVC compares a grid as a whole: a new grid point would rerun every curve it tags) and the
    job's manifest holds them as a value (`dag.Job.declared`)."""
    view = stage_table.stage(stage).view
    if view is None:
        raise ValueError(f"no view for stage {stage!r}")
    return view(block, curve=curve, panel_keys=panel_keys, derivation=derivation, shared=shared,
                evaluation=evaluation, training_metrics=training_metrics)


def shared_sections(experiment: Experiment, params: dict[str, Any]) -> dict[str, Any]:
    """The sections of params.yaml a wing's panels share (`Experiment.shared_keys`), as written."""
    return {key: get_dotted(params, key) for key in experiment.shared_keys}


class _Composed:
    """The params and the experiment's block they compose (`stage_table.Context`): which jobs
    of an experiment's stages exist under these params."""

    def __init__(self, params: dict[str, Any], block: dict[str, Any]):
        self.params, self._block = params, block

    def block(self, experiment: Experiment) -> dict[str, Any]:
        return self._block


def experiment_views(experiment: Experiment, params: dict[str, Any]) -> dict[tuple, str]:
    """(stage, curve or None) -> the job's view, canonical JSON (to compare)."""
    block = experiment.params(params)
    composed = _Composed(params, block)
    views = {(s.name, None): block_view(s.name, block) for s in stage_table.STAGES
             if s.scope == "experiment" and len(s.args) == 1 and s.job_args(composed, experiment)}
    for derivation in experiment.active_derivations(block["curves"]):
        views[("derive", derivation.name)] = block_view("derive", block, derivation=derivation,
                                                        shared=shared_sections(experiment, params))
    for curve in block["curves"]:
        for stage in (s.name for s in curve_stages()):
            views[(stage, curve)] = block_view(stage, block, curve, experiment.panel_keys)
    return {job: json.dumps(view, sort_keys=True, default=str) for job, view in views.items()}


def _changed(value: Any) -> list[Any]:
    """Other values of a leaf (a list: one element more, and each element left out: what
    a grid point does to the jobs of the others)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1]
    if isinstance(value, float):
        return [value * 1.5 + 0.25 if math.isfinite(value) else 1.0]
    if isinstance(value, str):
        return [value + "~"]
    if value is None:
        return [1]
    if isinstance(value, list):
        if not value:
            return [[1]]
        return [[*value, _changed(value[-1])[0]],
                *([*value[:i], *value[i + 1:]] for i in range(len(value)))]
    if isinstance(value, dict):                 # an empty mapping (flatten's leaf)
        return [{**value, "~": 1}]
    return [repr(value)]


def _wing_key(experiment: Experiment) -> str:
    return experiment.config_key.split(".")[0]


def _numbers(block: dict[str, Any]) -> list[float]:
    """The numbers of the wing's grids (its lists): fallback values for a knob whose plain
    perturbation the wing cannot compose (a value that must name a grid point)."""
    found: set[float] = set()
    for value in flatten(block).values():
        for item in value if isinstance(value, list) else []:
            if isinstance(item, (int, float)) and not isinstance(item, bool) \
                    and math.isfinite(item):
                found.add(item)
    return sorted(found)


def _views_with(experiment: Experiment, params: dict[str, Any], wing: str, key: str,
                values: list[Any]) -> list[dict[tuple, str]]:
    """The experiment's views with `key` set to each value it can compose."""
    composed = []
    for value in values:
        trial = {**params, wing: copy.deepcopy(params[wing])}
        set_dotted(trial, key, value)
        try:
            composed.append(experiment_views(experiment, trial))
        except Exception:                   # noqa: BLE001 (the wing rejects this value)
            continue
    return composed


@contextmanager
def _datasets_present(answer: bool, asked: list[bool]) -> Iterator[None]:
    """Compose as if every dataset were (or none were) on this machine. A wing may swap in a
    substitute for a missing dataset (CDPB's `offline_substitute`); dvc.yaml must not depend on
    the machine that generates it, so `derive` takes the union over both answers."""
    import airfl.data as data
    import airfl.data.fetch as fetch

    # patched where it is looked up: the package's name and fetch's own (substitute_if_missing)
    modules = (data, fetch)
    originals = [module.dataset_present for module in modules]

    def present(*args: Any, **kwargs: Any) -> bool:
        asked.append(True)
        return answer

    for module in modules:
        module.dataset_present = present
    try:
        yield
    finally:
        for module, original in zip(modules, originals):
            module.dataset_present = original


def derive(experiment: Experiment, params: dict[str, Any]) -> dict[tuple, list[str]]:
    """(stage, curve or None) -> the sorted leaf keys of the wing's params.yaml block whose
    value the job's view depends on (module docstring), the same on every machine: a wing
    that asks whether a dataset is present is derived under both answers, keys united."""
    asked: list[bool] = []
    with _datasets_present(True, asked):
        keys = _derive(experiment, params)
    if not asked:
        return keys
    with _datasets_present(False, asked):
        absent = _derive(experiment, params)
    return {job: sorted({*keys[job], *absent.get(job, [])}) for job in keys}


def _derive(experiment: Experiment, params: dict[str, Any]) -> dict[tuple, list[str]]:
    """`derive` on this machine's (or the patched) view of which datasets are present.
    A knob none of whose perturbations composes counts for every job (the safe side)."""
    wing = _wing_key(experiment)
    base = experiment_views(experiment, params)
    found: dict[tuple, set[str]] = {job: set() for job in base}
    for key, value in flatten(params[wing], f"{wing}.").items():
        composed = _views_with(experiment, params, wing, key, _changed(value))
        if not composed and isinstance(value, (int, float)) and not isinstance(value, bool):
            others = sorted((n for n in _numbers(params[wing]) if n != value),
                            key=lambda n: abs(n - value))
            composed = _views_with(experiment, params, wing, key, others[:8])
        for job, view in base.items():
            if not composed or any(job in views and views[job] != view for views in composed):
                found[job].add(key)
    return {job: sorted(keys) for job, keys in found.items()}


def lift(key: str, raw: dict[str, Any]) -> str | None:
    """The longest prefix of `key` written in params.yaml (DVC reads the file as written; a
    key only the schema's defaults supply is tracked through its nearest written parent)."""
    node, parts = raw, []
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
        parts.append(part)
    return ".".join(parts) or None
