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
from airfl.arena.task import partition, run_block, settings, trial_statistics
from airfl.core.audit_draws import audit_round_state, linear_sampler
from airfl.core.scheme import DesignContext, Scheme, scheme_from_curve
from airfl.params.declare import resolve
from airfl.papers.dp_perk.schemes import DpPerkScheme
from airfl.papers.lapa.mechanism import uniform_device_std
from airfl.papers.lapa.schemes import LapaScheme
from airfl.privacy import epsilon_curve
from airfl.privacy.audit import gdp_epsilon
from airfl.privacy.auditing import AuditableMechanism, AuditPointWork
from airfl.schemes.dp import GaussianDpFedAvg

#: the scheme class of each private entrant's curve kind (`scheme`)
SCHEMES: dict[str, type[Scheme]] = {"gaussian_dp": GaussianDpFedAvg, "dp_perk": DpPerkScheme,
                                     "lapa": LapaScheme}

#: what each entrant's neighbours are: (the canary's upload in the "absent" world as a multiple
#: of C, the words the audit reports)
NEIGHBOURS = {
    "gaussian_dp": (0.0, "add/remove the canary's upload C e_0 (its slot kept with 0): "
                         "sensitivity C, McMahan et al. 2018"),
    "dp_perk": (-1.0, "replace the canary's upload C e_0 by -C e_0: sensitivity 2c on "
                      "Delta_i = -upload / eta, its proof's (57)"),
    "lapa": (-1.0, "replace the canary's upload C e_0 by -C e_0: its pseudo-gradient g_k = "
                   "-upload / lam at -/+ C_LAPA e_0, sensitivity 2 C_LAPA of eq. 17's clip, "
                   "as the lapa wing's records account a device's upload"),
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


#: the scheme kinds whose design reads the data split (LAPA: |D_k| of eq. 18, the label
#: histograms of eq. 20); the others' designs get the sizes as ones and no histograms
READS_PARTITION = ("lapa",)


def design(params: dict[str, Any], scheme: Scheme, trial: int) -> dict[str, Any]:
    """The scheme's design for one trial of the arena, on the context the design stage builds:
    the trial's statistical CSI and, for a design that reads them (READS_PARTITION), the arena
    partition's data sizes and label histograms (`task.partition`, the partition stage's split;
    the others read neither: ones)."""
    block = run_block(params, {})
    n, rounds = block["num_devices"], block["scale"]["rounds"]
    sizes, histograms = torch.ones(n), None
    if scheme.kind in READS_PARTITION:
        split, histograms = partition(params, ARENA.id)
        sizes = torch.as_tensor(split.sizes)
    context = DesignContext(n, entrants.model_dim(settings(params)["task"]), rounds,
                            sizes, trial_statistics(params, ARENA.id, trial),
                            trial=trial, seed=int(params["seed"]), experiment=ARENA.id,
                            label_histograms=histograms)
    return scheme.design(context)


def canary(scheme: Scheme, plan: dict[str, Any], dim: int) -> tuple[int, dict[str, Any]]:
    """The audited device and the design its release is read through. DP-FedAvg and AirFL-DP:
    device 0 (every device alike to their accountings), the run's design, the server's update.
    LAPA: the device its accounting makes the worst (the smallest total noise std
    sqrt(sigma_k^2 + sigma_ch,k^2) of uniform DP, `uniform_device_std`: the largest |D_k|),
    and the release is its own decoded upload, as the lapa wing's threat model has the BS
    decode every upload (NOMA/SIC) and its records account each: the run's design with the
    aggregation weights G (eq. 21) set to 1 on the canary and 0 elsewhere, so that the scheme's
    own aggregate returns -lam times the canary's received pseudo-gradient (eq. 19's DP noise
    and Sec. II-B's channel noise on it, the run's draws), every other setting the run's."""
    if not isinstance(scheme, LapaScheme):
        return 0, plan
    if scheme.privacy != "uniform":
        raise ValueError(f"{scheme.name}: the arena audits LAPA's uniform DP only (its noise the "
                         f"same every round), not privacy {scheme.privacy!r}")
    std = uniform_device_std(nu=plan["nu"], clip=scheme.clip, dim=dim, sizes=plan["sizes"],
                             sigma_ch=plan["sigma_ch"])
    device = int(min(range(len(std)), key=lambda k: std[k]))
    weights = [1.0 if k == device else 0.0 for k in range(len(std))]
    return device, {**plan, "weights": weights}


def _updates(scheme: Scheme, plan: dict[str, Any], t: int, n: int, row: torch.Tensor | None,
             width: int, device: int = 0) -> torch.Tensor:
    """Round t's uploads in the order the scheme aggregates them (its participants), the
    canary's (`device`) `row`, every other 0."""
    state = audit_round_state(n, 0, "order", 0, round_index=t + 1)
    order = scheme.participants(state, plan)
    devices = list(range(n)) if order is None else order.tolist()
    if device not in devices:
        raise ValueError(f"round {t + 1}: the canary device {device} does not take part; the "
                         "arena's audit needs every device in every round (q = r = 1)")
    updates = torch.zeros(len(devices), width, dtype=torch.float64)
    if row is not None:
        updates[devices.index(device)] = row
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
    device, read_through = canary(scheme, plan, entrants.model_dim(task))
    label = f"arena/{name}/trial{trial}"

    def round_release(t: int, row: torch.Tensor | None, call: int, width: int,
                      stream: str = label, through: dict[str, Any] = read_through):
        state = audit_round_state(n, seed, stream, call, round_index=t + 1)
        return scheme.aggregate(_updates(scheme, through, t, n, row, width, device), state,
                                through)

    records = [round_release(t, None, 0, 2, f"{label}/records", plan)[1]   # the run's records
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
    if isinstance(scheme, LapaScheme):    # its paper's eps_T (sample-level), not audited here
        extra = {"canary": device, "canary_size": float(plan["sizes"][device]),
                 "nu": float(plan["nu"]), "eps_T_sample_level": float(plan["eps_total"]),
                 # what eps_claimed is (the leaderboard's audit column names it)
                 "claimed_name": "its records' device-level epsilon"}
    return AuditableMechanism(
        name=point_name(name, trial), paper="arena", delta=delta,
        eps_claimed=float(epsilon_curve(paper_events, delta)[-1]),
        eps_simulated=float(epsilon_curve(simulated_events, delta)[-1]),
        claimed_accountant=(f"the lapa wing's records of the run's T = {rounds} rounds (each "
        "round's worst device at the upload's 2 C_LAPA, RDP composition, improved conversion); "
        "its paper's eps_T, the leaderboard's epsilon_paper, bounds a sample's change, not the "
        "upload audited here" if isinstance(scheme, LapaScheme) else
        f"its paper's accounting of the run's T = {rounds} rounds (the records' privacy "
        "events, RDP composition, improved conversion: the leaderboard's epsilon_paper)"),
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


def lapa_uniform_user(params: dict[str, Any]) -> list[AuditableMechanism]:
    """LAPA's uniform DP at the arena's (user-level) budget at every eps target at the base
    power and at the SNR figure's target at every power of the sweep, in every trial (one
    design each: the trial's fading draw on its placement, the arena partition's sizes and
    histograms)."""
    return _entrant(params, "lapa_uniform_user")


def lapa_uniform_user_work(params: dict[str, Any]) -> list[AuditPointWork]:
    """What `lapa_uniform_user`'s points cost to sample, without their designs (`_work`)."""
    return _work(params, "lapa_uniform_user")
