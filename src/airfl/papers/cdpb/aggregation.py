"""One over-the-air aggregation round of CDPB-n, CDPB-i, CDPB-mixed(beta) and the baselines,
batched over clients (no Python loop over clients).

Paper: (4), (10)-(19), §V baselines; the efficient simulation is ours (below).

Inputs are normalised client updates g [N, d] with ||g_k|| <= W (clip to W_clip, divide by
W_clip: our normalisation, :func:`normalise_updates`), the realised channel power gains h [N] of the
round, a :class:`RoundDesign` (the broadcast rho and constants) and a torch.Generator. The
output is the server's estimate g_hat [d] of (18)-(19) and a round record. The server update is
theta <- theta + W_clip * g_hat ((18)/(19), not Algorithm 1's -eta_t (... + q_t/K_t),
which drops 1/sqrt(rho)); if no client's gradient arrived (K_t = 0) the estimate is 0
and the record says ``skipped``.

Mechanisms (strategy names of setting.STRATEGIES; gamma_bar is CDPB with rho = rho_gamma):

* CDPB (beta): client k is reliable iff h_k >= h_th = rho W^2 / P. A reliable client sends
  sqrt(a)(g + r), a = rho / h, with artificial noise r of total power P h / rho - W^2 (sized by
  the worst-case W^2, not ||g||^2, so the noise does not depend on the data); it
  arrives as sqrt(rho)(g + r). An unreliable client flips a Bernoulli(beta) coin: heads, it sends
  full-power noise r ~ N(0, P/d I) (CDPB-n behaviour); tails, it stays silent (CDPB-i).
* h_min: every client sends its gradient with a = rho / h_k; rho is the broadcast
  P h_bar / (K W^2) ("expected" mode; clients below it exceed P and are counted as
  ``power_violations``) or P min_k h_k / W^2 each round ("realized" mode). Each fills its power
  with artificial noise of received power max(P h_k - rho W^2, 0).
* IS: a client participates iff its Bernoulli(q_IS) coin and its channel pass;
  otherwise silent. Participants behave like CDPB reliable clients.
* Noise-Free: CDPB-i truncation, a reliable client sends sqrt(a) g only.

Decision (noise_variance): (11) budgets a[||g||^2 + d sigma_r^2] <= P and (13)/(17)
define sigma_q^2 = d sum rho sigma_r^2 + ... as the TOTAL power over the d coordinates
(``total``, default: each coordinate of q_t has variance sigma_q^2 / d); Theorem 1
(App. A) treats sigma_q^2 as the Gaussian mechanism's variance, i.e. PER COORDINATE
(``per_coordinate``: every variance above is per coordinate, so the noise is d times stronger
and every transmission of artificial noise exceeds (11)'s budget P about d-fold; the record's
``tx_power_ratio`` = max_k E||x_k||^2 / P says by how much). The privacy record of the scheme
follows the same reading (privacy.mechanism_variance).

Decision: the efficient simulation still draws every client's coin (one
uniform per client per round, also when beta is 0 or 1) and takes every client's realised gain;
only the Gaussian noise draws are merged into one N(0, sigma_q,t^2 / d I) vector, which is exact
in distribution because all noise terms are independent isotropic Gaussians. Both simulations
draw the coins first from the generator, so for one generator state they pick the same clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from airfl.papers.cdpb.channel_stats import expected_round
from airfl.papers.cdpb.privacy import NOISE_VARIANCES
from airfl.papers.cdpb.setting import CdpbSetting, mechanism

NORMALIZE = ("realized", "expected")
HMIN_MODES = ("expected", "realized")
SIMULATIONS = ("efficient", "clientwise")


@dataclass(frozen=True)
class RoundDesign:
    """What the server broadcast before training plus the radio constants."""

    strategy: str
    rho: float
    P: float = 1.0
    W: float = 1.0
    sigma_z2: float = 0.01
    beta: float | None = None
    q_IS: float = 0.9
    normalize: str = "realized"
    expected_participants: float | None = None  # divisor of normalize="expected" (K p)
    hmin_mode: str = "expected"
    noise_variance: str = "total"   # reading of sigma_q^2: total over d coordinates | per coordinate

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", mechanism(self.strategy, self.beta)[1])
        for name in ("rho", "P", "W"):
            if not float(getattr(self, name)) > 0.0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.rho > self.P / self.W**2 * (1.0 + 1e-12):
            raise ValueError(f"rho must be <= P/W^2 = {self.P / self.W**2:g} ((25e)), got "
                             f"{self.rho}")
        if not float(self.sigma_z2) >= 0.0:
            raise ValueError(f"sigma_z2 must be >= 0, got {self.sigma_z2!r}")
        if not 0.0 < float(self.q_IS) <= 1.0:
            raise ValueError(f"q_IS must lie in (0, 1], got {self.q_IS!r}")
        if self.normalize not in NORMALIZE:
            raise ValueError(f"normalize must be one of {NORMALIZE}, got {self.normalize!r}")
        if self.normalize == "expected" and not (self.expected_participants or 0.0) > 0.0:
            raise ValueError("normalize='expected' needs expected_participants > 0 (K p(rho))")
        if self.hmin_mode not in HMIN_MODES:
            raise ValueError(f"hmin_mode must be one of {HMIN_MODES}, got {self.hmin_mode!r}")
        if self.noise_variance not in NOISE_VARIANCES:
            raise ValueError(f"noise_variance must be one of {NOISE_VARIANCES}, got "
                             f"{self.noise_variance!r}")

    @property
    def kind(self) -> str:
        return mechanism(self.strategy, self.beta)[0]

    def coordinate_share(self, d: int) -> float:
        """Fraction of a variance parameter (sigma_r^2 power, sigma_z^2, sigma_q^2) on each of
        the d coordinates: 1/d under the total reading ((11), (13)), 1 per coordinate
        (Theorem 1); the total power of such a noise vector is d * share times the parameter."""
        return 1.0 / d if self.noise_variance == "total" else 1.0

    @classmethod
    def from_setting(cls, s: CdpbSetting, strategy: str, rho: float, beta: float | None = None,
                     normalize: str = "realized", hmin_mode: str = "expected",
                     noise_variance: str = "total") -> "RoundDesign":
        """A round design with the setting's constants and expected K_t."""
        k_t, _ = expected_round(s, strategy, rho, beta)
        return cls(strategy=strategy, rho=float(rho), P=s.P, W=s.W, sigma_z2=s.sigma_z2,
                   beta=beta, q_IS=s.q_IS, normalize=normalize,
                   expected_participants=float(k_t), hmin_mode=hmin_mode,
                   noise_variance=noise_variance)


def normalise_updates(deltas: torch.Tensor, w_clip: float) -> torch.Tensor:
    """Clip each model delta to norm W_clip, then divide by W_clip: norms <= W = 1."""
    if not w_clip > 0:
        raise ValueError(f"w_clip must be > 0, got {w_clip}")
    norms = torch.linalg.vector_norm(deltas, dim=1, keepdim=True)
    return deltas * torch.clamp(w_clip / norms.clamp_min(1e-300), max=1.0) / w_clip


@dataclass(frozen=True)
class _Roles:
    """Who does what in one round, and the received noise power each client contributes."""

    rho: float
    sends_gradient: torch.Tensor   # [N] bool: in K_t
    sends_noise: torch.Tensor      # [N] bool: unreliable client sending full-power noise
    noise_rx: torch.Tensor         # [N] received artificial-noise power (0 for silent clients)
    tx_power: torch.Tensor         # [N] E||x_k||^2 given (g_k, h_k)


def _check_inputs(updates: torch.Tensor, gains: torch.Tensor, design: RoundDesign) -> None:
    if updates.ndim != 2 or gains.shape != (updates.shape[0],):
        raise ValueError(f"updates must be [N, d] and gains [N], got {tuple(updates.shape)} and "
                         f"{tuple(gains.shape)}")
    if bool((gains < 0).any()):
        raise ValueError("gains must be >= 0 (channel power gains)")
    if bool((torch.linalg.vector_norm(updates, dim=1) > design.W * (1.0 + 1e-6)).any()):
        raise ValueError(f"updates must have norm <= W = {design.W} (clip and normalise first, "
                         "normalise_updates)")


def _roles(updates: torch.Tensor, gains: torch.Tensor, design: RoundDesign,
           generator: torch.Generator) -> _Roles:
    """Draw every client's coin (always: the efficient simulation's coins match) and apply the
    strategy's rules."""
    _check_inputs(updates, gains, design)
    coin = torch.rand(gains.shape[0], generator=generator, dtype=gains.dtype)  # U(0,1) per client
    P, W2 = design.P, design.W**2
    none = torch.zeros_like(gains, dtype=torch.bool)
    if design.kind == "hmin":
        rho = design.rho if design.hmin_mode == "expected" else P * float(gains.min()) / W2
        sends, noisy = ~none, none
        noise_rx = torch.clamp(P * gains - rho * W2, min=0.0)
    else:
        rho = design.rho
        reliable = gains >= rho * W2 / P  # (6), (7): h >= h_th
        sends = reliable & (coin < design.q_IS) if design.kind == "is" else reliable
        noisy = ~reliable & (coin < design.beta) if design.kind == "cdpb" else none
        artificial = design.kind != "noise_free"
        noise_rx = torch.where(sends, P * gains - rho * W2, 0.0) if artificial else 0.0 * gains
    safe = gains.clamp_min(1e-300)
    g2 = torch.sum(updates**2, dim=1).to(gains.dtype)
    spread = updates.shape[1] * design.coordinate_share(updates.shape[1])  # 1 total, d per coord.
    tx = torch.where(sends, (rho * g2 + spread * noise_rx) / safe,
                     torch.where(noisy, spread * P, 0.0))  # (11): a(||g||^2 + d sigma_r^2)
    return _Roles(float(rho), sends, noisy, noise_rx, tx)


def _received_noise_power(roles: _Roles, gains: torch.Tensor, design: RoundDesign) -> float:
    """sigma_q,t^2 = sum_{K_t} (P h - rho W^2) + sum_{noisy} P h + sigma_z^2 ((13), (17))."""
    noisy = torch.where(roles.sends_noise, design.P * gains, 0.0)
    return float(roles.noise_rx[roles.sends_gradient].sum() + noisy.sum()) + design.sigma_z2


def _normaliser(roles: _Roles, design: RoundDesign) -> float:
    """K_t realised ((18), default) or K p(rho) (normalize='expected')."""
    if design.normalize == "expected":
        return float(design.expected_participants)
    return float(roles.sends_gradient.sum())


def _signal(updates: torch.Tensor, roles: _Roles, normaliser: float) -> torch.Tensor:
    """The noiseless part of (19): sum of the aggregated updates over the normaliser."""
    total = updates[roles.sends_gradient].sum(dim=0)
    return total / normaliser if normaliser > 0 else torch.zeros_like(total)


def _record(roles: _Roles, design: RoundDesign, sigma_q2: float, signal: torch.Tensor,
            estimate: torch.Tensor, normaliser: float, simulation: str) -> dict[str, Any]:
    skipped = int(roles.sends_gradient.sum()) == 0 and design.normalize == "realized"
    return {
        "simulation": simulation,
        "n_participants": int(roles.sends_gradient.sum()),
        "n_noise_only": int(roles.sends_noise.sum()),
        "rho": roles.rho,
        "sigma_q2": sigma_q2,
        "normalizer": normaliser,
        "skipped": skipped,
        "signal_norm": float(torch.linalg.vector_norm(signal)),
        "noise_norm": float(torch.linalg.vector_norm(estimate - signal)),
        "tx_energy": float(roles.tx_power.sum()),
        "max_tx_power": float(roles.tx_power.max()),
        "tx_power_ratio": float(roles.tx_power.max()) / design.P,   # realised max E||x||^2 / P
        "power_violations": int((roles.tx_power > design.P * (1.0 + 1e-9)).sum()),
    }


def aggregate_clientwise(updates: torch.Tensor, gains: torch.Tensor, design: RoundDesign,
                         generator: torch.Generator, coin_generator: torch.Generator | None = None
                         ) -> tuple[torch.Tensor, dict[str, Any]]:
    """Client-by-client simulation: every client forms x_k ((10)/(14)), the channel scales it by
    sqrt(h_k) (phase compensated, real baseband), the server sees the superposition
    plus receiver noise z ~ N(0, sigma_z^2/d I) ((2), (12), (16)) and applies (18).
    Coins come from coin_generator when given (e.g. the round's "sampling" stream), else from
    generator, which always supplies the Gaussian noise."""
    roles = _roles(updates, gains, design, coin_generator or generator)
    n, d = updates.shape
    gains = gains.to(updates.dtype)
    r_power = torch.where(roles.sends_gradient, roles.noise_rx / roles.rho,
                          torch.where(roles.sends_noise, design.P, 0.0)).to(updates.dtype)
    share = design.coordinate_share(d)
    r = torch.randn(n, d, generator=generator, dtype=updates.dtype)
    r = r * torch.sqrt(r_power * share)[:, None]  # artificial noise r_k, r_power total/per coord.
    a = torch.where(roles.sends_gradient, roles.rho / gains.clamp_min(1e-300), 0.0)  # (4)
    x = torch.where(roles.sends_gradient[:, None], torch.sqrt(a)[:, None] * (updates + r),
                    torch.where(roles.sends_noise[:, None], r, 0.0))  # (10), (14)
    z = torch.randn(d, generator=generator, dtype=updates.dtype) * (design.sigma_z2 * share) ** 0.5
    y = torch.sum(torch.sqrt(gains)[:, None] * x, dim=0) + z  # (2)
    normaliser = _normaliser(roles, design)
    signal = _signal(updates, roles, normaliser)
    estimate = y / (roles.rho**0.5 * normaliser) if normaliser > 0 else torch.zeros_like(y)
    sigma_q2 = _received_noise_power(roles, gains, design)
    return estimate, _record(roles, design, sigma_q2, signal, estimate, normaliser, "clientwise")


def aggregate_efficient(updates: torch.Tensor, gains: torch.Tensor, design: RoundDesign,
                        generator: torch.Generator, coin_generator: torch.Generator | None = None
                        ) -> tuple[torch.Tensor, dict[str, Any]]:
    """Equivalent simulation: g_hat = sum_{K_t} g / n + N(0, sigma_q,t^2 /
    (d rho n^2) I), n the normaliser; coins and gains exactly as in the client-wise one."""
    roles = _roles(updates, gains, design, coin_generator or generator)
    d = updates.shape[1]
    sigma_q2 = _received_noise_power(roles, gains, design)
    normaliser = _normaliser(roles, design)
    signal = _signal(updates, roles, normaliser)
    if normaliser > 0:
        share = design.coordinate_share(d)   # 1/d: (19)'s sigma_q^2 / d; 1: Theorem 1's
        std = (sigma_q2 * share / (roles.rho * normaliser**2)) ** 0.5  # (19)
        estimate = signal + std * torch.randn(d, generator=generator, dtype=updates.dtype)
    else:
        estimate = torch.zeros_like(signal)
    return estimate, _record(roles, design, sigma_q2, signal, estimate, normaliser, "efficient")


def aggregate(updates: torch.Tensor, gains: torch.Tensor, design: RoundDesign,
              generator: torch.Generator, simulation: str = "efficient",
              coin_generator: torch.Generator | None = None
              ) -> tuple[torch.Tensor, dict[str, Any]]:
    """One round with the chosen simulation (both are equal in distribution)."""
    if simulation == "efficient":
        return aggregate_efficient(updates, gains, design, generator, coin_generator)
    if simulation == "clientwise":
        return aggregate_clientwise(updates, gains, design, generator, coin_generator)
    raise ValueError(f"simulation must be one of {SIMULATIONS}, got {simulation!r}")
