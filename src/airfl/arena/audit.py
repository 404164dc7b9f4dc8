"""The arena's privacy audit: every private curve of the arena audited as the arena runs it,
in every trial, over its T rounds, beside the epsilon it is accounted at (as simulated and as
its paper states).

One auditable mechanism per private curve and trial (`entrants.curves`: every eps target at the
base power, and for AirFL-DP the SNR figure's target at every power of the sweep; the profile's
`arena.task.scale.trials`), named `<curve>_trial<k>` (`point_name`), registered per entrant
(`dp_fedavg`, `airfl_dp`: figures/arena/audit_<entrant>.{csv,png}, one row per curve and
trial). The leaderboard's eps columns are a curve's largest over its trials, so its audit column
is too: the largest audited lower bound over the trials, each trial's bound checked against that
trial's own accounting. Each runs the entrant's own scheme class with the curve's parameters, as
the train stage builds it (`GaussianDpFedAvg`; `DpPerkScheme` with the clients' step size), on
the arena's devices:

* Design: DP-FedAvg has none; AirFL-DP's is rebuilt for each trial from the statistical CSI the
  design stage gives that trial (`task.trial_statistics`: the trial's placement and path gains
  on the arena's channel), so its water-filled norms q_t (Cor. IV.1 (49)) are that trial's run's.
* Release: the canary device 0's upload at the clip norm C in coordinate 0 (every device takes
  part in every round, q = r = 1), every other device's upload 0, through the scheme's own
  `aggregate` round after round (each round its own noise stream, keyed by (seed,
  "audit/arena/<curve>/trial<k>", call, round): every trial its own), i.e. the noise the run adds
  in every round: DP-FedAvg's N(0, (z C)^2) on the clipped sum; AirFL-DP's effective receiver
  noise q_t^2 sigma^2 per real entry (`noise_model: real_full`: the channel noise the entrant
  counts as its DP noise, (9)-(10)).
* Neighbours, as each accountant has them: DP-FedAvg add/remove (the canary's upload C e_0 or
  0, its slot kept: McMahan et al. 2018's fixed denominator, sensitivity C); AirFL-DP
  replace-one (C e_0 against -C e_0: sensitivity 2c of its proof's (57)).
* Statistic: the T releases' coordinate 0 summed with weights 1/z_t^2 (z_t: the round's noise
  multiplier as simulated, the record's `privacy_simulated` event): for T Gaussian releases of
  one signal the likelihood-ratio (most powerful) linear statistic (Nasr et al. 2023's
  multi-round audit; equal weights for DP-FedAvg). Linear given the design, so the draws are
  batched (`airfl.core.audit_draws.linear_sampler`).
* Accounted: the rounds' own records composed as the privacy stage composes them
  (`airfl.privacy.epsilon_curve`, improved conversion, at the curve's delta): eps_claimed from the
  `privacy` events (its paper's statement: epsilon_paper of the leaderboard), eps_simulated from
  `privacy_simulated` where a round has one (epsilon_simulated). settings also hold the
  target, and the exact epsilon of the composed Gaussian, mu = sqrt(sum_t 1/z_t^2)-GDP
  (Dong, Roth, Su 2022, Cor. 3.3), which the audit's bound estimates from below.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from airfl.arena import entrants
from airfl.arena.leaderboard import point_name
from airfl.arena.experiments import ARENA
from airfl.arena.task import run_block, settings, trial_statistics
from airfl.core.audit_draws import audit_round_state, linear_sampler
from airfl.core.scheme import DesignContext, Scheme, scheme_from_curve
from airfl.params.declare import resolve
from airfl.papers.dp_perk.schemes import DpPerkScheme
from airfl.privacy import epsilon_curve
from airfl.privacy.audit import gdp_epsilon
from airfl.privacy.auditing import AuditableMechanism, AuditPointWork
from airfl.schemes.dp import GaussianDpFedAvg

#: the scheme class of each private entrant's curve kind (`scheme`)
SCHEMES: dict[str, type[Scheme]] = {"gaussian_dp": GaussianDpFedAvg, "dp_perk": DpPerkScheme}

#: what each entrant's neighbours are: (the canary's upload in the "absent" world as a multiple
#: of C, the words the audit reports)
NEIGHBOURS = {
    "gaussian_dp": (0.0, "add/remove the canary's upload C e_0 (its slot kept with 0): "
                         "sensitivity C, McMahan et al. 2018"),
    "dp_perk": (-1.0, "replace the canary's upload C e_0 by -C e_0: sensitivity 2c on "
                      "Delta_i = -upload / eta, its proof's (57)"),
}


def private_curves(params: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """The entrant `key`'s private curves (entrants.curves), figure-only tags removed."""
    legend = next(e.legend for e in entrants.PRESENT if e.key == key and e.private)
    return {name: {k: v for k, v in curve.items() if k not in ARENA.panel_keys}
            for name, curve in ARENA.curves(params).items() if curve["entrant"] == legend}


def build(name: str, curve: dict[str, Any], lr: float) -> Scheme:
    """The curve's scheme as the train stage builds it (`airfl.core.scheme.scheme_from_curve`,
    the clients' step size where the scheme reads it), of the class its kind names here."""
    return scheme_from_curve(SCHEMES[curve["scheme"]], name, curve, lr)


def design(params: dict[str, Any], scheme: Scheme, trial: int) -> dict[str, Any]:
    """The scheme's design for one trial of the arena, on the context the design stage builds
    (the trial's statistical CSI; the data sizes, which neither entrant reads, as ones)."""
    block = run_block(params, {})
    n, rounds = block["num_devices"], block["scale"]["rounds"]
    context = DesignContext(n, entrants.model_dim(settings(params)["task"]), rounds,
                            torch.ones(n), trial_statistics(params, ARENA.id, trial),
                            trial=trial, seed=int(params["seed"]), experiment=ARENA.id)
    return scheme.design(context)


def _updates(scheme: Scheme, plan: dict[str, Any], t: int, n: int, row: torch.Tensor | None,
             width: int) -> torch.Tensor:
    """Round t's uploads in the order the scheme aggregates them (its participants), the
    canary's (device 0) `row`, every other 0."""
    state = audit_round_state(n, 0, "order", 0, round_index=t + 1)
    order = scheme.participants(state, plan)
    devices = list(range(n)) if order is None else order.tolist()
    if 0 not in devices:
        raise ValueError(f"round {t + 1}: the canary device 0 does not take part; the arena's "
                         "audit needs every device in every round (q = r = 1)")
    updates = torch.zeros(len(devices), width, dtype=torch.float64)
    if row is not None:
        updates[devices.index(0)] = row
    return updates


def trials(params: dict[str, Any]) -> range:
    """The profile's trials of the arena (every one audited)."""
    return range(int(settings(params)["task"]["scale"]["trials"]))


def _mechanism(params: dict[str, Any], name: str, curve: dict[str, Any],
               trial: int) -> AuditableMechanism:
    arena, seed = settings(params), int(params["seed"])
    task = arena["task"]
    n, rounds, clip = task["num_devices"], task["scale"]["rounds"], float(task["clip_norm"])
    scheme = build(name, curve, float(task["lr"]))
    plan = design(params, scheme, trial)
    label = f"arena/{name}/trial{trial}"

    def round_release(t: int, row: torch.Tensor | None, call: int, width: int,
                      stream: str = label):
        state = audit_round_state(n, seed, stream, call, round_index=t + 1)
        return scheme.aggregate(_updates(scheme, plan, t, n, row, width), state, plan)

    records = [round_release(t, None, 0, 2, f"{label}/records")[1]    # the run's records
               for t in range(rounds)]
    paper_events = [r["privacy"] for r in records]
    simulated_events = [r.get("privacy_simulated", r["privacy"]) for r in records]
    z = [float(e[0]["noise_multiplier"]) for e in simulated_events]
    weights = [(min(z) / zt) ** 2 for zt in z]                           # 1 / z_t^2, largest 1
    delta = float(curve["delta"])

    def release(row: torch.Tensor | None, call: int, width: int) -> torch.Tensor:
        return sum(w * round_release(t, row, call, width)[0] for t, w in enumerate(weights))

    absent, neighbours = NEIGHBOURS[curve["scheme"]]
    mu = math.sqrt(sum(1.0 / zt ** 2 for zt in z))                      # DRS22 Cor. 3.3
    extra = {"eps_design_paper": plan["privacy"]["eps_paper"]} \
        if "eps_paper" in plan.get("privacy", {}) else {}
    return AuditableMechanism(
        name=point_name(name, trial), paper="arena", delta=delta,
        eps_claimed=float(epsilon_curve(paper_events, delta)[-1]),
        eps_simulated=float(epsilon_curve(simulated_events, delta)[-1]),
        claimed_accountant=f"its paper's accounting of the run's T = {rounds} rounds (the "
        "records' privacy events, RDP composition, improved conversion: the leaderboard's "
        "epsilon_paper)",
        simulated_note="the noise the run adds in each round (the records' privacy_simulated "
        "events, else privacy), composed as the leaderboard's epsilon_simulated",
        neighbours=neighbours,
        conditioning=f"trial {trial}'s placement and design (every device in every round)",
        aggregation=f"{type(scheme).__module__}:{type(scheme).__name__}.aggregate, T rounds, "
        "coordinate 0 summed with weights 1/z_t^2",
        sample=linear_sampler(release, clip, absent * clip), gaussian=True,
        draws=int(resolve(params["audit"]["arena"]["draws"], params["profile"])),
        releases=rounds,
        settings={"curve": name, "target_eps": curve_target(params, name), "trial": trial,
                  "rounds": rounds, "devices": n, "clip_norm": clip,
                  "noise_multiplier_min": min(z), "noise_multiplier_max": max(z),
                  "gdp_mu_exact": mu, "eps_exact_gdp": gdp_epsilon(mu, delta), **extra})


def _work(params: dict[str, Any], key: str) -> list[AuditPointWork]:
    """The entrant `key`'s points' work as `_mechanism` builds them, without their designs:
    one batched point per private curve and trial, the profile's `audit.arena.draws` draws per
    world, each summing the run's T rounds (`airfl plan`; tests/arena compare it with the built
    points)."""
    rounds = int(settings(params)["task"]["scale"]["rounds"])
    draws = int(resolve(params["audit"]["arena"]["draws"], params["profile"]))
    return [AuditPointWork(point_name(name, trial), batched=True, draws=draws, releases=rounds)
            for name in private_curves(params, key) for trial in trials(params)]


def _entrant(params: dict[str, Any], key: str) -> list[AuditableMechanism]:
    """The entrant `key`'s points: each private curve in each trial (its own design)."""
    return [_mechanism(params, name, curve, trial)
            for name, curve in private_curves(params, key).items() for trial in trials(params)]


def curve_target(params: dict[str, Any], name: str) -> float:
    """The eps target a private curve's design meets."""
    return float(ARENA.curves(params)[name]["target_eps"])


def dp_fedavg(params: dict[str, Any]) -> list[AuditableMechanism]:
    """DP-FedAvg at every eps target of the profile (its curve does not depend on the power),
    in every trial."""
    return _entrant(params, "dp_fedavg")


def airfl_dp(params: dict[str, Any]) -> list[AuditableMechanism]:
    """AirFL-DP at every eps target at the base power and at the SNR figure's target at every
    power of the sweep, in every trial (one design each)."""
    return _entrant(params, "airfl_dp")


def dp_fedavg_work(params: dict[str, Any]) -> list[AuditPointWork]:
    """What `dp_fedavg`'s points cost to sample (`_work`)."""
    return _work(params, "dp_fedavg")


def airfl_dp_work(params: dict[str, Any]) -> list[AuditPointWork]:
    """What `airfl_dp`'s points cost to sample, without their designs (`_work`)."""
    return _work(params, "airfl_dp")
