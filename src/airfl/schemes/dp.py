"""FedAvg with user-level Gaussian DP (McMahan, Ramage, Talwar, Zhang, ICLR 2018, DP-FedAvg).

Each round every device takes part independently with probability q (Poisson sampling); each
update is clipped to L2 norm C; the server adds N(0, (z C)^2 I) to the sum and divides by the
expected count q N (the fixed-denominator estimator, unbiased for the clipped mean). One round
is the Poisson-subsampled Gaussian mechanism with noise multiplier z and rate q (a Gaussian
mechanism when q = 1); the privacy stage composes these records into (eps, delta).
"""

from __future__ import annotations

import torch

from airfl.core.aggregation import clip_by_norm, gaussian_noise
from airfl.core.scheme import RoundState, Scheme
from airfl.privacy.events import GaussianEvent, SubsampledGaussianEvent


class GaussianDpFedAvg(Scheme):
    kind = "gaussian_dp"

    def aggregate(self, updates, state: RoundState, design):
        q = float(self.params["sampling_rate"])
        clip = float(self.params["clip_norm"])
        z = float(self.params["noise_multiplier"])
        n = updates.shape[0]
        sampled = torch.rand(n, generator=state.streams("sampling"), dtype=torch.float64) < q
        clipped, norms = clip_by_norm(updates, clip)
        noise = gaussian_noise(updates.shape[1], z * clip, state.streams("dp"), updates.dtype)
        total = sampled.to(updates.dtype).to(updates.device) @ clipped + noise.to(updates.device)
        event = GaussianEvent(z) if q == 1.0 else SubsampledGaussianEvent(q, z)
        record = {"participants": int(sampled.sum()), "latency_s": 0.0, "noise_std": z * clip / (q * n),
                  "clipped_fraction": float((norms > clip).float().mean()),
                  "privacy": [event.to_dict()]}
        return total / (q * n), record
