"""A run that another stored run provably equals is copied, not computed again.

A curve that trains with the parameters a derivation chose from its source runs can be one of
those runs exactly: OTA-FD's noiseless FD trains at the eta_0 its calibration runs chose, and
the chosen calibration run is noiseless FD at that eta_0 (OTA-FD Appendix, the eta_0
calibration: `papers/ota_fd/calibration.py`). A train job's output is a function of what its
run info records (seed, profile, the experiment's settings, the curve's effective parameters,
the server step size, the evaluated rounds, the library versions) and of its stored designs;
the curve's name only labels it (a scheme's name enters no computation: `core.scheme`). So when
a source run of the curve's derivations was made with exactly these and on equal designs, its
run table is this curve's, byte for byte, and its records are, but for the curve's name.

Both jobs already stand in this order in the DAG (the train job waits for the derive job, which
reads the source runs), and a change that would make the source differ (code, device, any of
the parameters) reruns it before the derive job; the comparison is made anyway, on the stored
files, so a stale or hand-edited source is trained over, never copied.
"""

from __future__ import annotations

from typing import Any

from airfl.core.experiments import Experiment
from airfl.runtime.io import json_form, read_json, write_json, write_text
from airfl.pipeline import paths


def twin_run(experiment: Experiment, block: dict[str, Any], curve: str,
             made: dict[str, Any], designs: list[dict[str, Any]]) -> str | None:
    """The source curve (of `curve`'s derivations) whose stored run was made with exactly the
    run info `made` (`io.provenance` of the job's parameters) on the same `designs` (one per
    trial), or None."""
    wanted = json_form(made)
    for derivation in experiment.derivations_of(curve, block["curves"]):
        sources, _ = derivation.resolve(block["curves"])
        for source in sources:
            try:
                stored = read_json(paths.run_info(experiment.id, source))["provenance"]
                theirs = read_json(paths.design(experiment.id, source))["trials"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            ran_with = {**stored, "params": {k: v for k, v in stored.get("params", {}).items()
                                             if k != "declared_curve"}}
            if ran_with == wanted and json_form(theirs[:len(designs)]) == json_form(designs) \
                    and paths.run_table(experiment.id, source).is_file() \
                    and paths.run_records(experiment.id, source).is_file():
                return source
    return None


def copy_run(experiment_id: str, source: str, curve: str) -> None:
    """The source's run table (its bytes) and records (the curve's name set) as `curve`'s."""
    write_text(paths.run_table(experiment_id, curve),
               paths.run_table(experiment_id, source).read_text())
    records = read_json(paths.run_records(experiment_id, source))
    write_json(paths.run_records(experiment_id, curve), {**records, "curve": curve})
