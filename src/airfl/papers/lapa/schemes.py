"""LAPA's configurations and benchmarks as one pipeline Scheme, kind ``lapa``.

A curve picks three things: `aggregation` (fedavg = Benchmark 1, beda = FedAdp = Benchmark 2,
wasserstein = eq. 21, with `ser_threshold` = eq. 22 = Configuration 2), `privacy` (none, lapa =
Configuration 3, uniform = Benchmark 3, arb = Benchmark 4, our reconstruction of ref. [27]) and
`channel` (ideal: sigma_ch = 0; practical: every device at `power_w` (default P_0) over its
block-fading channel, or at the per-device `powers` of each trial that the DDPG derivation stores
for Configuration 5) and, for LAPA over the practical channel, `switching` (dynamic noise
control, Sec. IV-A: from round t0 = 3 on (our reading), artificial noise stops for good once the
channel noise meets the requirement, eq. 23; T_th is logged).

Design (per trial): the layout and channels of :mod:`.radio` (one per (seed, trial), shared by all
figures), the per-entry channel noise, the SER selection, the static weights from the
partition's label histograms (Wasserstein distances, eq. 20) and eps_T from the noise level nu
(or, given the budget `eps_total` instead, the smallest nu whose eps_T is at most it:
`mechanism.noise_level_for_budget`). `budget_level` says which eps `eps_total` bounds: `sample`
(default) LAPA's own eps_T, a sample's change (Delta s_k of eq. 18, basic composition);
`device` (uniform DP only) the device's whole clipped upload as the run is accounted
(`privacy_simulated`: each device's T Gaussian releases of multiplier sqrt(sigma_k^2 +
sigma_ch,k^2) / 2C, the worst device, improved conversion at `delta`), so nu is set in the
design from the trial's sizes and channel noise (`mechanism.noise_level_for_device_budget`)
and eps_T is the sample-level eps that nu gives.

Whose path gains (`uplink_gains`): `own` (default: every figure of the paper) draws the Sec. V-A
layout, eq. 39's path loss and the calibrated channels (`radio.draw_radio`); `context` takes the
path gains and distances of the design context's statistical CSI (another experiment's devices,
e.g. the arena's) and draws LAPA's block-fading Rayleigh SIMO channels on them from the trial's
stream (seed, experiment, "trial", trial, "lapa_fading"), uncalibrated: `radio` then holds only
`antennas`, `noise_w` and `max_power_w` (the context's noise N0 B and power, in watts).

Rounds: the core uploads w_k - w after local SGD; the pseudo-gradient is g_k =
(w - w_k) / lam, clipped to C (eq. 17), perturbed by sigma_k z_k (eq. 19, stream ``dp``) and by
the channel sigma_ch,k z'_k (stream ``noise``): both standard normals are common to every curve
of a trial. The server step is w - lam sum_k G_k g^_k (eq. 3), returned as the core's update.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from airfl.core.aggregation import clip_by_norm
from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.data.heterogeneity import data_size_weights, wasserstein_to_global
from airfl.privacy.events import GaussianEvent
from airfl.privacy.parallel import WorstUnitGaussian
from airfl.runtime.rng import torch_generator

from . import mechanism as mech
from .control import FIRST_SWITCH_ROUND
from .radio import (bpsk_snr_threshold, channel_noise_std, context_radio, draw_radio,
                    layout_generator, symbol_snr)
from .weights import fedadp_weights, selected_devices, selection_fallback, selection_weights

AGGREGATIONS = ("fedavg", "beda", "wasserstein")
PRIVACY = ("none", "lapa", "uniform", "arb")
CHANNELS = ("ideal", "practical")
UPLINK_GAINS = ("own", "context")
#: what `eps_total` bounds: LAPA's eps_T (a sample, eq. 18) or the device's upload as accounted
BUDGET_LEVELS = ("sample", "device")
#: the `radio` keys a design on the context's path gains reads
CONTEXT_RADIO = ("antennas", "noise_w", "max_power_w")


class LapaScheme(Scheme):
    """One of LAPA's configurations or benchmarks."""

    kind = "lapa"
    # the design draws the trial's own layout and block-fading channel (radio.draw_radio per
    # (layout_seed, trial)): one design per trial, never one shared by equal core statistics
    uses_future_channels = True
    # lam, the clients' local step size, scales the sensitivity (eq. 18) and the server step
    # (eq. 3): the local-work settings' own (`lapa.training.lr`, or `fmnist_lr` on Fashion-MNIST)
    uses_local_lr = True

    def __init__(self, name: str, *, aggregation: str, privacy: str, channel: str, lr: float,
                 clip: float, delta: float, radio: dict[str, Any], alloc: dict[str, Any],
                 nu: float | None = None, eps_total: float | None = None,
                 uplink_gains: str = "own", budget_level: str = "sample", ser_threshold: float | None = None,
                 renormalize: bool = True, switching: bool = False,
                 power_w: float | None = None, powers: list[list[float]] | None = None,
                 p1_value: list[float] | None = None, t_th_predicted: list[int] | None = None,
                 p1_line_equal_evals: list[float] | None = None,
                 p1_random_equal_evals: list[float] | None = None, **unused: Any):
        for key, value, allowed in (("aggregation", aggregation, AGGREGATIONS),
                                    ("privacy", privacy, PRIVACY), ("channel", channel, CHANNELS)):
            if value not in allowed:
                raise ValueError(f"curves.{name}.{key}: {value!r}; allowed: {', '.join(allowed)}")
        if uplink_gains not in UPLINK_GAINS:
            raise ValueError(f"curves.{name}.uplink_gains: {uplink_gains!r}; allowed: "
                             f"{', '.join(UPLINK_GAINS)}")
        if budget_level not in BUDGET_LEVELS:
            raise ValueError(f"curves.{name}.budget_level: {budget_level!r}; allowed: "
                             f"{', '.join(BUDGET_LEVELS)}")
        if budget_level == "device" and (privacy != "uniform" or eps_total is None):
            raise ValueError(f"curves.{name}.budget_level: 'device' needs privacy 'uniform' and "
                             "eps_total (its per-device noise is the same every round, so nu "
                             f"is set in the design), got privacy {privacy!r}, eps_total "
                             f"{eps_total!r}")
        if nu is not None and eps_total is not None:
            raise ValueError(f"curves.{name}: nu and eps_total both set; give one (eps_total: "
                             "the smallest nu that meets it)")
        if privacy != "none" and nu is None and eps_total is None:
            raise ValueError(f"curves.{name}: privacy {privacy!r} needs nu (the noise level) "
                             "or eps_total (its budget eps_T)")
        if uplink_gains == "context":
            missing = [k for k in CONTEXT_RADIO if k not in radio]
            if missing:
                raise ValueError(f"curves.{name}.radio: uplink_gains context needs "
                                 f"{', '.join(missing)}")
        super().__init__(name, aggregation=aggregation, privacy=privacy, channel=channel,
                         nu=nu, ser_threshold=ser_threshold, **unused)
        self.eps_total, self.uplink_gains = eps_total, uplink_gains
        self.budget_level = budget_level
        self.aggregation, self.privacy, self.channel = aggregation, privacy, channel
        self.lr, self.clip, self.delta, self.nu = float(lr), float(clip), float(delta), nu
        self.radio, self.alloc = dict(radio), dict(alloc)
        self.ser_threshold, self.renormalize = ser_threshold, bool(renormalize)
        if switching and (privacy != "lapa" or channel != "practical"):
            raise ValueError(f"curves.{name}.switching needs privacy 'lapa' over the practical "
                             "channel (dynamic noise control, Sec. IV-A)")
        self.switching = bool(switching)
        self.power_w = float(radio["max_power_w"] if power_w is None else power_w)
        self.powers = None if powers is None else [list(map(float, p)) for p in powers]
        # P1's value and T_th predicted at this power per trial (the ddpg derivation), and the
        # best values of the line and random searches at DDPG's number of evaluations, logged
        self.predicted = {"p1_value": p1_value, "t_th_predicted": t_th_predicted,
                          "p1_line_equal_evals": p1_line_equal_evals,
                          "p1_random_equal_evals": p1_random_equal_evals}
        self._runs: dict[int, dict[str, Any]] = {}

    # -- design ---------------------------------------------------------------------------

    def design(self, context: DesignContext) -> dict[str, Any]:
        if context.label_histograms is None:
            raise ValueError("lapa needs the partition's label histograms (eq. 20)")
        radio = self._radio(context)
        power = np.full(context.num_devices, self.power_w) if self.powers is None else \
            np.asarray(self.powers[context.trial])          # p_k^2 of DDPG's p*
        if power.size != context.num_devices:
            raise ValueError(f"curves.{self.name}.powers: trial {context.trial} has {power.size} "
                             f"powers for {context.num_devices} devices")
        snr = symbol_snr(channel_norm2=radio.channel_norm2, power_w=power, clip=self.clip,
                         dim=context.dim, noise_w=self.radio["noise_w"])
        sigma_ch = np.zeros(context.num_devices) if self.channel == "ideal" else \
            channel_noise_std(channel_norm2=radio.channel_norm2, power_w=power,
                              noise_w=self.radio["noise_w"])
        threshold = None if self.ser_threshold is None else bpsk_snr_threshold(self.ser_threshold)
        mask = selected_devices(snr, threshold)
        fallback = selection_fallback(snr, threshold)     # no device meets it: the best alone
        sizes = context.data_sizes.numpy().astype(np.float64)
        distances = wasserstein_to_global(context.label_histograms)
        weights = data_size_weights(sizes) if self.aggregation == "fedavg" else \
            selection_weights(distances, sizes, mask, renormalize=self.renormalize)
        budget = dict(clip=self.clip, dim=context.dim, lr=self.lr, mean_size=sizes.mean(),
                      rounds=context.rounds, devices=context.num_devices, delta=self.delta)
        if self.budget_level == "device":          # the upload's eps as accounted (docstring)
            nu = mech.noise_level_for_device_budget(
                eps_total=self.eps_total, clip=self.clip, dim=context.dim, sizes=sizes,
                sigma_ch=sigma_ch, rounds=context.rounds, delta=self.delta)
        else:
            nu = mech.noise_level_for_budget(eps_total=self.eps_total, **budget) \
                if self.eps_total is not None else self.nu
        total = None if nu is None else mech.total_budget(nu=nu, **budget)
        return {"trial": context.trial, "radio": radio.to_record(), "symbol_snr": snr.tolist(),
                "snr_threshold": threshold, "selected": mask.tolist(),
                "excluded": int((~mask).sum()), "ser_fallback": fallback,
                "sigma_ch": sigma_ch.tolist(),
                "wasserstein": distances.tolist(), "weights": weights.tolist(),
                "power_w": power.tolist(),
                **{k: v[context.trial] for k, v in self.predicted.items() if v is not None},
                "sizes": sizes.tolist(), "eps_total": total, "rounds": context.rounds,
                **({"nu": nu} if self.eps_total is not None else {}),     # nu derived
                "sigma_init2": None if nu is None else (nu * self.clip) ** 2 / context.dim}

    def _radio(self, context: DesignContext):
        """The trial's radio: its own Sec. V-A layout and calibrated channels, or the context's
        path gains with LAPA's fading drawn on them (`uplink_gains`, module docstring)."""
        if self.uplink_gains == "own":
            return draw_radio(self.radio, clip=self.clip, dim=context.dim,
                              generator=layout_generator(self.radio["layout_seed"],
                                                         context.trial))
        return context_radio(path_gain=context.channel.path_gain.numpy(),
                             distances_m=context.channel.distances_m.numpy(),
                             antennas=self.radio["antennas"],
                             generator=torch_generator(context.seed, context.experiment,
                                                       "trial", context.trial, "lapa_fading"))

    # -- rounds ---------------------------------------------------------------------------

    def _run(self, design: dict[str, Any], round_index: int) -> dict[str, Any]:
        """The per-trial server state, fresh at round 1."""
        trial = design["trial"]
        if round_index == 1 or trial not in self._runs:
            k = len(design["sizes"])
            self._runs[trial] = {
                "lapa": mech.LapaState(design["eps_total"] or 0.0, design["rounds"], k),
                "eps": np.full(k, (design["eps_total"] or 0.0) / design["rounds"] / k),
                "spent": 0.0, "eps_sum": np.zeros(k), "eps_eff_sum": np.zeros(k), "progress": [],
                "beda_angle": np.zeros(k), "beda_count": 0,
                "switched": False, "t_th": design["rounds"],
                "simulated": WorstUnitGaussian()}      # each device's own composition
        return self._runs[trial]

    def _noise_std(self, run: dict[str, Any], design: dict[str, Any], sens: np.ndarray,
                   c: float) -> np.ndarray:
        """sigma_k = c Delta s_k / eps_k (eq. 19), eps_k of the curve's allocation."""
        if self.privacy == "none":
            return np.zeros(sens.size)
        mask = np.asarray(design["selected"], dtype=bool)    # excluded devices: weight 0, eps 0
        with np.errstate(divide="ignore"):
            return np.where(mask, c * sens / run["eps"], 0.0)

    def aggregate(self, updates: torch.Tensor, state: RoundState, design: dict[str, Any]
                  ) -> tuple[torch.Tensor, dict[str, Any]]:
        t, run = state.round_index, self._run(design, state.round_index)
        k, dim = updates.shape
        sizes = np.asarray(design["sizes"])
        mask = np.asarray(design["selected"], dtype=bool)
        grads, norms = clip_by_norm(-updates / self.lr, self.clip)           # eq. 17
        c, sens = mech.gaussian_constant(self.delta), mech.sensitivity(lr=self.lr, clip=self.clip,
                                                                        sizes=sizes)
        if self.switching and not run["switched"] and t >= FIRST_SWITCH_ROUND:   # eq. 23
            need = c * sens / run["eps"]
            if np.sum(np.asarray(design["sigma_ch"])[mask]) >= np.sum(need[mask]):
                run["switched"], run["t_th"] = True, t - 1
        sigma = np.zeros(k) if run["switched"] else self._noise_std(run, design, sens, c)
        sigma_ch = np.asarray(design["sigma_ch"])
        received = grads
        if self.privacy != "none":                                           # eq. 19
            z = torch.randn(k, dim, generator=state.streams("dp")).to(grads)
            received = received + torch.from_numpy(sigma).to(grads).unsqueeze(1) * z
        if self.channel == "practical":                                      # Sec. II-B
            z = torch.randn(k, dim, generator=state.streams("noise")).to(grads)
            received = received + torch.from_numpy(sigma_ch).to(grads).unsqueeze(1) * z
        weights = np.asarray(design["weights"])
        if self.aggregation == "beda":
            weights = self._beda_weights(run, received, sizes)
        weights_t = torch.from_numpy(weights).to(received)
        global_grad = weights_t @ received                                   # eq. 2
        record = self._account(run, sigma, sigma_ch, sens, c, mask, weights)
        if self.privacy in ("lapa", "arb"):         # Fig. 2 and the DDPG surrogate
            with np.errstate(divide="ignore"):
                need = np.where(mask, c * sens / run["eps"], 0.0)
            record.update({"eps": np.where(mask, run["eps"], 0.0).tolist(),
                           "sigma_req_sum": float(need.sum()),
                           "sigma_ch_sum": float(sigma_ch[mask].sum())})
            if self.channel == "practical":         # eq. 23: the switch when this reaches 1
                record["noise_ratio"] = float(need.sum() / sigma_ch[mask].sum())
        if self.privacy == "arb":     # ARB: no direction before two windows of progress
            record["arb_as_uniform"] = self._as_uniform(run, design, mask)
        self._advance(run, design, t, received, global_grad, mask, weights, sigma, sigma_ch, dim,
                      lambda: state.streams.trial_numpy("round", t, "lapa_pid"))
        if self.privacy == "lapa":
            lapa = run["lapa"]
            record.update({"pid_error": run.get("pid_error", 0.0),
                           "budget_min_ratio": min(lapa.budgets) / lapa.budgets[0],
                           "budget_collapse": lapa.collapsed(),
                           "pid_fallback_l2_rel": lapa.fallback})
        if self.switching:
            if run["switched"] or t == design["rounds"]:      # T_th once known (T: never)
                record["t_th"] = run["t_th"]
            record.update({"switched": run["switched"],
                           **{k: design[k] for k in self.predicted if k in design}})
        if self.privacy != "none":
            record["eps_total"] = float(design["eps_total"])      # eps^T of the curve
        record.update({"selected": int(mask.sum()), "weight_sum": float(weights.sum()),
                       "clipped_fraction": float((norms > self.clip).double().mean())})
        if self.ser_threshold is not None:       # eq. 22: no device met it, the best trains alone
            record["ser_fallback"] = bool(design["ser_fallback"])
        return -self.lr * global_grad, record                                # eq. 3

    @staticmethod
    def _as_uniform(run: dict[str, Any], design: dict[str, Any], mask: np.ndarray) -> bool:
        """Whether ARB's per-device budgets this round are uniform DP's eps^T / (T K) (to
        1e-9, relative): our ARB rule sets no direction before it has two windows of 5
        progress statistics, so its first 10 rounds spend the uniform split."""
        uniform = design["eps_total"] / design["rounds"] / mask.size
        return bool(np.allclose(run["eps"][mask], uniform, rtol=1e-9, atol=0.0))

    def _beda_weights(self, run: dict[str, Any], received: torch.Tensor, sizes: np.ndarray
                      ) -> np.ndarray:
        """FedAdp: angles to the size-weighted mean of the received gradients, smoothed (eq. 14)."""
        reference = torch.from_numpy(sizes / sizes.sum()).to(received) @ received
        theta = mech.angles(reference, received)
        run["beda_count"] += 1
        n = run["beda_count"]
        run["beda_angle"] = ((n - 1) * run["beda_angle"] + theta) / n
        return fedadp_weights(sizes, run["beda_angle"], self.alloc["beta"])

    def _account(self, run, sigma, sigma_ch, sens, c, mask, weights) -> dict[str, Any]:
        """The round's privacy: nominal eps_k (the planned budget, eq. 16, with the paper's
        Delta s_k = 2 lam C / |D_k|, eq. 18) summed per device (basic composition), and
        two events for the privacy stage.

        * ``privacy`` (the record's accounting, `epsilon_paper`): a Gaussian event with the
          defensible sensitivity 2C of a clipped update (our reading: one sample can move a clipped
          update by 2C; the paper's Delta s_k would give eps smaller by |D_k| / lam, logged as the
          nominal eps): the smallest noise multiplier over the selected devices, sqrt(sigma_k^2 +
          sigma_ch,k^2) / 2C (DP noise and channel noise together), bounds every device's loss in
          this round (parallel composition), and the rounds compose these worst cases.
        * ``privacy_simulated`` (`epsilon_simulated`): the mechanism as run. Each
          device's upload is g_k + sigma_k z_k + sigma_ch,k z'_k with real standard normals
          per coordinate (`aggregate`'s two randn(K, d) draws, eq. 19 and Sec. II-B): a
          Gaussian mechanism with per-coordinate std sqrt(sigma_k^2 + sigma_ch,k^2) on a
          pseudo-gradient clipped as a whole to C (eq. 17), so sensitivity 2C under
          replace-one (the clip actually applied), exactly the record's per-device mechanism;
          the devices that release are those the BS uses (selected, eq. 22, or with a
          weight G_k != 0); after the switch (eq. 23) sigma_k = 0 and the channel noise alone
          protects. It differs from ``privacy`` only in the composition: each device's own
          rounds, then the worst device (:class:`airfl.privacy.parallel.WorstUnitGaussian`,
          exact), where the record composes each round's worst device (an upper bound). They
          are equal when one device is the worst every round (uniform DP over the ideal
          channel: sigma_k proportional to 1/|D_k|; ARB's equal shares too); LAPA's shares
          move the worst device between rounds, so its simulated epsilon is smaller.

        The threat model is the paper's: the BS decodes every device's upload (NOMA/SIC), so
        each upload is a release (the audit's statistic, the weighted sum eq. 2, is a
        post-processing of them and leaks less: README's privacy audit)."""
        if self.privacy == "none":
            return {"privacy": None}
        eps = np.where(mask, run["eps"], 0.0)
        run["eps_sum"] += eps
        with np.errstate(divide="ignore"):          # eps_eff = c Ds / sqrt(s^2 + s_ch^2)
            effective = np.where(mask, c * sens / np.sqrt(sigma ** 2 + sigma_ch ** 2), 0.0)
        run["eps_eff_sum"] += effective
        total_std = np.sqrt(sigma ** 2 + sigma_ch ** 2)               # eq. 19 + Sec. II-B
        multiplier = float(np.min(total_std[mask])) / (2 * self.clip)  # 2C
        releases = mask | (np.asarray(weights) != 0)                  # the BS uses these rows
        simulated = run["simulated"].step(np.where(releases, total_std / (2 * self.clip),
                                                   np.inf))
        return {"privacy": GaussianEvent(multiplier).to_dict(),
                "privacy_simulated": [simulated.to_dict()], "budget": float(eps.sum()),
                "eps_nominal_round_max": float(eps.max()),
                "eps_nominal_total_max": float(run["eps_sum"].max()),
                "eps_effective_round_max": float(effective.max()),
                "eps_effective_total_max": float(np.max(run["eps_eff_sum"])),
                "sigma_mean": float(sigma[mask].mean()), "noise_multiplier_2C": multiplier}

    def _advance(self, run, design, t, received, global_grad, mask, weights, sigma, sigma_ch,
                 dim, pid_generator) -> None:
        """Next round's per-device budgets (eqs. 11-16 for LAPA, our reconstruction for ARB)."""
        rounds, total = design["rounds"], design["eps_total"]
        if self.privacy in ("none", "uniform") or t >= rounds:
            return
        run["spent"] += float(run["eps"][mask].sum())
        if self.privacy == "arb":
            run["progress"].append(mech.arb_progress(
                float(global_grad.double().square().sum()), weights=weights,
                clip_sigma2=sigma ** 2 + sigma_ch ** 2, dim=dim))
            budget = mech.arb_next_budget(run["progress"], total=total, spent=run["spent"],
                                          rounds=rounds, t=t)
            run["eps"] = np.where(mask, budget / mask.sum(), run["eps"])
            return
        lapa = run["lapa"]
        lapa.history.append(global_grad.detach().clone())
        lapa.smooth(mech.angles(global_grad, received), mask)
        lapa.spent = run["spent"]
        error, budget = lapa.next_budget(t=t, kp=self.alloc["kp"], ks=self.alloc["ks"],
                                         window=self.alloc["window"],
                                         reduction=self.alloc["reduction"],
                                         generator=pid_generator)
        scores = mech.gompertz(lapa.smoothed, self.alloc["beta"])
        if self.alloc.get("invert_share", False):
            scores = 1.0 / scores
        run["eps"] = mech.split_budget(budget, scores, mask)
        run["pid_error"] = error
