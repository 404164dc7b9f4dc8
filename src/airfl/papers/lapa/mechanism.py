"""LAPA's privacy allocation (paper Sec. III-B, eqs. 10-19) and the two privacy
benchmarks it is compared with (uniform DP, Benchmark 3; ARB, Benchmark 4, our reconstruction
of ref. [27]). Pure math and a small per-run state; the round's noise is drawn by the scheme.

Round-level budget: B_1 = eps_T / T and B_{t+1} = exp(-e^[t]) (eps_T - S_t) / (T - t) (eq. 12 with
our index convention: S_t is the budget spent in rounds 1..t), where e^[t] is the PID-like error
(eq. 11) of the sampled history of perturbed global gradients (eq. 10). Device-level split: eps_k
proportional to the Gompertz map (eq. 15) of each device's smoothed angle (eqs. 13-14), eq. 16.
Noise: sigma_k = c Delta s_k / eps_k with Delta s_k = 2 lam C / |D_k| (eqs. 18-19). The noise
level nu of uniform DP is set either from eps_T (`noise_level_for_budget`, its own accounting) or
from the device-level eps of the whole clipped upload (`noise_level_for_device_budget`, the
accounting the arena ranks by).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from airfl.privacy import epsilon_curve, gaussian_noise_for_epsilon
from airfl.privacy.parallel import WorstUnitGaussian

REDUCTIONS = ("mean_abs", "l2", "l2_rel")
#: Our safeguard: a run whose smallest round budget falls below this fraction of B_1 has
#: collapsed.
COLLAPSE_FRACTION = 0.2


def gaussian_constant(delta: float) -> float:
    """c = sqrt(2 ln(1.25 / delta)) of the Gaussian mechanism (Sec. III-B), taken with equality."""
    return math.sqrt(2.0 * math.log(1.25 / delta))


def sensitivity(*, lr: float, clip: float, sizes) -> np.ndarray:
    """Delta s_k = 2 lam C / |D_k| (paper eq. 18, used as written)."""
    return 2.0 * lr * clip / np.asarray(sizes, dtype=np.float64)


def total_budget(*, nu: float, clip: float, dim: int, lr: float, mean_size: float, rounds: int,
                 devices: int, delta: float) -> float:
    """eps_T that gives an average-sized device the round-1 noise sigma_init = nu C / sqrt(q)
    under the uniform split: eps_T = c (2 lam C / |D|) T K / sigma_init."""
    sigma_init = nu * clip / math.sqrt(dim)
    return gaussian_constant(delta) * 2.0 * lr * clip / mean_size * rounds * devices / sigma_init


def noise_level_for_budget(*, eps_total: float, clip: float, dim: int, lr: float,
                           mean_size: float, rounds: int, devices: int, delta: float) -> float:
    """The noise level nu (within rounding the smallest) whose eps_T (`total_budget`, LAPA's own accounting: the
    Gaussian constant c and the sensitivity Delta s = 2 lam C / |D| of eqs. 18-19, summed over
    the T rounds and K devices of the uniform split) is at most `eps_total`: the closed-form
    inverse nu = c (2 lam C / |D|) T K sqrt(q) / (eps_T C), moved up by ulps until the forward
    formula gives no more than eps_total (never above it in floating point)."""
    if eps_total <= 0:
        raise ValueError(f"eps_total must be > 0, got {eps_total}")
    nu = gaussian_constant(delta) * 2.0 * lr / mean_size * rounds * devices \
        * math.sqrt(dim) / eps_total
    forward = dict(clip=clip, dim=dim, lr=lr, mean_size=mean_size, rounds=rounds,
                   devices=devices, delta=delta)
    while total_budget(nu=nu, **forward) > eps_total:
        nu = math.nextafter(nu, math.inf)
    return nu


def uniform_device_std(*, nu: float, clip: float, dim: int, sizes, sigma_ch) -> np.ndarray:
    """Each device's per-entry noise std on its decoded pseudo-gradient under uniform DP
    (Benchmark 3): sqrt(sigma_k^2 + sigma_ch,k^2), sigma_k = c Delta s_k / eps_k (eq. 19) with
    Delta s_k = 2 lam C / |D_k| (eq. 18) and eps_k = eps_T / (T K), eps_T = `total_budget(nu)`,
    i.e. sigma_k = (nu C / sqrt(q)) mean|D| / |D_k|; sigma_ch,k the channel's (Sec. II-B)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    sigma = nu * clip / math.sqrt(dim) * sizes.mean() / sizes
    return np.sqrt(sigma ** 2 + np.asarray(sigma_ch, dtype=np.float64) ** 2)


def device_level_epsilon(*, nu: float, clip: float, dim: int, sizes, sigma_ch, rounds: int,
                         delta: float) -> float:
    """eps of uniform DP's T rounds as the run is accounted (the scheme's `privacy_simulated`
    events, composed as the privacy stage composes them): each device's upload a Gaussian
    mechanism of multiplier `uniform_device_std` / 2C (the whole clipped upload, replace-one,
    eq. 17), every round the same, composed per device and the worst device taken
    (WorstUnitGaussian), RDP composition and the improved conversion at `delta`."""
    multipliers = uniform_device_std(nu=nu, clip=clip, dim=dim, sizes=sizes,
                                     sigma_ch=sigma_ch) / (2.0 * clip)
    worst = WorstUnitGaussian()
    events = [[worst.step(multipliers).to_dict()] for _ in range(rounds)]
    return float(epsilon_curve(events, delta, conversion="improved")[-1])


def noise_level_for_device_budget(*, eps_total: float, clip: float, dim: int, sizes, sigma_ch,
                                  rounds: int, delta: float) -> float:
    """The noise level nu of uniform DP whose device-level eps (`device_level_epsilon`: each
    device's whole clipped upload, the accounting the arena ranks by) is at most `eps_total`,
    within the accountant's calibration tolerance the smallest. Closed form given the T-round
    Gaussian multiplier z* that meets the target (`airfl.privacy.gaussian_noise_for_epsilon`,
    the same RDP accountant and improved conversion, never above it): every device needs
    sigma_k^2 + sigma_ch,k^2 >= (2 C z*)^2, so nu = max_k sqrt((2 C z*)^2 - sigma_ch,k^2)_+
    sqrt(q) |D_k| / (C mean|D|) (`uniform_device_std` inverted); then moved up by ulps until
    the forward accounting is at most the target in floating point. A device the channel noise
    alone protects needs no DP noise; if every device is so protected, uniform DP adds none and
    its eq. 19 is undefined (eps_k = eps_T / (T K) = inf): refused."""
    if eps_total <= 0:
        raise ValueError(f"eps_total must be > 0, got {eps_total}")
    z = gaussian_noise_for_epsilon(eps_total, delta, rounds, sampling_rate=1.0)
    sizes = np.asarray(sizes, dtype=np.float64)
    need = np.sqrt(np.maximum((2.0 * clip * z) ** 2 - np.asarray(sigma_ch) ** 2, 0.0))
    nu = float(np.max(need * math.sqrt(dim) * sizes / (clip * sizes.mean())))
    if nu <= 0:
        raise ValueError(f"eps_total {eps_total}: the channel noise alone meets it on every "
                         "device, so uniform DP adds no noise (eq. 19 undefined)")
    forward = dict(clip=clip, dim=dim, sizes=sizes, sigma_ch=sigma_ch, rounds=rounds, delta=delta)
    while device_level_epsilon(nu=nu, **forward) > eps_total:
        nu = math.nextafter(nu, math.inf)
    return nu


def gompertz(angle, beta: float) -> np.ndarray:
    """f(theta) = beta (1 - exp(-exp(-beta (theta - 1)))) (paper eq. 15; decreasing in theta)."""
    return beta * (1.0 - np.exp(-np.exp(-beta * (np.asarray(angle, dtype=np.float64) - 1.0))))


def angles(global_gradient: torch.Tensor, local: torch.Tensor) -> np.ndarray:
    """theta_k = arccos(<g, g_k> / (||g|| ||g_k||)), cosine clipped to [-1, 1] (eq. 13)."""
    g = global_gradient.double()
    rows = local.double()
    cos = (rows @ g) / (torch.linalg.vector_norm(rows, dim=1) * torch.linalg.vector_norm(g)
                        ).clamp_min(1e-300)
    return torch.arccos(cos.clamp(-1.0, 1.0)).cpu().numpy()     # device: cuda too


def reduce_change(change: torch.Tensor, previous: torch.Tensor, how: str) -> float:
    """E = red(g^[i_j] - g^[i_{j-1}]) (eq. 10): the paper's |.| on a vector needs a reduction:
    mean absolute coordinate change (default), L2, or L2 relative to the earlier."""
    if how == "mean_abs":
        return float(change.abs().mean())
    norm = float(torch.linalg.vector_norm(change.double()))
    if how == "l2":
        return norm
    if how == "l2_rel":
        return norm / max(float(torch.linalg.vector_norm(previous.double())), 1e-300)
    raise ValueError(f"error reduction must be one of {', '.join(REDUCTIONS)}, got {how!r}")


def pid_error(history: list[torch.Tensor], *, kp: float, ks: float, window: int,
              reduction: str, generator: np.random.Generator) -> float:
    """e^[t] = K_p E^(i_n) + K_s (1/(n-1)) sum_{j=2..n} E^(i_j) (eq. 11, summation limits
    repaired): m distinct indices drawn from the last m+1 stored gradients, sorted;
    0 with fewer than 2 stored gradients."""
    t = len(history)
    if t < 2:
        return 0.0
    candidates = np.arange(max(0, t - 1 - window), t)
    picked = np.sort(generator.choice(candidates, size=window, replace=False)) \
        if candidates.size > window else candidates
    errors = [reduce_change(history[b] - history[a], history[a], reduction)
              for a, b in zip(picked[:-1], picked[1:])]
    return kp * errors[-1] + ks * float(np.mean(errors))


def next_round_budget(*, error: float, total: float, spent: float, rounds: int, t: int) -> float:
    """B_{t+1} = exp(-e^[t]) (eps_T - S_t) / (T - t) (eq. 12); never more than what
    is left, so sum_t B_t <= eps_T."""
    return math.exp(-error) * max(total - spent, 0.0) / (rounds - t)


def split_budget(budget: float, scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """eps_k = B f_k / sum_j f_j over the participants (eq. 16), with the guard
    eps_k >= 1e-3 B / K and then a rescale so that sum_k eps_k = B (our guard)."""
    eps = np.zeros(scores.size)
    if not mask.any() or budget <= 0:
        return eps
    share = scores[mask] / scores[mask].sum()
    guarded = np.maximum(budget * share, 1e-3 * budget / mask.sum())
    eps[mask] = guarded * budget / guarded.sum()
    return eps


@dataclass
class LapaState:
    """What the BS keeps between rounds: history H, budget spent S, smoothed angles
    and participation counts, the next round's per-device budgets."""

    total: float
    rounds: int
    devices: int
    spent: float = 0.0
    history: list[torch.Tensor] = field(default_factory=list)
    smoothed: np.ndarray | None = None
    counts: np.ndarray | None = None
    budgets: list[float] = field(default_factory=list)
    fallback: bool = False        # switched to `l2_rel` after a budget collapse

    def __post_init__(self):
        self.smoothed = np.zeros(self.devices)
        self.counts = np.zeros(self.devices, dtype=np.int64)
        self.budgets.append(self.total / self.rounds)          # B_1 = eps_T / T

    @property
    def budget(self) -> float:
        return self.budgets[-1]

    def smooth(self, theta: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """theta~_k^[t] = ((t-1)/t) theta~_k^[t-1] + (1/t) theta_k^[t], t counting the rounds
        device k took part in (eq. 14)."""
        self.counts[mask] += 1
        n = self.counts[mask]
        self.smoothed[mask] = ((n - 1) * self.smoothed[mask] + theta[mask]) / n
        return self.smoothed

    def collapsed(self) -> bool:
        """Our safeguard: min_t B_t < 0.2 B_1 flags a budget collapse (rerun with `l2_rel`)."""
        return self.fallback or min(self.budgets) < COLLAPSE_FRACTION * self.budgets[0]

    def next_budget(self, *, t: int, kp: float, ks: float, window: int, reduction: str,
                    generator) -> tuple[float, float]:
        """(e^[t], B_{t+1}) with the run's error reduction (eqs. 11-12). Our fallback:
        a budget below 0.2 B_1 marks a collapse, and this round and every later one use the
        scale-free `l2_rel` instead (the pipeline runs a curve once, so the rerun with `l2_rel`
        starts from the round the collapse shows). `generator()` gives
        the round's index-sampling generator (the same draws for both reductions)."""
        def attempt(how: str) -> tuple[float, float]:
            error = pid_error(self.history, kp=kp, ks=ks, window=window, reduction=how,
                              generator=generator())
            return error, next_round_budget(error=error, total=self.total, spent=self.spent,
                                            rounds=self.rounds, t=t)
        error, budget = attempt("l2_rel" if self.fallback else reduction)
        if not self.fallback and budget < COLLAPSE_FRACTION * self.budgets[0]:
            self.fallback = True
            error, budget = attempt("l2_rel")
        self.budgets.append(budget)
        return error, budget


def arb_progress(global_norm2: float, *, weights: np.ndarray, clip_sigma2: np.ndarray,
                 dim: int) -> float:
    """ARB's noise-debiased progress statistic P_t = ||g^||^2 - q sum_k G_k^2 (sigma_k^2 +
    sigma_ch,k^2) (our reconstruction of ref. [27]; the paper does not state its rule)."""
    return float(global_norm2 - dim * np.sum(weights ** 2 * clip_sigma2))


def arb_next_budget(progress: list[float], *, total: float, spent: float, rounds: int, t: int,
                    window: int = 5, rate: float = 0.05) -> float:
    """B_{t+1} = min{(1 + rate d_t) (eps_T - S_t) / (T - t), eps_T - S_t}, d_t = +1 when the
    mean of the last `window` progress statistics is below that of the `window` before (the
    gradient shrinks: training progresses), -1 otherwise, 0 before 2 windows (our
    reconstruction)."""
    left = max(total - spent, 0.0)
    direction = 0.0
    if len(progress) >= 2 * window:
        recent = np.mean(progress[-window:])
        before = np.mean(progress[-2 * window:-window])
        direction = 1.0 if recent < before else -1.0
    return min((1.0 + rate * direction) * left / (rounds - t), left)
