"""The four methods of DP as a perk as one pipeline Scheme, kind ``dp_perk``.

Design (per trial, before training: offline, non-causal CSI): draw the trial's uplink
plan (distances, active sets I^(t), SIMO channels, (P1) combiners; :func:`.uplink.plan_uplink`
from the trial's own generators, so every curve of an experiment sees the same draws: common
random numbers) and, for AirFL-DP, the water-filled norms q_t* (Cor. IV.1 (49)); the stored
design holds the active sets, pi_t, q_t, the budget A, the perk window (P_thr of (51), P_full)
and both methods' achieved (eps, delta) under the paper's conversion (23) and the optimal one,
the whole allocation (``allocation``: :meth:`.design.AirflDesign.to_dict`) and, over the air, each
round's transmit scalars s_i = 1/(w^H h_i) of the chosen norm (``transmit_scalars``). Training
reads that stored design (:class:`.uplink.StoredRound`) and never redraws the plan (the
train stage reads what the design stage stored); the draws cost O(T m n) and (P1) per trial.

Rounds: only the K = r n active devices of I^(t) train (:meth:`participants`, the plan's sets);
their uploads ``theta_i - theta = -eta Delta_i`` (core units) are divided by ``-eta`` into the
paper's scaled differences Delta_i (4), aggregated by :mod:`.aggregation` (clip (6), over-the-air sum
with the effective receiver noise of ||w^(t)|| = q_t (9)-(10), noise from the round's ``noise``
stream, the same for every curve), and the estimate of (1/K) sum Delta_i goes back as
``-eta x estimate``, so the core's server step ``theta + 1.0 x update`` is (10).

Whose path gains (``uplink_gains``): ``own`` (default: every figure of the paper) places the
devices and computes Lambda_i from the curve's own radio parameters (``radius_m``,
``min_distance_m``, ``carrier_hz``, ``distance_mode``: Sec. V-A); ``context`` takes Lambda_i and
the distances from the design context's statistical CSI (``statistics.path_gain``, the
experiment's channel, e.g. the arena's) and then takes none of those four parameters; the cell
edge SNR it reports is then P Lambda_edge / sigma^2 with the context's reference gain.
"""

from __future__ import annotations

from typing import Any

import torch

from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState, Scheme

from .design import AirflDesign, clip_threshold, design_airfl_dp
from .aggregation import AGGREGATORS
from .uplink import (StoredRound, UplinkPlan, edge_snr_db, plan_uplink, snr_wc_db as snr_at_db,
                     trial_generators)

METHODS = tuple(AGGREGATORS)
OVER_THE_AIR = ("airfl_mimo", "airfl_dp")
UPLINK_GAINS = ("own", "context")
OWN_GEOMETRY = ("carrier_hz", "radius_m", "min_distance_m", "distance_mode")


class DpPerkScheme(Scheme):
    """Vanilla FL, FL w/ clipping, AirFL-MIMO or AirFL-DP (Sec. V-A) on the paper's uplink."""

    kind = "dp_perk"
    uses_future_channels = True           # the design reads the trial's channels (offline CSI)
    uses_local_lr = True                  # eta of (4) and (10): the local-work settings' step size

    def __init__(self, name: str, *, method: str, lr: float, power_w: float, antennas: int,
                 sample_ratio: float, clip_factor: float, sigma2_w: float, zf_columns: str,
                 beamformer: str, noise_model: str, dp_noise_convention: str, accountant: str,
                 delta: float, carrier_hz: float | None = None, radius_m: float | None = None,
                 min_distance_m: float | None = None, distance_mode: str | None = None,
                 uplink_gains: str = "own", eps_tilde: float | None = None,
                 snr_wc_db: float | None = None, **unused: Any):
        if method not in METHODS:
            raise ValueError(f"curves.{name}.method: {method!r}; allowed: {', '.join(METHODS)}")
        if uplink_gains not in UPLINK_GAINS:
            raise ValueError(f"curves.{name}.uplink_gains: {uplink_gains!r}; allowed: "
                             f"{', '.join(UPLINK_GAINS)}")
        geometry = dict(carrier_hz=carrier_hz, radius_m=radius_m, min_distance_m=min_distance_m,
                        distance_mode=distance_mode)
        unset = [k for k, v in geometry.items() if v is None]
        if uplink_gains == "own" and unset:
            raise ValueError(f"curves.{name}: uplink_gains own needs {', '.join(unset)} (its own "
                             "placement and path loss)")
        if uplink_gains == "context" and len(unset) < len(geometry):
            raise ValueError(f"curves.{name}: uplink_gains context takes the context's path "
                             f"gains; {', '.join(k for k, v in geometry.items() if v is not None)} "
                             "would be ignored: remove them")
        if method == "airfl_dp" and eps_tilde is None:
            raise ValueError(f"curves.{name}: airfl_dp needs eps_tilde (the budget eps/sqrt(d))")
        super().__init__(name, method=method, eps_tilde=eps_tilde, **unused)
        self.method, self.lr, self.eps_tilde, self.delta = method, float(lr), eps_tilde, delta
        self.radio = dict(power_w=float(power_w), antennas=int(antennas),
                          sample_ratio=float(sample_ratio), clip_factor=float(clip_factor),
                          sigma2_w=float(sigma2_w), zf_columns=zf_columns,
                          beamformer=beamformer, noise_model=noise_model,
                          dp_noise_convention=dp_noise_convention, accountant=accountant)
        if uplink_gains == "own":
            self.radio.update(carrier_hz=float(carrier_hz), radius_m=float(radius_m),
                              min_distance_m=float(min_distance_m), distance_mode=distance_mode)
        self.uplink_gains = uplink_gains
        self._trials: dict[tuple, tuple[UplinkPlan, AirflDesign]] = {}
        self._stored: tuple[dict, AirflDesign] | None = None   # (stored dict, parsed)

    # -- design ---------------------------------------------------------------------------

    def _plan(self, seed: int, experiment: str, trial: int, n_devices: int, rounds: int,
              dim: int, statistics: ChannelStatistics | None = None
              ) -> tuple[UplinkPlan, AirflDesign]:
        """The trial's plan and AirFL design (the design step only: training reads them from
        the stored design). ``statistics``: the context's, read only with uplink_gains
        context (its gains are then part of the key)."""
        given = None if self.uplink_gains == "own" else statistics
        key = (seed, experiment, trial, n_devices, rounds, dim) + (
            () if given is None else (tuple(given.path_gain.tolist()),
                                      tuple(given.distances_m.tolist())))
        if key not in self._trials:
            r = self.radio
            clip = clip_threshold(dim, r["clip_factor"])
            geometry = dict(path_gain=given.path_gain, distances_m=given.distances_m) \
                if given is not None else {k: r[k] for k in OWN_GEOMETRY}
            plan = plan_uplink(n_devices, r["sample_ratio"], r["antennas"], rounds, clip, dim,
                               r["power_w"], trial_generators(seed, trial, experiment),
                               zf_columns=r["zf_columns"], beamformer=r["beamformer"],
                               **geometry)
            design = design_airfl_dp(
                plan.pi, eps_tilde=self.eps_tilde, delta=self.delta, dim=dim, clip=clip,
                sample_ratio=r["sample_ratio"], sigma2=r["sigma2_w"], power_w=r["power_w"],
                noise_model=r["noise_model"], dp_noise_convention=r["dp_noise_convention"],
                accountant=r["accountant"])
            self._trials[key] = (plan, design)
        return self._trials[key]

    def _snr_db(self, power_w: float | None, statistics: ChannelStatistics) -> float | None:
        """The cell-edge SNR of a power: its own edge (Sec. V-A) or, with the context's gains,
        P Lambda_edge / sigma^2 at the context's reference (cell-edge) gain."""
        r = self.radio
        if power_w is None:
            return None
        if self.uplink_gains == "context":
            return float(snr_at_db(power_w, statistics.reference_gain, r["sigma2_w"]))
        return edge_snr_db(power_w, r["radius_m"], r["carrier_hz"], r["sigma2_w"])

    def design(self, context: DesignContext) -> dict[str, Any]:
        plan, design = self._plan(context.seed, context.experiment, context.trial,
                                  context.num_devices, context.rounds, context.dim,
                                  context.channel)
        stats = context.channel
        out: dict[str, Any] = {
            "plan": {"seed": context.seed, "experiment": context.experiment,
                     "trial": context.trial, "n_devices": context.num_devices,
                     "rounds": context.rounds, "dim": context.dim},
            "method": self.method, "active": plan.active.tolist(), "beamformer": plan.beamformer,
            "pi": list(design.pi), "snr_wc_db": self._snr_db(self.radio["power_w"], stats),
            "device_distances_m": plan.distances.tolist(),
            "allocation": design.to_dict()}      # what the aggregation reads (AirflDesign)
        if self.method in OVER_THE_AIR:
            full = design.to_dict()
            q = full["q"]                   # AirFL-MIMO: no DP target, so q = pi (P1)
            report = full["privacy_dp" if self.method == "airfl_dp" else "privacy_mimo"]
            out.update({"q": q, "privacy": report,
                        "raised_fraction": sum(a > b for a, b in zip(q, full["pi"])) / len(q),
                        "transmit_scalars": self._transmit_scalars(plan, design)})
        if self.method == "airfl_dp":
            out.update({
                "budget_A": full["budget_A"], "binding": full["binding"],
                "eps_tilde_target": self.eps_tilde,
                "power_threshold_w": full["power_threshold_w"],
                "power_full_w": full["power_full_w"],
                "snr_threshold_db": self._snr_db(full["power_threshold_w"], stats),
                "snr_full_db": self._snr_db(full["power_full_w"], stats)})
        return out

    def _transmit_scalars(self, plan: UplinkPlan, design: AirflDesign) -> dict[str, list]:
        """s_i = 1/(w^H h_i) [T, K] of the norms q_t this method uses (AirFL-MIMO: pi_t;
        AirFL-DP: q_t*, (49)), round by round as the aggregation computed them before, stored
        as real and imaginary parts: training needs no channels."""
        scalars = [plan.round(t).transmit_scalars(self._norm(plan.round(t).pi, design, t))
                   for t in range(plan.rounds)]
        return {"re": [z.real.tolist() for z in scalars], "im": [z.imag.tolist() for z in scalars]}

    def _norm(self, pi_t: float, design: AirflDesign, t: int) -> float:
        """q_t of the method: pi_t (AirFL-MIMO, (P1)) or the water-filled q_t* (AirFL-DP)."""
        return design.q[t] if self.method == "airfl_dp" else pi_t

    # -- rounds ---------------------------------------------------------------------------

    def participants(self, state: RoundState, design: dict[str, Any]) -> torch.Tensor:
        """I^(t): the plan's K active devices of this round (core rounds count from 1)."""
        return torch.tensor(design["active"][state.round_index - 1], dtype=torch.long)

    def aggregate(self, updates: torch.Tensor, state: RoundState, design: dict[str, Any]
                  ) -> tuple[torch.Tensor, dict[str, Any]]:
        airfl = self._allocation(design)
        t = state.round_index - 1
        deltas = updates / (-self.lr)                                   # (4): Delta_i
        update, record = AGGREGATORS[self.method](deltas, self._round(design, airfl, t), airfl,
                                                  state.streams("noise"))
        record.pop("method", None)
        record.pop("round_index", None)
        if self.method == "airfl_dp":              # the perk window of its own budget
            record["snr_threshold_db"] = design["snr_threshold_db"]
            record["snr_full_db"] = design["snr_full_db"]
        return update * (-self.lr), record                              # (10), server lr 1

    def _allocation(self, design: dict[str, Any]) -> AirflDesign:
        """The stored design's allocation (parsed once per trial's design)."""
        if "allocation" not in design:
            raise ValueError("the stored design has no allocation (made by an older version): "
                             "re-run the design stage")
        source = design["allocation"]
        if self._stored is None or self._stored[0] is not source:   # held: its id stays unique
            self._stored = (source, AirflDesign.from_dict(source))
        return self._stored[1]

    def _round(self, design: dict[str, Any], airfl: AirflDesign, t: int) -> StoredRound:
        """Round t (0-based) as the design stored it: I^(t), pi_t and, over the air, s_i."""
        stored = design.get("transmit_scalars")
        scalars = None if stored is None else torch.complex(
            torch.tensor(stored["re"][t], dtype=torch.float64),
            torch.tensor(stored["im"][t], dtype=torch.float64))
        q = None if stored is None else self._norm(airfl.pi[t], airfl, t)
        return StoredRound(t, torch.tensor(design["active"][t], dtype=torch.long), airfl.pi[t],
                           q, scalars)
