"""A curve's effective parameters, assembled in one place for every stage that runs a curve.

The steps, in order: declared (the curve as the experiment's composed block states it), tuned
(stage `tune`: the searched step size and scheme parameters, or the lead curve's step size;
`tuning.tuned_curve`), calibrated (stage `calibrate`: what the experiment measures at theta_0,
e.g. CDPB's clip norm; `runs.calibrated`), derived (stage `derive`: parameters computed from
other curves' runs, e.g. LAPA's DDPG powers; `runs.derived`). The design stage designs without
the calibration (its jobs do not wait for the calibrate job), and the train stage checks the
stored design against exactly those parameters before training with the calibrated ones.
The clients' local step size is no curve parameter: it belongs to the local-work settings the
clients train with (the block's `training.lr`), and a scheme that reads it is given that one
(`Scheme.uses_local_lr`, `registry.build_scheme`).
"""

from __future__ import annotations

from typing import Any

from airfl.core.experiments import Experiment
from airfl.pipeline.runs import calibrated, derived
from airfl.pipeline.tuning import tuned_curve


def effective_curve(experiment: Experiment, block: dict[str, Any], curve: str, *,
                    with_calibration: bool) -> tuple[dict[str, Any], float]:
    """(the curve's parameters, the server step size): declared -> tuned -> calibrated (only
    `with_calibration`: the train stage's) -> derived."""
    tuned, server_lr = tuned_curve(experiment, block, curve)
    if with_calibration:
        tuned = calibrated(experiment, tuned)
    return derived(experiment, curve, tuned, block["curves"]), server_lr
