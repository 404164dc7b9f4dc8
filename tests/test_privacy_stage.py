"""The privacy stage: per-round records -> eps per round, as the accountant gives it."""

import math

import numpy as np

from airfl.privacy import GaussianEvent, RdpAccountant, SubsampledGaussianEvent
from airfl.stages.privacy import trial_epsilons


def test_records_compose_like_the_accountant():
    rounds = [{"round": t, "privacy": [SubsampledGaussianEvent(0.5, 1.0 + 0.1 * t).to_dict()]}
              for t in range(1, 6)]
    eps = trial_epsilons(rounds, 1e-5)
    accountant = RdpAccountant()
    for t, r in enumerate(rounds):
        accountant.compose(r["privacy"][0])
        assert eps["improved"][t] == accountant.get_epsilon(1e-5)
        assert eps["classic"][t] == accountant.get_epsilon(1e-5, conversion="classic")
    assert np.all(np.diff(eps["improved"]) > 0)
    assert np.all(eps["improved"] <= eps["classic"])


def test_an_unprotected_round_makes_eps_infinite_from_then_on():
    protected = {"privacy": [GaussianEvent(2.0).to_dict()]}
    rounds = [protected, protected, {"privacy": None}, protected]
    eps = trial_epsilons(rounds, 1e-5)["improved"]
    assert math.isfinite(eps[1]) and np.isinf(eps[2:]).all()
