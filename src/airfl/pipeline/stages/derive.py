"""Stage `derive`: a step between two trainings of one experiment (experiments.Derivation).

It reads the stored designs and run records of the derivation's source curves, runs the wing's
`compute` (e.g. LAPA's DDPG power control trained on a pilot run's budget trajectory, LAPA
Sec. IV-C) and writes its JSON (the parameters its target curves train with, under "params",
plus a report), its table (CSV) and its arrays (NPZ), each atomically. The design and train
stages of the target curves merge the stored parameters (pipeline/runs.py `derived`).
"""

from __future__ import annotations

from typing import Any

import torch

from airfl.runtime.io import provenance, read_json, read_table, write_csv, write_json, write_npz
from airfl.pipeline import paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.stages import StageError
from airfl.pipeline.stage_params import declared


@declared("derive")
def run(params: dict[str, Any], experiment_id: str, name: str) -> None:
    torch.set_num_threads(params["threads"])
    experiment = get_experiment(experiment_id)
    try:
        derivation = experiment.derivation(name)
    except KeyError as error:
        raise StageError(str(error)) from None
    block = experiment.params(params)
    resolved = derivation.resolve(block["curves"])
    if resolved is None:
        raise StageError(f"derivation {experiment_id}:{name} has no source curves in this "
                         f"profile ({', '.join(derivation.sources)})")
    sources, targets = resolved
    inputs = {c: {"design": read_json(paths.design(experiment_id, c)),
                  "records": read_json(paths.run_records(experiment_id, c)),
                  "table": read_table(paths.run_table(experiment_id, c))}
              for c in sources}
    out = derivation.compute(params, block, inputs)
    missing = set(targets) - set(out["params"])
    if missing:
        raise StageError(f"derivation {experiment_id}:{name} returned no params for its targets "
                         f"{sorted(missing)}")
    write_csv(paths.derived(experiment_id, name, "csv"), out["table"])
    write_npz(paths.derived(experiment_id, name, "npz"), **out["arrays"])
    write_json(paths.derived(experiment_id, name), {
        "provenance": provenance({"seed": params["seed"], "profile": params["profile"],
                                  "experiment": {k: v for k, v in block.items() if k != "curves"},
                                  "sources": {c: block["curves"][c] for c in sources}}),
        "params": out["params"], "report": out.get("report", {})})
