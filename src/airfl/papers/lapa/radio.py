"""LAPA's radio: the layout of Sec. V-A, the path loss of eq. 39, Rayleigh
SIMO block fading normalised by a calibration constant, the channel noise on a decoded gradient
and the SINR -> SER conversion that eq. 22's threshold is expressed in.

Everything here is a pure function of its arguments; the generators come from the caller
(`layout_generator`: one layout per (seed, trial), shared by every figure of the paper, so Fig. 3
draws exactly the devices the training figures use).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from airfl.channel.geometry import distance_to_bs, uniform_box
from airfl.channel.pathloss import free_space_db
from airfl.runtime.rng import torch_generator

#: The paper's layout (Sec. V-A): BS at (-50, 0, 10) m; Region I x in [-10, 0], Region II
#: x in [10, 20], both y in [-5, 5], z = 0; 7 + 8 devices.
BS_POSITION = (-50.0, 0.0, 10.0)


def layout_generator(seed: int, trial: int) -> torch.Generator:
    """The layout and fading stream of one trial, keyed by `lapa.radio.layout_seed` (Fig. 3
    draws the Sec. V-A layout at seed 0) and the trial, not by the figure: Fig. 3 and
    every training figure see the same devices and channels (common random numbers)."""
    return torch_generator(seed, "lapa", "trial", trial, "placement")


@dataclass(frozen=True)
class Radio:
    """One trial's radio: positions [K, 3], region per device, 3-D distances, path gain PL_k
    (eq. 39, linear), normalised channels' squared norms ||h_k||^2 and the calibration kappa."""

    positions: np.ndarray
    region: np.ndarray
    distances_m: np.ndarray
    path_gain: np.ndarray
    channel_norm2: np.ndarray
    kappa: float

    def to_record(self) -> dict[str, Any]:
        return {"positions": self.positions.tolist(), "region": self.region.tolist(),
                "distances_m": self.distances_m.tolist(), "path_gain": self.path_gain.tolist(),
                "channel_norm2": self.channel_norm2.tolist(), "kappa": self.kappa}


def place_devices(*, region_counts: tuple[int, int], region_x: tuple[tuple[float, float], ...],
                  region_y: tuple[float, float], generator: torch.Generator
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Devices uniform in Regions I and II at z = 0 (Sec. V-A), then shuffled so which device
    sits in which region is random and seeded. Returns positions [K, 3], region [K]."""
    parts, labels = [], []
    for index, (count, (x_lo, x_hi)) in enumerate(zip(region_counts, region_x)):
        parts.append(uniform_box(count, (x_lo, region_y[0], 0.0), (x_hi, region_y[1], 0.0),
                                 generator))
        labels.append(torch.full((count,), index + 1, dtype=torch.long))
    order = torch.randperm(sum(region_counts), generator=generator)
    return torch.cat(parts)[order], torch.cat(labels)[order]


def path_gain_eq39(distances_m: torch.Tensor, *, carrier_hz: float, exponent: float,
                   gain_bs_dbi: float, gain_device_dbi: float) -> torch.Tensor:
    """PL_k = G_BS G_D (c / (4 pi f_c d_k))^3.76 (paper eq. 39), as a linear power gain."""
    loss_db = free_space_db(distances_m, carrier_hz=carrier_hz, exponent=exponent,
                            antenna_gain_db=gain_bs_dbi + gain_device_dbi)
    return 10.0 ** (-loss_db / 10.0)


def symbol_snr(*, channel_norm2, power_w, clip: float, dim: int, noise_w: float) -> np.ndarray:
    """Symbol SNR of one gradient entry, gamma_k^sym = E_s p_k^2 ||h_k||^2 / sigma_n0^2 with
    E_s = s_ref^2 = C^2 / q (eq. 6 after perfect SIC and MRC)."""
    return (clip ** 2 / dim) * np.asarray(power_w) * np.asarray(channel_norm2) / noise_w


def draw_radio(radio: dict[str, Any], *, clip: float, dim: int, generator: torch.Generator
               ) -> Radio:
    """The trial's layout and block-fading channels (drawn once per trial: Sec. II-B).

    h_k = sqrt(kappa PL_k / mean_j PL_j) g_k, g_k ~ CN(0, I_Na) (Rayleigh law: our reading).
    kappa normalises the paper's literal path loss (~ -120 dB, which would give an SNR of about
    -75 dB) while keeping its relative spread: the median device at P_0 has symbol
    SNR `median_snr_db` (+1.5 dB).
    """
    positions, region = place_devices(
        region_counts=tuple(radio["region_devices"]),
        region_x=(tuple(radio["region1_x"]), tuple(radio["region2_x"])),
        region_y=tuple(radio["region_y"]), generator=generator)
    distances = distance_to_bs(positions, torch.tensor(radio["bs_position"], dtype=torch.float64))
    gain = path_gain_eq39(distances, carrier_hz=radio["carrier_hz"], exponent=radio["pl_exponent"],
                          gain_bs_dbi=radio["gain_bs_dbi"],
                          gain_device_dbi=radio["gain_device_dbi"])
    k, antennas = positions.shape[0], int(radio["antennas"])
    g = torch.randn(k, antennas, 2, generator=generator, dtype=torch.float64) / math.sqrt(2.0)
    fading = (g ** 2).sum(dim=(1, 2)).numpy()                  # ||g_k||^2, E = N_a
    relative = (gain / gain.mean()).numpy()
    unit = symbol_snr(channel_norm2=relative * fading, power_w=radio["max_power_w"], clip=clip,
                      dim=dim, noise_w=radio["noise_w"])
    kappa = 10 ** (radio["median_snr_db"] / 10) / float(np.median(unit))
    return Radio(positions.numpy(), region.numpy(), distances.numpy(), gain.numpy(),
                 kappa * relative * fading, float(kappa))


def channel_noise_std(*, channel_norm2, power_w, noise_w: float) -> np.ndarray:
    """sigma_ch,k = sigma_n0 / (p_k ||h_k||) per gradient entry (Sec. II-B), with
    p_k^2 = power_w the transmit power; real Gaussian of full variance."""
    return math.sqrt(noise_w) / np.sqrt(np.asarray(power_w) * np.asarray(channel_norm2))


def bpsk_snr_threshold(ser: float) -> float:
    """gamma_th with SER = Q(sqrt(2 gamma_th)) for uncoded BPSK (our reading: the paper gives
    no modulation): gamma_th = [Q^-1(SER)]^2 / 2."""
    from scipy.stats import norm

    if not 0.0 < ser < 0.5:
        raise ValueError(f"SER threshold must be in (0, 0.5), got {ser}")
    return float(norm.isf(ser) ** 2 / 2.0)


def bpsk_ser(snr) -> np.ndarray:
    """Uncoded BPSK symbol error rate Q(sqrt(2 gamma))."""
    from scipy.stats import norm

    return norm.sf(np.sqrt(2.0 * np.asarray(snr, dtype=np.float64)))


def context_radio(*, path_gain, distances_m, antennas: int, generator: torch.Generator) -> Radio:
    """The trial's radio on another experiment's devices (`uplink_gains: context`, e.g. the
    arena's): the context's path gains Lambda_k and distances (its placement and path-loss law,
    not Sec. V-A's layout and eq. 39), LAPA's block-fading Rayleigh SIMO channels drawn once per
    trial as in `draw_radio`, h_k = sqrt(Lambda_k) g_k, g_k ~ CN(0, I_Na), and no calibration
    (kappa = 1): the power and the noise are the context's own, in watts. No positions (the
    context gives distances only: an empty [K, 0] array) and no region (0)."""
    gain = np.asarray(path_gain, dtype=np.float64)
    k = gain.size
    g = torch.randn(k, int(antennas), 2, generator=generator, dtype=torch.float64) / math.sqrt(2.0)
    fading = (g ** 2).sum(dim=(1, 2)).numpy()                  # ||g_k||^2, E = N_a
    return Radio(np.zeros((k, 0)), np.zeros(k, dtype=np.int64),
                 np.asarray(distances_m, dtype=np.float64), gain, gain * fading, 1.0)
