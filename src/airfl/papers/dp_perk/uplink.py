"""The SIMO multiple-access uplink of AirFL-DP: channels, combiners, transmit scaling, noise.

Paper: Sec. II-B, eqs. (7)-(10) (signal model), Sec. IV-B (s_i = 1/(w^H h_i)), Sec. V-A (radio
constants); the per-trial channel plan drawn before training (offline CSI) is our reading.

* Geometry and path loss reuse :mod:`airfl.channel`: ``r_i = 1000 sqrt(U)`` clamped at 1 m
  (``uniform_disc``), free-space ``Lambda_i = (c_l/(4 pi f_c r_i))^2`` (``free_space_db``), Rayleigh
  block fading ``h_i^(t) ~ CN(0, Lambda_i I_m)`` (``rayleigh_mimo``).
* ``distance_mode``: ``per_device`` (paper: r_i has a device index; default), ``shared`` (one
  random distance per trial for all devices, the authors' code), ``edge`` (all devices at r_max,
  the labelling behind the -62.6 dB reference).
* ``zf_columns``: ``active`` (the K devices of round t; default) or ``all`` (all n devices,
  the authors' code; needs m >= n for ZF).
* All T rounds are drawn before training (offline, non-causal CSI): the water-filling needs
  every pi_t. Channels of all n devices are drawn every round (one ``rayleigh_mimo`` call), so a
  device's channel in round t does not depend on which devices are active.
* Effective noise: with ``s_i = 1/(w^H h_i)`` the combined signal is ``sum_i Delta_i``
  exactly and the noise on the sum is ``w^H n_j``. ``noise_model="complex_real_part"`` (default,
  authors' code): the model is real, the BS keeps the real part, variance ``||w||^2 sigma^2 / 2``
  per coordinate; ``"real_full"``: variance ``||w||^2 sigma^2`` (what the proof (57) assumes).
  The fast path draws that real noise directly; :func:`physical_aggregate` simulates (8)-(9)
  literally (complex h, s, n) for small d, to check the shortcut.

Random draws come only from the generators passed in (one per purpose: placement, sampling,
channel, noise), all on the CPU as in :mod:`airfl.runtime.rng`; results are moved to
``device``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

import torch

from airfl.channel import (awgn, free_space_db, gain_from_db, linear_to_db, rayleigh_mimo,
                           uniform_disc)
from airfl.runtime.rng import torch_generator

from .beamforming import power_threshold, solve_p1
from .privacy import NOISE_MODELS

__all__ = [
    "DISTANCE_MODES", "PLAN_STREAMS", "ZF_COLUMNS", "RoundChannel", "StoredRound", "UplinkPlan",
    "active_count",
    "device_distances", "edge_snr_db", "effective_noise", "gather_active",
    "effective_noise_variance", "pathloss", "physical_aggregate", "plan_uplink",
    "sample_active_sets", "snr_wc_db", "transmit_power", "transmit_scalars", "trial_generators",
]

DISTANCE_MODES = ("per_device", "shared", "edge")
ZF_COLUMNS = ("active", "all")
PLAN_STREAMS = ("placement", "sampling", "channel")


def trial_generators(seed: int, trial: int, experiment: str = "dp_perk_airfl"
                     ) -> dict[str, torch.Generator]:
    """One CPU generator per purpose of a trial (placement, sampling, channel, noise, design: the
    SDR randomisation), derived with :func:`airfl.runtime.rng.torch_generator`; the methods consume the
    noise stream round by round."""
    return {name: torch_generator(seed, experiment, "trial", trial, name)
            for name in (*PLAN_STREAMS, "noise", "design")}


def active_count(n_devices: int, sample_ratio: float) -> int:
    """``K = r n`` (Sec. II-A); raises if r n is not an integer."""
    if not 0 < sample_ratio <= 1:
        raise ValueError(f"sample_ratio must satisfy 0 < r <= 1, got {sample_ratio!r}")
    k = round(sample_ratio * n_devices)
    if abs(k - sample_ratio * n_devices) > 1e-9 or k < 1:
        raise ValueError(f"sample_ratio * n_devices must be a positive integer, got "
                         f"{sample_ratio} * {n_devices}")
    return int(k)


def device_distances(n_devices: int, generator: torch.Generator, radius_m: float = 1000.0,
                     min_distance_m: float = 1.0, mode: str = "per_device") -> torch.Tensor:
    """Device-BS distances [n]: ``r = R sqrt(U)``, clamped at ``min_distance_m`` (Sec. V-A)."""
    if mode not in DISTANCE_MODES:
        raise ValueError(f"distance_mode must be one of {DISTANCE_MODES}, got {mode!r}")
    if mode == "edge":
        return torch.full((n_devices,), float(radius_m), dtype=torch.float64)
    count = n_devices if mode == "per_device" else 1
    r = uniform_disc(count, radius=radius_m, generator=generator).clamp_min(min_distance_m)  # R sqrt(U)
    return r.expand(n_devices).clone()


def pathloss(distances, carrier_hz: float = 2.4e9) -> torch.Tensor:
    """Free-space mean gain ``Lambda = (c_l / (4 pi f_c r))^2`` (Sec. V-A) via airfl.channel."""
    return gain_from_db(free_space_db(distances, carrier_hz=carrier_hz))


def snr_wc_db(power_w, pathloss_min: float, sigma2: float) -> torch.Tensor:
    """Worst-case SNR ``10 log10(P Lambda_min / sigma^2)`` in dB (Fig. 6 x-axis)."""
    return linear_to_db(torch.as_tensor(power_w, dtype=torch.float64) * pathloss_min / sigma2)


def edge_snr_db(power_w: float, radius_m: float, carrier_hz: float, sigma2: float) -> float:
    """SNR_wc of a power for a device at the cell edge r = R (Sec. V-A; Fig. 6's x-axis, the
    unit in which the curves and the perk window are reported)."""
    return float(snr_wc_db(power_w, float(pathloss(radius_m, carrier_hz)), sigma2))


def sample_active_sets(n_devices: int, k: int, rounds: int, generator: torch.Generator
                       ) -> torch.Tensor:
    """I^(t) for every round [T, K] (sorted indices): uniform, without replacement (Sec. II-A)."""
    if not 1 <= k <= n_devices:
        raise ValueError(f"need 1 <= K <= n_devices, got K = {k}, n = {n_devices}")
    keys = torch.rand((rounds, n_devices), generator=generator, dtype=torch.float64)
    return keys.argsort(dim=-1)[:, :k].sort(dim=-1).values  # a uniform random K-subset per round


def gather_active(channels_all: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
    """Columns I^(t) of every round: [T, m, n] and [T, K] -> [T, m, K]."""
    index = active.to(channels_all.device).unsqueeze(1).expand(-1, channels_all.shape[1], -1)
    return torch.gather(channels_all, 2, index)


@dataclass(frozen=True)
class RoundChannel:
    """One round's channel draw as the aggregation rules see it."""

    round_index: int
    active: torch.Tensor      # [K] device indices I^(t)
    channels: torch.Tensor    # [m, K] h_i^(t) of the active devices (complex)
    w0: torch.Tensor          # [m] (P1) solution
    pi: float                 # ||w0||
    gamma: float              # c / sqrt(d P)

    def transmit_scalars(self, q: float) -> torch.Tensor:
        """``s_i = 1/(w^H h_i)`` [K] of the active devices for the combiner of norm ``q``,
        ``w = (q/pi) w_0`` (Cor. IV.1 (49)); the design stage stores them per round
        (:class:`StoredRound`), so training never redraws the channels."""
        w = (q / self.pi) * self.w0                                      # (49)
        return transmit_scalars(w, self.channels)


@dataclass(frozen=True)
class StoredRound:
    """One round as the design stage stored it (what the aggregation rules read): the active
    set, pi_t, and the transmit scalars s_i of the norm q_t the design chose. The train stage
    builds it from the stored design instead of redrawing the trial's plan."""

    round_index: int
    active: torch.Tensor      # [K] device indices I^(t)
    pi: float                 # ||w0||
    q: float | None           # the norm the scalars were computed for (None: no scalars)
    scalars: torch.Tensor | None   # [K] complex s_i = 1/(w^H h_i), w = (q/pi) w_0

    def transmit_scalars(self, q: float) -> torch.Tensor:
        """The stored s_i; only for the norm they were designed for (another q would need the
        channels, which the design does not store)."""
        if self.scalars is None or q != self.q:
            raise ValueError(f"round {self.round_index}: the stored design has transmit scalars "
                             f"for q = {self.q!r}, not {q!r} (re-run the design stage)")
        return self.scalars


@dataclass(frozen=True)
class UplinkPlan:
    """Everything the channel decides for a trial, drawn before training (offline CSI)."""

    distances: torch.Tensor     # [n] m
    pathloss: torch.Tensor      # [n] Lambda_i
    active: torch.Tensor        # [T, K]
    channels_all: torch.Tensor  # [T, m, n] complex
    w0: torch.Tensor            # [T, m] (P1) solutions at power_w
    pi: torch.Tensor            # [T] float64, ||w0||
    gamma: float
    power_w: float
    beamformer: str             # solver that ran (see beamforming.solve_p1)
    zf_columns: str

    @property
    def rounds(self) -> int:
        return int(self.pi.shape[0])

    @property
    def channels(self) -> torch.Tensor:
        """Active devices' channels [T, m, K]."""
        return gather_active(self.channels_all, self.active)

    def round(self, t: int) -> RoundChannel:
        """The draw of round t (0-based)."""
        active = self.active[t]
        return RoundChannel(t, active, self.channels_all[t][:, active.to(self.channels_all.device)],
                            self.w0[t], float(self.pi[t]), self.gamma)

    def at_power(self, power_w: float) -> "UplinkPlan":
        """The same draws at another power: (P1) scales with gamma = c/sqrt(dP) (33a) and its
        direction does not change, so ``w_0(P') = w_0(P) sqrt(P/P')`` (Fig. 6 sweeps P only)."""
        if not power_w > 0:
            raise ValueError(f"power_w must be > 0, got {power_w!r}")
        ratio = math.sqrt(self.power_w / power_w)
        return replace(self, w0=self.w0 * ratio, pi=self.pi * ratio, gamma=self.gamma * ratio,
                       power_w=float(power_w))


def plan_uplink(n_devices: int, sample_ratio: float, antennas: int, rounds: int, clip: float,
                dim: int, power_w: float, generators: Mapping[str, torch.Generator], *,
                radius_m: float = 1000.0, min_distance_m: float = 1.0, carrier_hz: float = 2.4e9,
                distance_mode: str = "per_device", zf_columns: str = "active",
                beamformer: str = "zf", device: str | torch.device = "cpu",
                path_gain: torch.Tensor | None = None,
                distances_m: torch.Tensor | None = None) -> UplinkPlan:
    """Draw a trial's distances, active sets and channels; solve (P1) for every round.

    ``generators`` needs the keys ``placement``, ``sampling``, ``channel`` (see
    :func:`trial_generators`); ``beamformer`` as :func:`beamforming.solve_p1` (``zf`` default).

    ``path_gain`` (with ``distances_m``, [n] each): the mean gains Lambda_i of a channel given
    from outside (a design context's statistical CSI), used in place of the plan's own placement
    and free-space law; the placement stream is then not read, and ``radius_m``,
    ``min_distance_m``, ``carrier_hz`` and ``distance_mode`` play no part. The channels are
    drawn from them exactly as from the plan's own gains, h_i ~ CN(0, Lambda_i I_m) (Sec. II-B).
    """
    missing = [k for k in PLAN_STREAMS if k not in generators]
    if missing:
        raise ValueError(f"generators is missing the streams {missing}")
    if zf_columns not in ZF_COLUMNS:
        raise ValueError(f"zf_columns must be one of {ZF_COLUMNS}, got {zf_columns!r}")
    k = active_count(n_devices, sample_ratio)
    gamma = power_threshold(clip, dim, power_w)
    if path_gain is None:
        dist = device_distances(n_devices, generators["placement"], radius_m, min_distance_m,
                                distance_mode)
        lam = pathloss(dist, carrier_hz)
    else:
        dist, lam = _given_gains(n_devices, path_gain, distances_m)
    active = sample_active_sets(n_devices, k, rounds, generators["sampling"])
    h_all = rayleigh_mimo(lam, antennas, rounds, generators["channel"]).to(device)  # [T, m, n]
    columns = gather_active(h_all, active) if zf_columns == "active" else h_all
    w0, used = solve_p1(columns, gamma, beamformer, generators.get("design"))
    pi = torch.linalg.vector_norm(w0, dim=-1).to("cpu", torch.float64)
    return UplinkPlan(dist, lam, active, h_all, w0, pi, gamma, power_w, used, zf_columns)


def _given_gains(n_devices: int, path_gain: torch.Tensor, distances_m: torch.Tensor | None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """The given (distances [n], Lambda_i [n]) as float64 CPU tensors; stops on a shape or a
    gain that is not positive and finite."""
    lam = torch.as_tensor(path_gain, dtype=torch.float64).to("cpu").clone()
    if distances_m is None:
        raise ValueError("path_gain needs distances_m (the devices' distances, m)")
    dist = torch.as_tensor(distances_m, dtype=torch.float64).to("cpu").clone()
    if lam.shape != (n_devices,) or dist.shape != (n_devices,):
        raise ValueError(f"path_gain and distances_m must have shape ({n_devices},), got "
                         f"{tuple(lam.shape)} and {tuple(dist.shape)}")
    if not bool(torch.isfinite(lam).all() and (lam > 0).all()):
        raise ValueError("path_gain: every Lambda_i must be finite and > 0")
    return dist, lam


# ------------------------------------------------------------------------------------------
# Transmitter and receiver of one round
# ------------------------------------------------------------------------------------------

def transmit_scalars(w: torch.Tensor, channels: torch.Tensor) -> torch.Tensor:
    """``s_i = 1/(w^H h_i)`` (Sec. IV-B): perfect inversion, ``g_i = w^H h_i s_i = 1``. [.., K]."""
    return 1.0 / (w.conj().unsqueeze(-2) @ channels).squeeze(-2)


def transmit_power(update_norms: torch.Tensor, scalars: torch.Tensor, dim: int) -> torch.Tensor:
    """Per-symbol power ``(1/d) ||x_i||^2 = |s_i|^2 ||Delta_i||^2 / d`` of x_i = s_i Delta_i (7)."""
    return scalars.abs() ** 2 * update_norms.to(scalars.real.dtype) ** 2 / dim  # (7)


def effective_noise_variance(q, sigma2: float, noise_model: str = "complex_real_part"):
    """Per-coordinate variance of the noise on the combined sum, ``Re(w^H n_j)`` or ``w^H n_j``.

    ``complex_real_part``: ``q^2 sigma^2 / 2``; ``real_full``: ``q^2 sigma^2``.
    ``q = ||w||`` may be a float or a tensor.
    """
    if noise_model not in NOISE_MODELS:
        raise ValueError(f"noise_model must be one of {NOISE_MODELS}, got {noise_model!r}")
    full = q * q * sigma2                      # Var(w^H n) = ||w||^2 sigma^2, n ~ CN(0, sigma^2 I)
    return full / 2.0 if noise_model == "complex_real_part" else full


def effective_noise(dim: int, q: float, sigma2: float, noise_model: str,
                    generator: torch.Generator, dtype: torch.dtype = torch.float32,
                    device: str | torch.device = "cpu") -> torch.Tensor:
    """The real noise z [d] on the sum, ``N(0, effective_noise_variance)`` i.i.d..

    Exactly one ``torch.randn(d)`` (float64, CPU, via :func:`airfl.channel.awgn`) scaled by the
    std, so two calls with the same generator state and the same q give bit-identical z.
    """
    var = effective_noise_variance(float(q), sigma2, noise_model)
    return awgn((dim,), var, generator).to(device=device, dtype=dtype)


def physical_aggregate(clipped: torch.Tensor, channels: torch.Tensor, w: torch.Tensor,
                       sigma2: float, generator: torch.Generator) -> torch.Tensor:
    """``Delta_hat = w^H (sum_i h_i s_i Delta_i + n_j)`` for every entry j, literally (8)-(9).

    ``clipped`` [K, d] real, ``channels`` [m, K], ``w`` [m]; receiver noise ``n_j ~ CN(0, sigma^2
    I_m)`` drawn as one ``awgn((d, m), complex=True)``. Returns the complex estimate [d]; the BS
    uses its real part. Debug mode for small d (it materialises the m x d received block).
    """
    s = transmit_scalars(w, channels)                               # [K]
    x = s.unsqueeze(-1) * clipped.to(channels.dtype)                # x_i = s_i Delta_i  [K, d]
    noise = awgn((clipped.shape[1], channels.shape[0]), sigma2, generator, complex=True)
    y = channels @ x + noise.to(channels.device, channels.dtype).T  # (8): y_j = sum h_i x_ij + n_j
    return w.conj() @ y                                             # (9): w^H y_j
