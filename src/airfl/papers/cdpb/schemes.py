"""CDPB's strategies as training schemes (Fig. 4): CDPB-i, CDPB-n, CDPB-mixed(beta) and the
gamma-bar, h_min, IS and Noise-Free baselines (paper (10)-(19), Sec. V).

Design (once, before training, from the channel distribution only): the strategy's
rho (design.strategy_rho) and, for the CDPB variants, the whole Algorithm-3 artifact.
Aggregation (every round): clients clip their model delta to W_clip and divide by it
(W = 1), the round's realised gains |h|^2 [N] decide who is reliable, the server's estimate of
(18)-(19) is scaled back by W_clip. Coins come from the round's `sampling` stream and noise from
its `noise` stream, so every strategy of a trial sees the same gains (common random numbers).
The round record carries two per-round accountings for the privacy stage:
`privacy`, the paper's claim (Theorem 1 at the design's expected inputs, with
sigma_q^2 as the mechanism's variance), and `privacy_simulated`, the mechanism the round
simulates (the Poisson-subsampled Gaussian at the per-coordinate variance of its noise under
`noise_variance`, total: sigma_q^2 / d, per_coordinate: sigma_q^2; privacy.mechanism_variance).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.papers.cdpb.aggregation import RoundDesign, aggregate, normalise_updates
from airfl.papers.cdpb.design import design_from_params, strategy_rho
from airfl.papers.cdpb.privacy import privacy_event, simulated_privacy_event
from airfl.papers.cdpb.setting import CdpbSetting

SETTING_KEYS = ("P", "h_bar", "W", "M", "G", "mu", "alpha", "sigma_z2", "lam1", "lam2",
                "gamma_bar", "eps_bar", "q_IS", "rdp_bound", "stage2_mode", "stage2_solver",
                "stage1_rho_gamma")


class CdpbStrategy(Scheme):
    """params: strategy, beta (CDPB-mixed only), w_clip, simulation, noise_variance (total |
    per_coordinate, default total), and the analytic setting
    (SETTING_KEYS, from params.yaml `cdpb.analytic`); K is the experiment's number of devices.
    With `change_every` and `h_bar_range` (Fig. 8), the channel distribution changes."""

    kind = "cdpb"

    def _analytic(self, num_devices: int) -> dict[str, Any]:
        return {**{k: self.params[k] for k in SETTING_KEYS}, "K": num_devices}

    def design(self, context: DesignContext) -> dict[str, Any]:
        analytic = self._analytic(context.num_devices)
        strategy, beta = self.params["strategy"], self.params.get("beta")
        rho, design = strategy_rho(analytic, strategy, beta)
        out = {"strategy": strategy, "beta": beta, "rho": rho,
               "tau_opt": design.tau_opt if design is not None else None,
               "algorithm3": design.to_dict() if design is not None else None,
               "setting": analytic}
        if "change_every" in self.params:
            out["changing"] = changing_design(analytic, strategy, beta, self.params)
        return out

    def aggregate(self, updates, state: RoundState, design):
        analytic, rho, extra = design["setting"], design["rho"], {}
        gains = state.channel_power.double()
        if "changing" in design:
            analytic, rho, gains, extra = redesigned_round(design, state, gains)
        setting = CdpbSetting.from_dict(analytic)
        strategy, beta = design["strategy"], design["beta"]
        if "w_clip" not in self.params:
            raise ValueError("cdpb scheme: w_clip missing; the experiment's `calibrate` stage "
                             "measures it (results/calibration/<experiment>.json)")
        w_clip = float(self.params["w_clip"])
        reading = self.params.get("noise_variance", "total")
        normalised = normalise_updates(updates.double(), w_clip)
        round_design = RoundDesign.from_setting(setting, strategy, rho, beta,
                                                noise_variance=reading)
        estimate, record = aggregate(normalised, gains, round_design, state.streams("noise"),
                                     self.params.get("simulation", "efficient"),
                                     coin_generator=state.streams("sampling"))
        d = int(updates.shape[1])
        record.update(participants=record["n_participants"], latency_s=0.0,
                      privacy=[privacy_event(setting, strategy, rho, beta).to_dict()],
                      privacy_simulated=[simulated_privacy_event(setting, strategy, rho, beta,
                                                                 reading, d).to_dict()])
        record.update(extra)
        return (w_clip * estimate).to(updates.dtype), record


# --------------------------------------------------------------------------------------------
# Fig. 8: a channel distribution that changes during training (RECONSTRUCTION)
# --------------------------------------------------------------------------------------------

def changing_design(analytic: dict[str, Any], strategy: str, beta: float | None,
                    params: dict[str, Any]) -> dict[str, Any]:
    """What Fig. 8's server needs before training: the change period, the range of the mean gain
    and the unit kappa of a recomputation's cost, kappa = 1 / |T_i(h_bar = 1)| (both
    variants pay kappa |T_s| time units per recomputation; a CDPB-i one costs about a round)."""
    reference = design_from_params({**analytic, "h_bar": 1.0}, "cdpb_i")
    return {"change_every": int(params["change_every"]),
            "h_bar_range": [float(v) for v in params["h_bar_range"]],
            "kappa": 1.0 / len(reference.feasible_set)}


@lru_cache(maxsize=4096)
def _design_at(h_bar: float, strategy: str, beta: float | None, frozen: tuple) -> tuple:
    """(rho_opt, |T|) of Algorithm 3 at one mean gain (cached: a trial revisits none, but the
    strategies and trials of a job share the server's computations)."""
    design = design_from_params({**dict(frozen), "h_bar": h_bar}, strategy, beta)
    return float(design.rho_opt), len(design.feasible_set)


def redesigned_round(design: dict[str, Any], state: RoundState, unit_gains: torch.Tensor):
    """This round's mean gain h_bar (drawn once per period, seeded per (trial, period) so both
    variants see the same sequence), the gains |h|^2 = h_bar Exp(1) (the round's channel draw,
    drawn with unit mean), the variant's rho for it, and the time the round costs: 1 unit of
    training plus kappa |T_s| when the server re-runs Algorithm 3 (first round of a period)."""
    changing = design["changing"]
    period = (state.round_index - 1) // changing["change_every"]
    low, high = changing["h_bar_range"]
    h_bar = float(state.streams.trial_numpy("distribution", period).uniform(low, high))
    analytic = {**design["setting"], "h_bar": h_bar}
    rho, size = _design_at(h_bar, design["strategy"], design["beta"],
                           tuple(sorted(design["setting"].items())))
    recomputed = (state.round_index - 1) % changing["change_every"] == 0
    cost = 1.0 + (changing["kappa"] * size if recomputed else 0.0)
    # the loop's clock (time_s) counts these normalised time units, not seconds
    extra = {"h_bar": h_bar, "T_size": size, "recomputed": recomputed, "latency_s": cost}
    return analytic, rho, unit_gains * h_bar, extra
