"""Coordinate-wise trimmed-mean aggregation (Yin, Chen, Ramchandran, Bartlett, ICML 2018, Def. 2):
per coordinate, drop the largest and the smallest `trim` fraction of the devices' values and
average the rest. With trim = 0 it is the unweighted mean of the updates."""

from __future__ import annotations

import math

import torch

from airfl.core.scheme import RoundState, Scheme


class TrimmedMean(Scheme):
    kind = "trimmed_mean"

    def aggregate(self, updates, state: RoundState, design):
        n = updates.shape[0]
        cut = math.floor(float(self.params["trim"]) * n)
        ordered, _ = torch.sort(updates, dim=0)
        kept = ordered[cut:n - cut]
        record = {"participants": int(n), "latency_s": 0.0, "privacy": None, "trimmed": 2 * cut}
        return kept.mean(dim=0), record
