"""Shared fixture of the DP-as-a-perk tests (not collected by pytest; the test files import it by
module name, since tests/ is not a package): a small synthetic federated data set."""

from __future__ import annotations

import torch

from airfl.core.engine import ClientData

#: N clients of PER samples each, DIM_IN features, 3 classes.
N, PER, DIM_IN = 10, 20, 12


def toy_client_data(seed=0):
    """N equal shards of Gaussian features with random labels, drawn from `seed`."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N * PER, DIM_IN, generator=g)
    y = torch.randint(0, 3, (N * PER,), generator=g)
    sizes = torch.full((N,), PER)
    return ClientData(x, y, torch.randperm(N * PER, generator=g),
                      torch.arange(0, (N + 1) * PER, PER), sizes)
