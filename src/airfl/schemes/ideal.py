"""Ideal FedAvg: noiseless, error-free uplink (McMahan et al. 2017, Alg. 1, data-size weights)."""

from __future__ import annotations


from airfl.core.scheme import RoundState, Scheme


class IdealFedAvg(Scheme):
    """Server update = sum_m (|D_m| / sum_j |D_j|) Delta_m over all devices; no privacy leak bound."""

    kind = "ideal_fedavg"

    def aggregate(self, updates, state: RoundState, design):
        weights = state.data_sizes.to(updates.dtype) / state.data_sizes.sum()
        record = {"participants": int(updates.shape[0]), "latency_s": 0.0, "privacy": None}
        return weights.to(updates.device) @ updates, record
