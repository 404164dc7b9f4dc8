"""LAPA's training figures (quick = the paper's setting shrunk to the CI budget) as one
generic run block, so Figs. 4 and 5 share each trial's partition (the default 5 IID + 10
non-IID mix, IID devices drawn first) and common random numbers.

Curves (Fig. 4: practical channel, every device at P_0, no DP; Fig. 5: ideal channel):
  Fig. 4: ``fedavg`` (Benchmark 1), ``beda`` (Benchmark 2 = FedAdp), ``wasserstein``
          (Configuration 1), ``select_ser<x>`` (Configuration 2 at SER x, eq. 22);
  Fig. 5: ``nodp`` (Configuration 4), ``lapa_nu<v>``, ``uniform_nu<v>`` and ``arb_nu<v>``
          (Configuration 3, Benchmarks 3 and 4) at every noise level nu of the grid;
  Fig. 7 (practical channel, dynamic noise control): ``config5`` (LAPA + switching at DDPG's p*),
          ``lapa_avgp`` (LAPA + switching at p_bar) and ``arb_avgp`` (ARB at p_bar, artificial
          noise every round); their nu (the Fig. 7 privacy level) and config5's powers come from
          the derivation ``ddpg`` (power.py) on the Pilot A run ``lapa_nu4``;
  ``pilot_b`` (Pilot B, where `lapa.training.pilot_b` is on: the paper profile): LAPA
          over the ideal channel, artificial noise in every round, at the Fig. 7 privacy level
          (its nu from the derivation ``fig7_level``); its budget trajectory is what DDPG's
          surrogate freezes (the quick profile takes a shortcut: Pilot A rescaled).
All use the Wasserstein weights except the two benchmarks of Fig. 4 (Sec. V-B).

Partition: one per trial (`lapa.training.partition_per: trial`). Sec. V states no trial
procedure; our reading: each trial (seed) fixes the partition, placement, channel,
initialisation and noise, and within a trial every configuration shares them, so the spread
over trials includes the partition's. Figs. 4, 5 and 7 share each trial's
partition (one experiment). Model: the paper's CNN with its BatchNorm layer (Sec. V-A;
`cnn_mnist_bn`, q = 21,880).

Local work [M/I]: `local_steps` SGD steps from w^[t] with mini-batches of 10 % of
the *mean* local size, drawn with replacement (the core's batched engine trains all 15 devices
at once, which needs one batch size: a deviation from "10 % of each device's data, without
replacement"); the upload is the pseudo-gradient (w - w_k)/lam.
"""

from __future__ import annotations

from typing import Any

from airfl.params.declare import resolve

#: Pilot B's curve, the paper profile's source of DDPG's frozen budget trajectory
PILOT_B = "pilot_b"

#: q of each LAPA CNN `lapa.training.model` offers: `cnn_mnist_bn`, the paper's (Sec. V-A, with
#: its BatchNorm layer: 21,880), and `cnn_mnist` without it (21,840); a test checks both.
CNN_DIMS = {"cnn_mnist_bn": 21880, "cnn_mnist": 21840}


def token(value: float) -> str:
    """A number as a curve-name token: 0.1 -> 0p1, 1e-03 -> 0p001."""
    return f"{value:g}".replace(".", "p").replace("-", "m").replace("+", "")


def settings(params: dict[str, Any]) -> dict[str, Any]:
    """`lapa.training` resolved for the profile."""
    return {k: resolve(v, params["profile"]) for k, v in params["lapa"]["training"].items()}


def _curves(params: dict[str, Any], pick: dict[str, Any]) -> dict[str, dict[str, Any]]:
    lapa = params["lapa"]
    base = {"scheme": "lapa", "clip": pick["clip"], "delta": pick["delta"],
            "radio": lapa["radio"], "alloc": lapa["alloc"], "renormalize": pick["renormalize"],
            "aggregation": "wasserstein", "privacy": "none", "in_fig4": False, "in_fig5": False,
            "in_fig7": False}
    fig4 = {**base, "channel": "practical", "in_fig4": True}
    curves = {"fedavg": {**fig4, "aggregation": "fedavg"},
              "beda": {**fig4, "aggregation": "beda"},
              "wasserstein": dict(fig4)}
    for ser in pick["ser_thresholds"]:
        curves[f"select_ser{token(ser)}"] = {**fig4, "ser_threshold": ser}
    ideal = {**base, "channel": "ideal", "in_fig5": True}
    curves["nodp"] = {**ideal, "sigma_init2": 0.0}
    for nu in pick["nu_grid"]:
        for privacy in ("lapa", "uniform", "arb"):
            curves[f"{privacy}_nu{token(nu)}"] = {**ideal, "privacy": privacy, "nu": nu}
    control = lapa["control"]
    if 4 not in pick["nu_grid"]:
        raise ValueError(f"lapa.training.nu_grid: {pick['nu_grid']} must hold 4: Fig. 7's "
                         "Pilot A is the LAPA run at nu = 4")
    average = (control["p_min_w"] + control["p_max_w"]) / (2 * sum(lapa["radio"]["region_devices"]))
    fig7 = {**base, "channel": "practical", "in_fig7": True, "nu": 4.0}   # nu: derived
    curves["config5"] = {**fig7, "privacy": "lapa", "switching": True}     # powers: derived
    curves["lapa_avgp"] = {**fig7, "privacy": "lapa", "switching": True, "power_w": average}
    curves["arb_avgp"] = {**fig7, "privacy": "arb", "power_w": average}
    if pick["pilot_b"]:      # Pilot A's run at eps^T_7 (nu: derived, fig7_level)
        curves[PILOT_B] = {**ideal, "privacy": "lapa", "nu": 4.0, "in_fig5": False, "pilot": True}
    return curves


def compose_fmnist(params: dict[str, Any]) -> dict[str, Any]:
    """Fig. 4(b): the six Fig. 4 curves on Fashion-MNIST (lam = `fmnist_lr`, its own partition
    of the same 5 IID + 10 non-IID mix); the privacy figures are MNIST only."""
    block = compose(params, fmnist_pick(params))
    block["curves"] = {c: p for c, p in block["curves"].items() if p["in_fig4"]}
    return block


def compose(params: dict[str, Any], pick: dict[str, Any] | None = None) -> dict[str, Any]:
    """The generic run block (Experiment.compose) of the LAPA training experiment (MNIST)."""
    pick = pick or settings(params)
    scale = resolve(params["lapa"]["scale"], params["profile"])
    size_lo, size_hi = pick["size_range"]
    batch = max(1, round(pick["batch_fraction"] * (size_lo + size_hi) / 2))
    curves = _curves(params, pick)
    for curve in curves.values():               # Fig. 5's x: sigma_init^2 = (nu C / sqrt q)^2
        if "nu" in curve and not curve["in_fig7"] and not curve.get("pilot"):
            curve["sigma_init2"] = round((curve["nu"] * pick["clip"]) ** 2
                                         / CNN_DIMS[pick["model"]], 9)
    return {
        "dataset": pick["dataset"], "num_devices": sum(params["lapa"]["radio"]["region_devices"]),
        "input_normalization": pick["input_normalization"],
        "partition": {"kind": "mixed", "num_iid": pick["num_iid"],
                      "size_range": list(pick["size_range"])},   # 2 classes per non-IID device
        "partition_per": pick["partition_per"],      # trial: module docstring
        "model": {"name": pick["model"], "l2": 0.0, "engine": "auto",
                  "precision": pick.get("precision", "fp32")},
        "training": {"local_steps": pick["local_steps"], "batch_size": batch, "lr": pick["lr"],
                     "server_lr": 1.0, "local_epochs": None},
        # unused: the scheme draws LAPA's radio itself
        "channel": {"model": "rayleigh_mean_gain", "mean_gain": 1.0},
        "scale": scale, "curves": curves}


#: Fig. 6's four strategies: no DP and the three DP allocations at nu = 4
FIG6_CURVES = ("nodp", "lapa_nu4", "uniform_nu4", "arb_nu4")
#: Fig. 6's panels besides the default 5 + 10 (the paper's 3, 7, 9 and 0 IID devices, and our
#: 15 + 0): `lapa.training.fig6_mixes` picks among these per profile (schema enum)
FIG6_MIX_CHOICES = (0, 3, 7, 9, 15)


def fmnist_pick(params: dict[str, Any]) -> dict[str, Any]:
    """`lapa.training` for Fashion-MNIST: lam = fmnist_lr (Sec. V-A: 0.008), its normalisation."""
    pick = settings(params)
    return {**pick, "lr": pick["fmnist_lr"], "dataset": "fashion_mnist",
            "input_normalization": pick["fmnist_normalization"]}


def mix_enabled(num_iid: int, fashion: bool = False):
    """Whether the Fig. 6 panel with `num_iid` IID devices runs in this profile
    (`lapa.training.fig6_mixes`; Fashion-MNIST: also `fmnist_privacy`)."""
    def enabled(params: dict[str, Any]) -> bool:
        pick = settings(params)
        return num_iid in pick["fig6_mixes"] and (not fashion or pick["fmnist_privacy"])
    return enabled


def fmnist_privacy_enabled(params: dict[str, Any]) -> bool:
    """Figs. 6(b) and 7(b) on Fashion-MNIST run where `lapa.training.fmnist_privacy` is on."""
    return bool(settings(params)["fmnist_privacy"])


def compose_mix(num_iid: int, fashion: bool = False):
    """Fig. 6's panel with `num_iid` IID devices (drawn first: our reading) and 15 - num_iid
    two-class devices: the four strategies at nu = 4 over the ideal channel, lam fixed per
    dataset (Sec. V-C). The 5 + 10 panels are drawn from the Fig. 5 runs (MNIST) and from the
    Fig. 7(b) experiment's nu = 4 runs (Fashion-MNIST) instead."""
    def build(params: dict[str, Any]) -> dict[str, Any]:
        pick = fmnist_pick(params) if fashion else settings(params)
        block = compose(params, {**pick, "num_iid": num_iid})
        block["curves"] = {c: p for c, p in block["curves"].items() if c in FIG6_CURVES}
        return block
    return build


def compose_fmnist_privacy(params: dict[str, Any]) -> dict[str, Any]:
    """Figs. 6(b) 5 + 10 and 7(b) on Fashion-MNIST: the four Fig. 6 strategies at
    nu = 4 (lapa_nu4 is Fig. 7(b)'s Pilot A), Pilot B where it runs, and the three Fig. 7 curves."""
    block = compose(params, fmnist_pick(params))
    block["curves"] = {c: p for c, p in block["curves"].items()
                       if c in FIG6_CURVES or p["in_fig7"] or p.get("pilot")}
    return block
