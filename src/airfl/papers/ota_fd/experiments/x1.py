"""OTA-FD's X1 on CNN-MNIST, all methods, its claims checked on the stored figure data
(:mod:`airfl.papers.ota_fd.claims.x1`, :mod:`airfl.papers.ota_fd.claims.x2_x7`).

Everything in X1 beyond the appendix is reconstructed [R] (the main text and its two
figures were not available): the methods, the eps sweep, the channel and SNR, gamma, eta_0.
"""

from __future__ import annotations

from typing import Any


from airfl.core.experiments import Claim, Experiment, FigureSpec
from airfl.papers.ota_fd.claims import x2_x7 as cm
from airfl.papers.ota_fd.claims import x1 as cx
from airfl.papers.ota_fd.experiments import x2_x7 as more
from airfl.papers.ota_fd.schemes import FL
from airfl.papers.ota_fd.run_blocks import x1_block
from airfl.papers.ota_fd.distillation import run_fd_trial
from airfl.figures.styles import register_styles

NAMES = {"otafd_prop": "OTA-FD (DP, proposed)", "fd_ota_nodp": "OTA FD without DP",
         "fd_noiseless": "Noiseless FD", "local_only": "Local only"}
register_styles({"OTA-FD (DP, proposed)": ("#d62728", "*"), "OTA-FD": ("#d62728", "*"),
                 "OTA FD without DP": ("#1f77b4", "^"), "Noiseless FD": ("#000000", "o"),
                 "Local only": ("#7f7f7f", "s")}, proposed=("OTA-FD (DP, proposed)", "OTA-FD"))


register_styles({"Digital FD, local DP": ("#ff7f0e", "v"),
                 "OTA-FD, uniform weights": ("#9467bd", "P"),
                 "OTA-FD, artificial noise": ("#17becf", "X")})


def curve_label(curve: str, params: dict[str, Any]) -> str:
    if params.get("benchmark") or params["method"] in FL:
        return more.label(curve, params)
    if params["method"] == "otafd_prop":
        return f"OTA-FD, ε = {params['eps_full']:g} (full scale)"
    return NAMES[params["method"]]


def _dp_only(curve: str, params: dict[str, Any]) -> bool:
    return params["method"] == "otafd_prop" and not params.get("benchmark")


ROUNDS = dict(x="round", xlabel="FD round t")
ACC = dict(y="test_accuracy", ylabel="Test accuracy (mean over WDs)")
CAPTION_R = (" Reconstructed [R]: methods, ε sweep, Rayleigh channel at 10 dB SNR, γ = 1, "
             "η_0; quick profile: 20 % data (222 + 9×2 per WD), E = 5 steps of 48, ε scaled to "
             "stay noise-equivalent.")

X1 = Experiment(
    paper="ota_fd", figure="x1", config_key="ota_fd.x1",
    title="X1: CNN-MNIST, test accuracy vs round",
    description=("Federated distillation of 10 WDs (one dominant class each) sharing per-class "
                 "soft labels over the air with the Prop. 1 transceiver and the Theorem 2 DP "
                 "constraint, against OTA FD without DP, noiseless FD, local training and the "
                 "FL benchmarks (OTA-FL with DP at ε_i ~ U(1e6, 1e7), noiseless FL; one global "
                 "model, D = 21,680 channel uses per round)."
                 + CAPTION_R),
    figure_spec=FigureSpec(**ROUNDS, **ACC, curves=more.trained,
                           columns=more.SHARED_NOISE_COLUMNS),
    derivations=(more.ETA0,),
    extra_figures=(
        FigureSpec(x="channel_uses", **ACC, name="x1_channel_uses",
                   xlabel="Cumulative uplink channel uses (FD: K² = 100 per round; FL: D = "
                          "21,680)",
                   title="X1: test accuracy vs cumulative channel uses",
                   curves=lambda c, p: p["method"] != "local_only" and more.trained(c, p)),
        FigureSpec(x="param_eps_full", **ACC, final=True, name="x1_eps", logx=True,
                   curves=_dp_only, label=lambda c, p: "OTA-FD (DP, proposed)",
                   xlabel="Privacy budget ε (full-scale equivalent, δ = 1e-8)",
                   title="X1: final test accuracy vs ε (local only / noiseless: see claims)"),
        FigureSpec(**ROUNDS, y="eps_real_ratio_max", ylabel="Realised ε_i / target ε_i (max)",
                   name="x1_privacy",
                   curves=lambda c, p: p["method"] in ("otafd_prop", "otafd_uniformw",
                                                       "otafl_dp"),
                   title="X1: realised privacy (paper's formula, worst round so far)"),
    ),
    label=curve_label, compose=x1_block, trainer=run_fd_trial,
    claims=(
        Claim("x1_fd_vs_fl", "FD reaches accuracy competitive with FL with ≈ 217x fewer uplink "
              "channel uses per round (noiseless FD vs noiseless FL, the clipped FL update "
              "without noise; one step-size rule for both; competitive: within 5 pp, our "
              "tolerance, the abstract gives none).",
              cm.competitive("fd_noiseless", "fl_noiseless")),
        Claim("x1_dp_fd_vs_dp_fl", "DP OTA-FD at ε = 0.1 against OTA-FL with DP at its own "
              "budgets ε_i ≥ 1e6 (competitive: within 5 pp, our tolerance).",
              cm.competitive("otafd_prop_e0p1", "otafl_dp")),
        Claim("x1_dp_beats_local", "Our question (not the paper's): does DP OTA-FD beat "
              "local-only training, and from which ε on?", cx.dp_beats_local),
        Claim("x1_distillation_helps", "Noiseless FD beats local-only training (the value of "
              "sharing knowledge).", cx.distillation_helps),
        Claim("x1_cost_of_dp", "Noiseless FD >= OTA FD without DP >= OTA-FD with DP at the "
              "smallest ε (channel noise, then DP noise, cost accuracy).", cx.cost_of_dp),
        Claim("x1_tradeoff", "Learning-privacy trade-off: OTA-FD accuracy rises with ε "
              "(abstract claim (i), monotone up to trial noise).", cx.tradeoff),
        Claim("x1_shared_noise", "OTA-FD beats digital FD with local DP at the same ε (the "
              "benefit of the shared OTA noise), tested at the ε where the run is DP-limited "
              "(OTA-FD's mean noise ν at most digital's; Prop. 1's Case II).", cm.shared_noise),
        Claim("x1_weighting", "OTA-FD's B_i^k/B^k weighting beats uniform weights 1/M at the "
              "same ε.", cx._versus("otafd_uniformw", True)),
        Claim("x1_an_same", "The artificial-noise member of Prop. 1's family gives the same "
              "accuracy as P2 = 0 (same ν; the paired interval within ±0.5 pp, our "
              "tolerance).",
              cx._versus("otafd_an", False)),
        Claim("x1_privacy", "The proposed design meets every WD's budget: realised ε_i <= ε_i "
              "(Theorem 2, paper's formula).", cx.privacy_met, "x1_privacy"),
    ))
