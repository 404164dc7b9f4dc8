"""CDPB's training figure (Fig. 4, spec 7 and 8): every strategy trains the same federation
with the same channel and data draws; params.yaml `cdpb.fig4` with the analytic setting of
`cdpb.analytic` (each strategy's rho is designed from it, K = its number of clients).

The paper trains ResNet-18 (GroupNorm) on CIFAR-100 with K = 100 IID clients. CIFAR cannot be
downloaded on the machines this pipeline is tested on, so the quick profile substitutes
Fashion-MNIST and a small CNN (the figure's caption and CSV name the dataset and model).
"""

from __future__ import annotations

from typing import Any

from airfl.papers.cdpb.schemes import SETTING_KEYS


def _profiled(value: Any, profile: str) -> Any:
    """A {quick: ..., paper: ...} value resolved for the profile; other values as they are."""
    if isinstance(value, dict) and set(value) == {"quick", "paper"}:
        return value[profile]
    return value


def compose_fig4(params: dict[str, Any]) -> dict[str, Any]:
    """The generic run block of Fig. 4 (see airfl.experiments.Experiment.compose)."""
    section, profile = params["cdpb"], params["profile"]
    analytic, fig = section["analytic"], section["fig4"]
    pick = {k: _profiled(v, profile) for k, v in fig.items() if k != "scale"}
    setting = {k: analytic[k] for k in SETTING_KEYS}
    curves = {strategy: {"scheme": "cdpb", "strategy": strategy, "w_clip": pick["w_clip"],
                         "simulation": pick["simulation"], **setting}
              for strategy in pick["strategies"]}
    partition = {"kind": "iid"}
    if pick["samples_per_device"] is not None:
        partition["samples_per_device"] = pick["samples_per_device"]
    return {
        "dataset": pick["dataset"], "num_devices": analytic["K"], "partition": partition,
        "model": {"name": pick["model"], "l2": pick["weight_decay"], "engine": "auto"},
        "training": {"local_steps": pick["local_steps"], "batch_size": pick["batch_size"],
                     "lr": pick["lr"], "server_lr": 1.0},
        "channel": {"mean_gain": analytic["h_bar"]},      # i.i.d. Rayleigh, E[h] = h_bar
        "scale": fig["scale"][profile],
        "curves": curves,
    }
