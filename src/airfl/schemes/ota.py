"""Vanilla over-the-air FL with truncated channel inversion.

Zhu, Wang, Huang, "Broadband analog aggregation for low-latency federated edge learning",
IEEE TWC 2020 (truncated channel inversion, Sec. III): device m transmits x_m = b Delta_m / h_m iff
|h_m|^2 >= h_th, so all transmitted updates arrive with the common amplitude b; the server
receives y = b sum_{m in S} Delta_m + z and estimates Delta = y / (b |S|).

Energy: with ||Delta_m|| <= C (clipping) and |h_m|^2 >= h_th, ||x_m||^2 <= b^2 C^2 / h_th. Setting
b^2 = d E_s h_th / C^2 meets the per-round energy budget d E_s (Biased FL's eq. 8 has the same
form). Units: noise power per real entry N0 = 1, so E_s = snr_edge / Lambda_edge, and with
h_th = threshold * Lambda_edge:  b^2 = d * snr_edge * threshold / C^2  (dimensionless).
"""

from __future__ import annotations

import math

import torch

from airfl.channel.ota import truncated_inversion_mask
from airfl.core.aggregation import clip_by_norm, gaussian_noise
from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.privacy.events import GaussianEvent


class OtaTruncatedInversion(Scheme):
    kind = "ota_truncated_inversion"

    def design(self, context: DesignContext):
        snr_edge = 10.0 ** (self.params["snr_db"] / 10.0)
        threshold = float(self.params["truncation_threshold"])
        clip = float(self.params["clip_norm"])
        amplitude = math.sqrt(context.dim * snr_edge * threshold) / clip
        h_th = threshold * context.channel.reference_gain
        participation = torch.exp(-h_th / context.channel.path_gain)    # P(|h|^2 >= h_th), Rayleigh
        return {"amplitude": amplitude, "threshold_power": h_th,
                "participation_probability": participation.tolist(),
                # user-level (add/remove) sensitivity of y is b C; the noise std per entry is 1
                "noise_multiplier": 1.0 / (amplitude * clip)}

    def aggregate(self, updates, state: RoundState, design):
        clipped, norms = clip_by_norm(updates, self.params["clip_norm"])
        mask = truncated_inversion_mask(state.channel_power, design["threshold_power"])
        count = int(mask.sum())
        amplitude = design["amplitude"]
        noise = gaussian_noise(updates.shape[1], 1.0, state.streams("noise"), updates.dtype)
        received = amplitude * (mask.to(updates.dtype).to(updates.device) @ clipped) \
            + noise.to(updates.device)
        estimate = received / (amplitude * count) if count else torch.zeros_like(received)
        record = {"participants": count, "latency_s": updates.shape[1] / state.statistics.bandwidth_hz,
                  "noise_std": 1.0 / (amplitude * count) if count else math.inf,
                  "clipped_fraction": float((norms > self.params["clip_norm"]).float().mean()),
                  "privacy": [GaussianEvent(design["noise_multiplier"]).to_dict()]}
        return estimate, record
