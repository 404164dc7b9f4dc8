"""Wireless channel models shared by every paper wing.

geometry (placement, distances) -> pathloss (dB conversions, mean gains Lambda) -> fading (h, |h|^2,
SIMO H) -> noise (N0, E_s, mean SNR, Gaussian draws) -> digital (rates, outage, TDMA latency) /
quantization (stochastic quantizer, payload) / ota (truncated channel inversion).
All functions are batched over leading axes, float64 by default, and draw randomness only from
the ``torch.Generator`` they are given.
"""

from .digital import (
    capacity_bits,
    outage,
    outage_probability_rayleigh,
    shannon_rate,
    tdma_round_latency,
    upload_latency,
)
from .fading import rayleigh_mimo, rayleigh_power, rayleigh_siso, rayleigh_tail
from .geometry import distance_to_bs, fixed_coordinates, quantile_radii, uniform_box, uniform_disc
from .noise import awgn, energy_per_symbol, mean_snr, noise_power_w, noise_psd_w_per_hz
from .ota import inversion_energy, inversion_threshold_power, truncated_inversion_mask
from .pathloss import (
    SPEED_OF_LIGHT,
    db_to_linear,
    dbm_to_watt,
    free_space_db,
    gain_from_db,
    linear_to_db,
    log_distance_db,
    watt_to_dbm,
)
from .quantization import payload_bits, quantization_variance_bound, stochastic_quantize

__all__ = [
    # geometry
    "uniform_disc", "uniform_box", "quantile_radii", "fixed_coordinates", "distance_to_bs",
    # path loss and units
    "SPEED_OF_LIGHT", "log_distance_db", "free_space_db", "db_to_linear", "linear_to_db",
    "dbm_to_watt", "watt_to_dbm", "gain_from_db",
    # fading
    "rayleigh_siso", "rayleigh_power", "rayleigh_mimo", "rayleigh_tail",
    # noise
    "noise_psd_w_per_hz", "noise_power_w", "energy_per_symbol", "mean_snr", "awgn",
    # digital
    "shannon_rate", "capacity_bits", "outage", "outage_probability_rayleigh", "upload_latency",
    "tdma_round_latency",
    # quantization
    "stochastic_quantize", "quantization_variance_bound", "payload_bits",
    # over-the-air
    "inversion_threshold_power", "truncated_inversion_mask", "inversion_energy",
]
