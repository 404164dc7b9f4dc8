"""Fig. 7's power control as a pipeline derivation (stage `derive`): from the
stored Pilot A run (LAPA, ideal channel, artificial noise in every round, nu = 4) to
the Fig. 7 privacy level and to DDPG's power allocation p* for Configuration 5.

Per trial (one channel draw per trial, so one P1 per trial):
1. The pilot's budget trajectory eps_A[t, k] (records `eps`), its Wasserstein weights G_k, the
   sizes (Delta s_k, eq. 18) and the channel norms ||h_k||^2 come from its design and records.
2. Fig. 7 privacy level (our derivation; the paper gives no level): eps_T7 = eps_T_A S_req^A(T/2) /
   S_ch(p_bar), S_req(t) = sum_k c Delta s_k / eps_k^[t], S_ch = sum_k sigma_ch,k (eq. 23's two
   sides). Runs are parameterised by nu (eps_T proportional to 1/nu), so
   nu_7 = nu_A S_ch(p_bar) / S_req^A(T/2); the Fig. 7 curves take the mean over trials.
3. The frozen surrogate: where the block holds Pilot B (`lapa.training.pilot_b`, the
   paper profile), its own budget trajectory: LAPA over the ideal channel at nu_7 (the mean over
   trials, the level the Fig. 7 curves run at; derivation `fig7_level`, :func:`level`, sets it);
   otherwise the quick profile's shortcut (Pilot B skipped): eps_7 = eps_A nu_A / nu_7
   (budgets scale linearly with eps_T: exp(-e) and the shares do not depend on it).
4. P1 (eq. 28) on that trajectory (control.p1_objective), solved by DDPG (eqs. 29-36,
   ddpg.train_ddpg) from p_bar, and directly by a 1-D line search over uniform power and by
   random feasible actions, twice: at the configured sizes (`line_points` values,
   `random_samples` actions) and at DDPG's own number of objective evaluations (its
   start p_bar and every step: `p1_line_equal_evals`, `p1_random_equal_evals`), the comparison
   that asks whether DDPG searches better than a direct search given the same work (DDPG's p*
   is the best action it evaluated, p_bar first, so L(p*) <= L(p_bar) holds by construction
   and tests nothing). All values are stored per trial, and the equal-evaluation ones reach
   Configuration 5's run records (the Fig. 7 claims read them there).
Draws: DDPG's exploration and minibatches from stream (seed, "lapa", trial, "ddpg"), its network
initialisation from that stream's derived torch seed, the random searches from "p1_random" and
"p1_random_equal_evals"; the same streams in Fig. 7(a) (lapa/fig4) and 7(b) (lapa/fig7b): common
random numbers across the two datasets' panels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from airfl.params.declare import resolve
from airfl.runtime.rng import derive_seed, numpy_generator

from . import control
from . import mechanism as mech
from .ddpg import DdpgConfig, train_ddpg

#: Pilot A: LAPA at nu = 4 over the ideal channel, the Fig. 5 curve ``lapa_nu4``
PILOT_NU = 4.0
PILOT = "lapa_nu4"
#: Pilot B: the same LAPA run at the Fig. 7 level; its curve runs where
#: `lapa.training.pilot_b` is on (training.PILOT_B)
PILOT_B = "pilot_b"
TARGETS = ("config5", "lapa_avgp", "arb_avgp")
#: P1's best value found by the line and the random search at DDPG's number of objective
#: evaluations, per trial: Configuration 5's parameters, so its run records carry them
EQUAL_EVALS = ("p1_line_equal_evals", "p1_random_equal_evals")


def control_settings(params: dict[str, Any]) -> dict[str, Any]:
    """`lapa.control` resolved for the profile (its `ddpg` block too)."""
    block = params["lapa"]["control"]
    out = {k: resolve(v, params["profile"]) for k, v in block.items() if k != "ddpg"}
    out["ddpg"] = {k: resolve(v, params["profile"]) for k, v in block["ddpg"].items()}
    return out


def ddpg_config(settings: dict[str, Any]) -> DdpgConfig:
    d = settings["ddpg"]
    return DdpgConfig(episodes=d["episodes"], steps=d["steps"], hidden=tuple(d["hidden"]),
                      lr_actor=d["lr_actor"], lr_critic=d["lr_critic"], gamma=d["gamma"],
                      tau=d["tau"], batch=d["batch"], buffer=d["buffer"], warmup=d["warmup"],
                      expl_sigma=d["expl_sigma"], expl_decay=d["expl_decay"],
                      expl_min=d["expl_min"])


class Problem:
    """P1 (eq. 28) of one trial on a frozen budget trajectory eps[T, K]."""

    def __init__(self, *, eps: np.ndarray, weights: np.ndarray, sizes: np.ndarray,
                 channel_norm2: np.ndarray, lr: float, clip: float, delta: float, noise_w: float,
                 settings: dict[str, Any]):
        self.eps, self.weights, self.channel_norm2 = eps, weights, channel_norm2
        self.sensitivity = mech.sensitivity(lr=lr, clip=clip, sizes=sizes)      # eq. 18
        self.delta, self.noise_w, self.settings = delta, noise_w, settings
        self.devices = weights.size
        self.a = control.contraction(mu=settings["mu"], smooth=settings["smooth"], lr=lr,
                                     dissimilarity=settings["dissimilarity"],
                                     weights=weights)                              # eq. 24
        if not self.a < 1.0:
            raise ValueError(f"lapa.control: A = {self.a:.6g} >= 1 (eqs. 25-27 need lam < 2 / "
                             "(L delta^2 sum G^2)); lower lapa.control.smooth or dissimilarity")

    def value(self, power2: np.ndarray) -> tuple[float, int]:
        """(L(p), T_th(p)) of eq. 28 at p_k^2 = power2."""
        return control.p1_objective(power2, channel_norm2=self.channel_norm2,
                                    weights=self.weights, sensitivity=self.sensitivity,
                                    eps=self.eps, contraction_a=self.a, noise_w=self.noise_w,
                                    delta=self.delta)

    def power(self, action: np.ndarray) -> np.ndarray:
        """a in [0, 1]^K -> feasible p^2 (eq. 30 and the projection onto eqs. 5, 28c)."""
        s = self.settings
        return control.project_power(control.action_to_power(
            action, p0=s["p0_w"], floor_fraction=s["floor_fraction"]),
            p0=s["p0_w"], p_min=s["p_min_w"], p_max=s["p_max_w"])

    def action(self, power2: np.ndarray) -> np.ndarray:
        """The action whose power (before projection) is power2 (the inverse of eq. 30)."""
        floor = self.settings["floor_fraction"] * self.settings["p0_w"]
        return (power2 - floor) / (self.settings["p0_w"] - floor)

    def average(self) -> np.ndarray:
        s = self.settings
        return control.average_power(p_min=s["p_min_w"], p_max=s["p_max_w"], devices=self.devices)


def solve(problem: Problem, *, config: DdpgConfig, seed: int, generator: np.random.Generator,
          random_generator: np.random.Generator,
          equal_generator: np.random.Generator) -> dict[str, Any]:
    """DDPG's p* (best action seen) against p_bar and the two direct searches, each
    at the configured size and at DDPG's number of objective evaluations (`equal_generator`: the
    random search of the latter)."""
    s = problem.settings
    average = problem.average()
    value_avg, t_th_avg = problem.value(average)
    result = train_ddpg(lambda a: problem.value(problem.power(a)), start=problem.action(average),
                        rounds=problem.eps.shape[0], reference=value_avg, config=config,
                        seed=seed, generator=generator)
    best = problem.power(result.best_action)
    value_best, t_th_best = problem.value(best)
    objective = lambda p: problem.value(p)[0]                                  # noqa: E731
    line_p, line_value = control.line_search(objective, p0=s["p0_w"], p_min=s["p_min_w"],
                                             p_max=s["p_max_w"], devices=problem.devices,
                                             points=s["line_points"])
    rand_p, rand_value = control.random_search(
        objective, p0=s["p0_w"], p_min=s["p_min_w"], p_max=s["p_max_w"],
        devices=problem.devices, samples=s["random_samples"],
        floor_fraction=s["floor_fraction"], generator=random_generator)
    evaluations = result.evaluations
    _, line_equal = control.line_search(objective, p0=s["p0_w"], p_min=s["p_min_w"],
                                        p_max=s["p_max_w"], devices=problem.devices,
                                        points=evaluations)
    _, random_equal = control.random_search(
        objective, p0=s["p0_w"], p_min=s["p_min_w"], p_max=s["p_max_w"],
        devices=problem.devices, samples=evaluations, floor_fraction=s["floor_fraction"],
        generator=equal_generator)
    greedy = problem.power(result.greedy_action)
    return {"power_ddpg": best, "power_greedy": greedy, "power_average": average,
            "power_line": line_p, "power_random": rand_p,
            "p1_ddpg": value_best, "p1_average": value_avg, "p1_line": line_value,
            "p1_random": rand_value, "p1_greedy": problem.value(greedy)[0],
            "evaluations": evaluations, "p1_line_equal_evals": line_equal,
            "p1_random_equal_evals": random_equal,
            "t_th_ddpg": t_th_best, "t_th_average": t_th_avg, "contraction": problem.a,
            "episode_reward": result.episode_reward, "episode_best": result.episode_best,
            "actor": result.actor}


def _budgets(records: dict[str, Any]) -> np.ndarray:
    """A run's per-round device budgets eps_k^[t] (records `eps`), [T, K]."""
    return np.array([r["eps"] for r in records["rounds"]])


def fig7_nu(params: dict[str, Any], pilot: dict[str, Any], lr: float
            ) -> list[tuple[float, float, float]]:
    """Per trial of Pilot A: (nu_7, S_req^A(T/2), S_ch(p_bar)) of the Fig. 7 privacy
    level (module docstring, step 2); `lr`: lam, the clients' local step size (the block's
    `training.lr`, which Pilot A trained with)."""
    settings = control_settings(params)
    curve = pilot["records"]["params"]
    radio = params["lapa"]["radio"]
    c = mech.gaussian_constant(curve["delta"])
    out = []
    for design, records in zip(pilot["design"]["trials"], pilot["records"]["trials"]):
        eps_a = _budgets(records)
        sizes = np.asarray(design["sizes"])
        norm2 = np.asarray(design["radio"]["channel_norm2"])
        sens = mech.sensitivity(lr=lr, clip=curve["clip"], sizes=sizes)  # eq. 18
        s_req = float(np.sum(c * sens / eps_a[eps_a.shape[0] // 2 - 1]))       # S_req^A(T/2)
        average = control.average_power(p_min=settings["p_min_w"], p_max=settings["p_max_w"],
                                        devices=sizes.size)
        s_ch = float(np.sum(control.channel_std(average, norm2, radio["noise_w"])))   # eq. 23
        out.append((PILOT_NU * s_ch / s_req, s_req, s_ch))
    return out


def level(params: dict[str, Any], block: dict[str, Any], inputs: dict[str, Any]
          ) -> dict[str, Any]:
    """The derivation `fig7_level`: Pilot B's noise level nu_7 (module docstring, step 2), the
    mean over Pilot A's trials (one Pilot B curve, as the Fig. 7 curves)."""
    per_trial = fig7_nu(params, inputs[PILOT], block["training"]["lr"])
    nu7 = float(np.mean([n for n, _, _ in per_trial]))
    table = pd.DataFrame([{"trial": int(r["trial"]), "nu7": n, "s_req_pilot_half": sr,
                           "s_ch_average": sc}
                          for r, (n, sr, sc) in zip(inputs[PILOT]["records"]["trials"],
                                                    per_trial)])
    return {"params": {PILOT_B: {"nu": nu7}}, "report": {"nu_fig7": nu7},
            "table": table, "arrays": {"nu7": table["nu7"].to_numpy()}}


def compute(params: dict[str, Any], block: dict[str, Any], inputs: dict[str, Any]
            ) -> dict[str, Any]:
    """The derivation `ddpg` of the LAPA training experiment (module docstring)."""
    settings = control_settings(params)
    pilot = inputs[PILOT]
    pilot_b = inputs.get(PILOT_B)                   # Pilot B where it ran
    curve = pilot["records"]["params"]
    radio = params["lapa"]["radio"]
    settings = {**settings, "p0_w": radio["max_power_w"]}
    levels = fig7_nu(params, pilot, block["training"]["lr"])
    b_trials = pilot_b["records"]["trials"] if pilot_b else [None] * len(levels)
    trials, rows, arrays, nus = [], [], {}, []
    for design, records, b_records, (nu7, s_req, s_ch) in zip(
            pilot["design"]["trials"], pilot["records"]["trials"], b_trials, levels, strict=True):
        trial = int(records["trial"])
        sizes, weights = np.asarray(design["sizes"]), np.asarray(design["weights"])
        norm2 = np.asarray(design["radio"]["channel_norm2"])
        if b_records is None:          # quick shortcut: Pilot A rescaled to eps^T_7
            eps7 = _budgets(records) * PILOT_NU / nu7
        else:                          # Pilot B's own trajectory (at the mean nu_7)
            if int(b_records["trial"]) != trial:
                raise ValueError(f"Pilot B's trial {b_records['trial']} is not Pilot A's {trial}")
            eps7 = _budgets(b_records)
        problem = Problem(eps=eps7, weights=weights, sizes=sizes,
                          channel_norm2=norm2, lr=block["training"]["lr"], clip=curve["clip"],
                          delta=curve["delta"], noise_w=radio["noise_w"], settings=settings)
        seed = derive_seed(params["seed"], "lapa", trial, "ddpg")
        out = solve(problem, config=ddpg_config(settings), seed=seed,
                    generator=numpy_generator(params["seed"], "lapa", trial, "ddpg"),
                    random_generator=numpy_generator(params["seed"], "lapa", trial, "p1_random"),
                    equal_generator=numpy_generator(params["seed"], "lapa", trial,
                                                    "p1_random_equal_evals"))
        nus.append(nu7)
        trials.append({"trial": trial, "nu7": nu7, "eps_total_pilot": design["eps_total"],
                       "eps_total_fig7": design["eps_total"] * PILOT_NU / nu7,
                       "eps_spent_surrogate": float(eps7.sum(axis=0).max()),
                       "s_req_pilot_half": s_req, "s_ch_average": s_ch,
                       **{k: (v.tolist() if isinstance(v, np.ndarray) else v)
                          for k, v in out.items() if not k.startswith("episode") and k != "actor"},
                       "ddpg_not_above_direct": bool(out["p1_ddpg"] <= min(out["p1_line"],
                                                                         out["p1_random"])),
                       "ddpg_not_above_direct_equal_evals": bool(
                           out["p1_ddpg"] <= min(out["p1_line_equal_evals"],
                                                 out["p1_random_equal_evals"]))})
        rows.append(pd.DataFrame({"trial": trial,
                                  "episode": np.arange(1, out["episode_reward"].size + 1),
                                  "mean_reward": out["episode_reward"],
                                  "best_p1": out["episode_best"]}))
        arrays[f"trial{trial}_eps_fig7"] = problem.eps
        for key in ("power_ddpg", "power_average", "power_line", "power_random"):
            arrays[f"trial{trial}_{key}"] = out[key]
        for name, weights in out["actor"].items():      # the policy: the actor's weights
            arrays[f"trial{trial}_actor_{name.replace('.', '_')}"] = weights
    nu7 = float(np.mean(nus))
    powers = [t["power_ddpg"] for t in trials]
    report_keys = ("p1_ddpg", "p1_average", "t_th_ddpg", "t_th_average",
                   "p1_line_equal_evals", "p1_random_equal_evals")
    shared = {"nu": nu7}
    per_trial = {k: [t[k] for t in trials] for k in report_keys}
    return {"params": {"config5": {**shared, "powers": powers,
                                   "p1_value": per_trial["p1_ddpg"],
                                   "t_th_predicted": per_trial["t_th_ddpg"],
                                   # the direct searches at DDPG's number of evaluations
                                   **{k: per_trial[k] for k in EQUAL_EVALS}},
                       "lapa_avgp": {**shared, "p1_value": per_trial["p1_average"],
                                     "t_th_predicted": per_trial["t_th_average"]},
                       "arb_avgp": dict(shared)},
            "report": {"nu_fig7": nu7, "trials": trials,
                       "trajectory": "Pilot B" if pilot_b else
                       "Pilot A rescaled to eps^T_7 (the quick shortcut)",
                       "policy": "DDPG's best action seen; the greedy actor output "
                                 "is power_greedy"},
            "table": pd.concat(rows, ignore_index=True), "arrays": arrays}
