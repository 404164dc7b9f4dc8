"""CDPB's strategies as training schemes (Fig. 4): CDPB-i, CDPB-n, CDPB-mixed(beta) and the
gamma-bar, h_min, IS and Noise-Free baselines (paper (10)-(19), Sec. V; spec 3, 6).

Design (once, before training, from the channel distribution only, spec 3.0): the strategy's
rho (design.strategy_rho) and, for the CDPB variants, the whole Algorithm-3 artifact.
Aggregation (every round): clients clip their model delta to W_clip and divide by it (spec 0,
W = 1), the round's realised gains |h|^2 [N] decide who is reliable, the server's estimate of
(18)-(19) is scaled back by W_clip. Coins come from the round's `sampling` stream and noise from
its `noise` stream, so every strategy of a trial sees the same gains (common random numbers).
The round record carries the strategy's per-round RDP (Theorem 1 at the design's expected
inputs, spec 4.3) for the privacy stage.
"""

from __future__ import annotations

from typing import Any

import torch

from airfl.core.scheme import DesignContext, RoundState, Scheme, register_scheme
from airfl.papers.cdpb.aggregation import RoundDesign, aggregate, normalise_updates
from airfl.papers.cdpb.design import strategy_rho
from airfl.papers.cdpb.privacy import privacy_event
from airfl.papers.cdpb.setting import CdpbSetting

SETTING_KEYS = ("P", "h_bar", "W", "M", "G", "mu", "alpha", "sigma_z2", "lam1", "lam2",
                "gamma_bar", "eps_bar", "q_IS", "rdp_bound", "stage2_mode", "stage2_solver",
                "stage1_rho_gamma")


@register_scheme
class CdpbStrategy(Scheme):
    """params: strategy, beta (CDPB-mixed only), w_clip, simulation, and the analytic setting
    (SETTING_KEYS, from params.yaml `cdpb.analytic`); K is the experiment's number of devices."""

    kind = "cdpb"

    def _analytic(self, num_devices: int) -> dict[str, Any]:
        return {**{k: self.params[k] for k in SETTING_KEYS}, "K": num_devices}

    def design(self, context: DesignContext) -> dict[str, Any]:
        analytic = self._analytic(context.num_devices)
        strategy, beta = self.params["strategy"], self.params.get("beta")
        rho, design = strategy_rho(analytic, strategy, beta)
        return {"strategy": strategy, "beta": beta, "rho": rho,
                "tau_opt": design.tau_opt if design is not None else None,
                "algorithm3": design.to_dict() if design is not None else None,
                "setting": analytic}

    def aggregate(self, updates, state: RoundState, design):
        analytic = design["setting"]
        setting = CdpbSetting.from_dict(analytic)
        strategy, beta, rho = design["strategy"], design["beta"], design["rho"]
        w_clip = float(self.params["w_clip"])
        normalised = normalise_updates(updates.double(), w_clip)
        round_design = RoundDesign.from_setting(setting, strategy, rho, beta)
        estimate, record = aggregate(normalised, state.channel_power.double(), round_design,
                                     state.streams("noise"), self.params.get("simulation",
                                                                             "efficient"),
                                     coin_generator=state.streams("sampling"))
        record.update(participants=record["n_participants"], latency_s=0.0,
                      privacy=[privacy_event(setting, strategy, rho, beta).to_dict()])
        return (w_clip * estimate).to(updates.dtype), record
