"""Who takes part in the arena, and who does not and why.

A present entrant is a scheme kind of an installed wing, run through that wing's own design and
aggregation on the arena's channel and budget (the registry builds it from the curve's `scheme`,
as for any figure). A private entrant gets one curve per eps target of the sweep, with the
parameters that meet the target under the project's accountant; a reference (non-private)
entrant gets one curve, and its epsilon is whatever its mechanism gives (accounted all the
same). An absent entrant is declared here with the reason, and the leaderboard prints it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from airfl.arena.task import edge_snr_db, snr_sweep_db
from airfl.privacy import gaussian_noise_for_epsilon


@dataclass(frozen=True)
class Entrant:
    """A scheme that runs in the arena. `curve(arena, eps)`: its curve's scheme parameters
    (`arena`: task.settings; eps: the target, None for a reference)."""

    key: str                          # curve name (private: + "_eps<target>")
    legend: str
    wing: str                         # the wing whose design and aggregation it runs
    private: bool
    curve: Callable[[dict[str, Any], float | None], dict[str, Any]]
    uses_snr: bool = False            # its curve depends on the power budget (radio.power_dbm)
    not_audited: str = ""             # a private entrant without an audit: why (leaderboard)
    # the run-table column whose per-round values, summed over the rounds (basic composition),
    # are the epsilon its paper states, where its records' privacy events (the privacy stage's
    # epsilon_paper) account something else (LAPA: `PAPER_BUDGET`)
    paper_epsilon_column: str = ""


@dataclass(frozen=True)
class Absent:
    """A scheme of the five papers that is not in the arena, with the reason."""

    legend: str
    wing: str
    reason: str


def _ideal(arena: dict[str, Any], eps: float | None) -> dict[str, Any]:
    return {"scheme": "ideal_fedavg"}


def _ota_fl(arena: dict[str, Any], eps: float | None) -> dict[str, Any]:
    """Truncated channel inversion at the arena's edge SNR and clip: its design
    (airfl.schemes.ota) sets the amplitude from the per-round energy budget; the receiver noise
    is its only noise, accounted as the Gaussian mechanism it is."""
    return {"scheme": "ota_truncated_inversion", "snr_db": edge_snr_db(arena["radio"]),
            "truncation_threshold": arena["radio"]["truncation_threshold"],
            "clip_norm": arena["task"]["clip_norm"]}


def _dp_fedavg(arena: dict[str, Any], eps: float | None) -> dict[str, Any]:
    """DP-FedAvg (McMahan et al. 2018) with every device in every round (q = 1): the noise
    multiplier z is the smallest whose T-round Gaussian mechanism meets (eps, delta) under the
    project's RDP accountant (airfl.privacy.gaussian_noise_for_epsilon, never above the
    target). Our reading: digital and error-free (the uplink is assumed reliable at the
    budget), so it is the arena's digital private reference."""
    delta, rounds = arena["privacy"]["delta"], arena["task"]["scale"]["rounds"]
    z = gaussian_noise_for_epsilon(float(eps), delta, rounds, sampling_rate=1.0)
    return {"scheme": "gaussian_dp", "noise_multiplier": z,
            "clip_norm": arena["task"]["clip_norm"], "sampling_rate": 1.0, "delta": delta}


def model_dim(task: dict[str, Any]) -> int:
    """d, the number of parameters of the arena's model on its dataset."""
    from airfl.data import dataset_info
    from airfl.models.flat import build_model

    info = dataset_info(task["dataset"])
    return build_model(task["model"], info.image_shape, info.num_classes, 0.0).dim


def dbm_to_w(dbm: float) -> float:
    """A power in dBm as watts."""
    return 10.0 ** ((dbm - 30.0) / 10.0)


def _airfl_dp(arena: dict[str, Any], eps: float | None) -> dict[str, Any]:
    """AirFL-DP (DP as a perk: the dp_perk wing's design and aggregation) on the arena's channel
    with an m-antenna base station (`radio.antennas`: its SIMO uplink; the single-antenna
    entrants do not read it). Its design reads the arena's path gains Lambda_i from the design
    context (`uplink_gains: context`), draws its Rayleigh SIMO channels h_i ~ CN(0, Lambda_i I_m)
    and zero-forcing combiners from them (Sec. II-B, (P1)) and water-fills the norms q_t for the
    target (Cor. IV.1 (49)). The mappings, our readings:

    * eps_tilde = eps / sqrt(d): its paper's normalised target, eps = eps_tilde sqrt(d) (Sec. V-A);
    * power_w = P (the arena's per-device power), sigma2_w = N0 B (noise power per antenna);
    * sample_ratio = 1: every device every round, as the arena's DP-FedAvg (q = 1);
    * its clip c bounds the scaled difference Delta_i = (theta - theta_i) / eta (4), (6), so an
      upload theta_i - theta = -eta Delta_i is clipped at the arena's C when c = C / eta:
      clip_factor = c^2 / d (its c = sqrt(clip_factor d), Sec. V-A);
    * noise_model real_full: the receiver noise is N0 B per real entry, as the arena's OTA-FL
      has it, and as its proof's (57) assumes; with r = 1 its paper's accounting (Prop. III.1,
      dp_noise_convention paper) and the mechanism as simulated then coincide;
    * the authors' zero-forcing over the round's K = n devices (needs m >= n) and the paper's
      accountant (Phi at tau = T - 1)."""
    task, radio = arena["task"], arena["radio"]
    d = model_dim(task)
    clip = task["clip_norm"] / task["lr"]
    return {"scheme": "dp_perk", "method": "airfl_dp", "uplink_gains": "context",
            "antennas": radio["antennas"], "power_w": dbm_to_w(radio["power_dbm"]),
            "sigma2_w": dbm_to_w(radio["n0_dbm_per_hz"]) * radio["bandwidth_hz"],
            "sample_ratio": 1.0, "clip_factor": clip ** 2 / d,
            "eps_tilde": float(eps) / math.sqrt(d), "delta": arena["privacy"]["delta"],
            "zf_columns": "active", "beamformer": "zf", "noise_model": "real_full",
            "dp_noise_convention": "paper", "accountant": "paper"}


def _lapa(privacy: str, budget_level: str = "sample"
          ) -> Callable[[dict[str, Any], float | None], dict[str, Any]]:
    """LAPA's private scheme `privacy` (uniform: Benchmark 3; arb: Benchmark 4, the lapa wing's
    reconstruction of ARB; its adaptive allocation, Configuration 3, is absent: ABSENT says why)
    through the lapa wing's own design and aggregation (`lapa` scheme kind). The mappings, each
    a reading:

    * devices and channel: `uplink_gains: context`, the arena's placement and path gains
      Lambda_k from the design context (`task.trial_statistics`), not Sec. V-A's layout and
      eq. 39; on them LAPA's own block fading, one Rayleigh draw per device and trial
      (||h_k||^2 = Lambda_k |g_k|^2, g_k ~ CN(0, 1): the arena's single-antenna base station,
      `antennas` 1, where its paper has N_a = 15 and NOMA/SIC; the same law as the arena's
      per-round draw, held for the whole run as LAPA's Sec. II-B has it), uncalibrated;
    * power and noise: every device at the arena's P (`max_power_w`, p_k^2 of its eq. 6), the
      receiver noise N0 B (`noise_w`), so its channel noise sigma_ch,k = sqrt(N0 B / (P
      ||h_k||^2)) per entry on the decoded pseudo-gradient (`channel: practical`, Sec. II-B);
      no SER selection (eq. 22 off, every device in every round), no dynamic noise control
      (Sec. IV-A's switching belongs to Configuration 5, whose powers come from its DDPG
      controller: not posed here);
    * its clip C_LAPA on the pseudo-gradient g_k = (w - w_k)/lam (eq. 17) set to C/lam (lam: the
      arena's local step size), so the upload w_k - w is clipped at the arena's C as every other
      entrant's;
    * aggregation: its Wasserstein weights (eqs. 20-21) from the arena partition's label
      histograms, as its Fig. 5 runs every privacy strategy; its allocation's PID gains,
      window, Gompertz beta and eq. 10's reduction from `arena.lapa` (its paper gives none:
      the values its own figures run, lapa.alloc, one declaration `lapa_allocation` for
      both), the share not inverted;
    * the budget: `eps_total` = the arena's eps target, so its noise level nu is the one (within
      rounding the smallest) whose eps_T under its own accounting (`mechanism.total_budget`:
      the Gaussian constant c and the sensitivity Delta s_k = 2 lam C / |D_k| of eqs. 18-19,
      basic composition over T rounds and K devices) is at most the target
      (`mechanism.noise_level_for_budget`; the design stores nu). The leaderboard's
      epsilon_paper is what its paper states: the round budgets spent, summed over the rounds
      (eps_c of eq. 12, basic composition: `PAPER_BUDGET`), eps_T for uniform DP; its
      epsilon_simulated is the lapa wing's record of each device's own rounds at the clipped
      update's replace-one sensitivity 2 C_LAPA (WorstUnitGaussian, its DP noise and channel
      noise together), far above eps_T, which bounds a sample's change (Delta s_k), not a
      device's upload;
    * `budget_level` "device" (uniform DP only; the user-level entrant): the same scheme with
      nu set in each trial's design so that its epsilon_simulated, the accounting the arena
      ranks by (each device's T uploads a Gaussian mechanism of multiplier sqrt(sigma_k^2 +
      sigma_ch,k^2) / 2 C_LAPA, eqs. 17, 19 and Sec. II-B, the worst device, RDP composition and
      the improved conversion at the arena's delta), is at most the target
      (`mechanism.noise_level_for_device_budget`: the T-round Gaussian multiplier z* of the
      project's accountant, nu the smallest giving every device that multiplier); its eps_T
      (eq. 18's sample-level eps, its epsilon_paper) is then far below the target. ARB has no such closed form:
      its shares move with training (so the worst device's composition is known only after
      the run), so only its sample-level reading is posed."""
    def curve(arena: dict[str, Any], eps: float | None) -> dict[str, Any]:
        task, radio = arena["task"], arena["radio"]
        return {"scheme": "lapa", "aggregation": "wasserstein", "privacy": privacy,
                "channel": "practical", "uplink_gains": "context",
                "radio": {"antennas": 1, "max_power_w": dbm_to_w(radio["power_dbm"]),
                          "noise_w": dbm_to_w(radio["n0_dbm_per_hz"]) * radio["bandwidth_hz"]},
                "alloc": dict(arena["lapa"]), "clip": task["clip_norm"] / task["lr"],
                "delta": arena["privacy"]["delta"], "eps_total": float(eps),
                **({"budget_level": budget_level} if budget_level != "sample" else {})}
    return curve


#: LAPA's round budget eps^[t] = sum_k eps_k^[t] spent in round t (eq. 16's split of eq. 12's
#: round budget; the lapa wing's record `budget`), whose sum over the rounds, eps_c of eq. 12
#: (basic composition, sum_t eps^[t] <= eps_T), is the epsilon its paper states: a sample's
#: change of a device's update (Delta s_k = 2 lam C / |D_k|, eq. 18, noise of eq. 19). Uniform
#: DP spends eps_T / T a round, so it states eps_T; ARB's last rounds may leave some unspent.
PAPER_BUDGET = "budget"

#: why the sample-level LAPA entrants have no audit (docs/papers/arena.md)
_LAPA_NOT_AUDITED = ("not audited: the audit's draws bound a device's upload at most near "
                     "log(5e4 / 3.7) = 9.5 (1e5 draws a neighbour), and its accounted epsilons "
                     "at that relation are about 1e3 to 2e5 (quick), as OTA-FL's; its paper's "
                     "eps_T (epsilon_paper) is about one sample's change, which eq. 18 takes "
                     "as 2 lam C / |D_k| without bounding a sample's effect on local SGD, so "
                     "no release of the upload audits it (docs/papers/arena.md)")


PRESENT: tuple[Entrant, ...] = (
    Entrant("ideal", "Ideal FedAvg", "generic", False, _ideal),
    Entrant("ota_fl", "OTA-FL", "generic", False, _ota_fl, uses_snr=True),
    Entrant("dp_fedavg", "FedAvg + DP", "generic", True, _dp_fedavg),
    Entrant("airfl_dp", "AirFL-DP", "dp_perk", True, _airfl_dp, uses_snr=True),
    # their legends say which eps their curve meets: their paper's, for a sample (`_lapa`)
    Entrant("lapa_uniform", "LAPA uniform DP (sample-level ε_T)", "lapa", True,
            _lapa("uniform"), uses_snr=True, not_audited=_LAPA_NOT_AUDITED,
            paper_epsilon_column=PAPER_BUDGET),
    Entrant("lapa_arb", "LAPA ARB (sample-level ε_T)", "lapa", True, _lapa("arb"),
            uses_snr=True, not_audited=_LAPA_NOT_AUDITED, paper_epsilon_column=PAPER_BUDGET),
    # the same uniform DP with nu for the arena's accounting of the upload (ranked)
    Entrant("lapa_uniform_user", "LAPA uniform DP (user-level ε)", "lapa", True,
            _lapa("uniform", "device"), uses_snr=True, paper_epsilon_column=PAPER_BUDGET),
)

_LATER = "not yet posed on the arena's model"
ABSENT: tuple[Absent, ...] = (
    Absent("CDPB-i / CDPB-n / CDPB-mixed", "cdpb",
           f"{_LATER}: (1) its design (Algorithm 3) and both its accountings (Theorem 1 and "
           "the Poisson-subsampled Gaussian as simulated) take one reliability probability "
           "p(rho) from i.i.d. gains Exp(h_bar); under the arena's path loss each device has "
           "its own (near ones are reliable almost every round), so the subsampling "
           "amplification holds for no worst-case device and the as-simulated account would "
           "need the largest per-device rate; (2) its aggregation reads the round's |h|^2 as "
           "normalised gains, with no scale P/(N0 B) to map the arena's gains; (3) its budget "
           "eps_bar is RDP at one order (alpha = 2 in params.yaml's cdpb.analytic), at which "
           "no RDP budget converts to eps below 10.13 at delta = 1e-5 (improved conversion), so "
           "the targets 1 and 4 need an order of at least 10 and 4, which its paper does not "
           "choose; (4) its design picks its own number of rounds tau_opt for eps_bar, while "
           "the arena runs T rounds for every scheme"),
    Absent("LAPA (Configuration 3, adaptive budgets)", "lapa",
           "its round budget (eq. 12, B_t+1 = exp(-e_t) (eps_T - S_t) / (T - t)) collapses on "
           "the arena's grid: at eps_T = 1 (nu = 53.7: DP noise of about 12 per entry of an "
           "average device's pseudo-gradient, whose clipped norm is at most 20 over d = 7,850 "
           "entries) the perturbed global gradient is noise, its error e_t (eqs. 10-11) grows "
           "with the noise the shrinking budget adds, and with noise alone B_t / B_1 falls to "
           "0.27, 0.024-0.026, 2.4e-5-4e-5 and 0-2e-273 in rounds 3-6 of the three quick "
           "trials, its own fallback (l2_rel) engaged; eq. 19's sigma_k = c Delta s_k / eps_k "
           "is then infinite and the round-7 update not a number (tests/arena). Its uniform DP "
           "and ARB, the same design and aggregation, are present"),
    Absent("LAPA ARB (user-level ε)", "lapa",
           "its per-device budgets move with the run (our reconstruction of ref. [27] rescales "
           "each round's budget by the progress of the perturbed gradients), so the worst "
           "device's composition of its T uploads is known only after the run: no noise level "
           "nu fixed in the design guarantees a device-level target as simulated (uniform DP's "
           "per-device noise is the same every round, so its user-level curve sets nu in the "
           "design). Its sample-level curve is present"),
    Absent("OTA-FD and its FL benchmark", "ota_fd",
           f"{_LATER}: federated distillation keeps a model per device and shares soft labels "
           "on a public set (its own trainer), not the arena's model-update task"),
    Absent("Biased OTA / digital designs", "biased_fl",
           "non-private: their papers account no privacy, so they have no eps to meet; the "
           "arena's non-private OTA reference is OTA-FL"),
)


def eps_tag(eps: float) -> str:
    """A curve-name-safe form of an eps target (1 -> '1', 0.5 -> '0p5')."""
    return f"{eps:g}".replace(".", "p").replace("-", "m").replace("+", "")


def power_tag(power_dbm: float) -> str:
    """A curve-name-safe form of a power budget (17 -> 'p17dbm', -3 -> 'pm3dbm')."""
    return f"p{eps_tag(power_dbm)}dbm"


def at_base_power(name: str) -> bool:
    """Whether the curve `name` runs at the base power budget: only the other powers' names
    carry a power tag (`power_tag`, ending in 'dbm'; see `curves`)."""
    return not name.endswith("dbm")


def curves(arena: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every present entrant's curves on the arena's grid of (eps target, edge SNR) points: every
    eps target at the base power budget (the accuracy-vs-eps figure) and the SNR figure's eps
    target `snr_eps` at every power of the SNR sweep (the accuracy-vs-SNR figure).

    A reference entrant has one curve per power it sees, a private one one per (eps, power); an
    entrant whose curve does not depend on the power (`uses_snr` false: Ideal FedAvg, the
    error-free digital DP-FedAvg) has one curve per eps only, a member of every SNR point and
    drawn flat in the SNR figure. Each curve is tagged with the panel keys (figure and
    leaderboard only: no stage before the figure reads them): `entrant` (its legend),
    `arena_points` (the [eps, snr_db] points whose leaderboard group it is in), `arena_panels`
    (the figures that draw it: "eps", "snr"), and where they apply `arena_snr_db` (the edge SNR
    its curve was set for) and `target_eps`. The names of the base-power curves carry no power
    (`ota_fl`, `dp_fedavg_eps4`); the other powers' add the power (`ota_fl_pm3dbm`)."""
    radio, privacy = arena["radio"], arena["privacy"]
    base = round(edge_snr_db(radio), 6)
    sweep = snr_sweep_db(radio)
    points = [(float(e), base) for e in privacy["eps"]] + [
        (float(privacy["snr_eps"]), snr) for snr in sweep.values() if snr != base]
    out: dict[str, dict[str, Any]] = {}
    for entrant in PRESENT:
        powers = {radio["power_dbm"]: base}
        if entrant.uses_snr:
            powers.update(sweep)
        for eps in (privacy["eps"] if entrant.private else [None]):
            for power, snr in powers.items():
                on_grid = [[e, s] for e, s in points
                           if (eps is None or e == eps) and (not entrant.uses_snr or s == snr)]
                if not on_grid:                  # (eps, power) off the grid: not run
                    continue
                name = entrant.key + (f"_eps{eps_tag(eps)}" if eps is not None else "") + (
                    f"_{power_tag(power)}" if snr != base else "")
                panels = ["eps"] if eps is not None and snr == base else []
                if (eps is None or eps == privacy["snr_eps"]) and (
                        not entrant.uses_snr or power in sweep):
                    panels.append("snr")
                tags = {"entrant": entrant.legend, "arena_points": on_grid,
                        "arena_panels": panels}
                if entrant.uses_snr:
                    tags["arena_snr_db"] = snr
                if eps is not None:
                    tags["target_eps"] = float(eps)
                at_power = {**arena, "radio": {**radio, "power_dbm": power}}
                out[name] = {**entrant.curve(at_power, eps), **tags}
    return out
