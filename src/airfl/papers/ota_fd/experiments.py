"""OTA-FD's figures (spec shared/specs/ota_fd.md §7): X1 on CNN-MNIST (step 1 of issue 15), its
claims checked on the stored figure data (:mod:`.claims_x1`).

Everything in X1 beyond the appendix is reconstructed [R] (spec §7: the main text and its two
figures were not available): the methods, the eps sweep, the channel and SNR, gamma, eta_0.
"""

from __future__ import annotations

from typing import Any

from airfl.experiments import Claim, Experiment, FigureSpec
from airfl.papers.ota_fd import claims_x1 as cx
from airfl.papers.ota_fd import schemes  # noqa: F401  (the scheme kind)
from airfl.papers.ota_fd.setup import x1_block
from airfl.papers.ota_fd.training import run_fd_trial
from airfl.styles import register_styles

NAMES = {"otafd_prop": "OTA-FD (DP, proposed)", "fd_ota_nodp": "OTA FD without DP",
         "fd_noiseless": "Noiseless FD", "local_only": "Local only"}
register_styles({"OTA FD without DP": ("#1f77b4", "^"), "Noiseless FD": ("#000000", "o"),
                 "Local only": ("#7f7f7f", "s")})


def curve_label(curve: str, params: dict[str, Any]) -> str:
    if params["method"] == "otafd_prop":
        return f"OTA-FD, ε = {params['eps_full']:g} (full scale)"
    return NAMES[params["method"]]


def _dp_only(curve: str, params: dict[str, Any]) -> bool:
    return params["method"] == "otafd_prop"


ROUNDS = dict(x="round", xlabel="FD round t")
ACC = dict(y="test_accuracy", ylabel="Test accuracy (mean over WDs)")
CAPTION_R = (" Reconstructed [R]: methods, ε sweep, Rayleigh channel at 10 dB SNR, γ = 1, "
             "η_0; quick profile: 20 % data (222 + 9×2 per WD), E = 5 steps of 48, ε scaled to "
             "stay noise-equivalent (spec 9).")

X1 = Experiment(
    paper="ota_fd", figure="x1", config_key="ota_fd.x1",
    title="X1: CNN-MNIST, test accuracy vs round",
    description=("Federated distillation of 10 WDs (one dominant class each) sharing per-class "
                 "soft labels over the air with the Prop. 1 transceiver and the Theorem 2 DP "
                 "constraint, against OTA FD without DP, noiseless FD and local training."
                 + CAPTION_R),
    figure_spec=FigureSpec(**ROUNDS, **ACC),
    extra_figures=(
        FigureSpec(x="channel_uses", **ACC, name="x1_channel_uses",
                   xlabel="Cumulative uplink channel uses (K² = 100 per FD round)",
                   title="X1: test accuracy vs cumulative channel uses",
                   curves=lambda c, p: p["method"] != "local_only"),
        FigureSpec(x="param_eps_full", **ACC, final=True, name="x1_eps", logx=True,
                   curves=_dp_only, label=lambda c, p: "OTA-FD (DP, proposed)",
                   xlabel="Privacy budget ε (full-scale equivalent, δ = 1e-8)",
                   title="X1: final test accuracy vs ε (local only / noiseless: see claims)"),
        FigureSpec(**ROUNDS, y="eps_real_ratio_max", ylabel="Realised ε_i / target ε_i (max)",
                   name="x1_privacy", curves=_dp_only,
                   title="X1: realised privacy (paper's formula, worst round so far)"),
    ),
    label=curve_label, compose=x1_block, shared_keys=("ota_fd.setting",),
    curve_key=lambda curve: "ota_fd.x1", privacy=False, trainer=run_fd_trial,
    claims=(
        Claim("x1_dp_beats_local", "Question of the spec's prototype: does DP OTA-FD beat "
              "local-only training, and from which ε on?", cx.dp_beats_local),
        Claim("x1_distillation_helps", "Noiseless FD beats local-only training (the value of "
              "sharing knowledge).", cx.distillation_helps),
        Claim("x1_cost_of_dp", "Noiseless FD >= OTA FD without DP >= OTA-FD with DP at the "
              "smallest ε (channel noise, then DP noise, cost accuracy).", cx.cost_of_dp),
        Claim("x1_tradeoff", "Learning-privacy trade-off: OTA-FD accuracy rises with ε "
              "(abstract claim (i), monotone up to trial noise).", cx.tradeoff),
        Claim("x1_privacy", "The proposed design meets every WD's budget: realised ε_i <= ε_i "
              "(Theorem 2, paper's formula, spec 5.4).", cx.privacy_met, "x1_privacy"),
    ))

EXPERIMENTS = (X1,)
ANALYTIC: tuple = ()
