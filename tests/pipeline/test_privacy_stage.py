"""The privacy stage: per-round records -> eps per round, as the accountant gives it."""

import math

import numpy as np

import subprocess
import sys

import pandas as pd
import pytest

from airfl.pipeline import paths
from airfl.io import write_json
from airfl.privacy import GaussianEvent, RdpAccountant, SubsampledGaussianEvent
from airfl.pipeline.stages.privacy import trial_epsilons


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


def test_the_stage_takes_delta_from_the_records_without_torch(tmp_path, monkeypatch):
    """The records carry the curve's params (delta); the stage imports neither torch nor the
    experiment registry, so its job starts in a fraction of a second."""
    monkeypatch.chdir(tmp_path)
    rounds = [{"round": t, "privacy": [GaussianEvent(3.0).to_dict()]} for t in (1, 2)]
    write_json(paths.run_records("x/y", "c"), {"curve": "c", "params": {"delta": 1e-3},
                                               "trials": [{"trial": 0, "rounds": rounds}]})
    code = ("import sys, airfl.pipeline.stages.privacy as p; p.run({}, 'x/y', 'c'); "
            "assert 'torch' not in sys.modules and 'airfl.experiments' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
    table = pd.read_csv(paths.privacy("x/y", "c"))
    assert (table["delta"] == 1e-3).all()
    expected = trial_epsilons(rounds, 1e-3)["improved"]
    assert table["epsilon_paper"].tolist() == pytest.approx(expected, rel=1e-9)   # 10 digits
    assert table["epsilon_simulated"].tolist() == pytest.approx(expected, rel=1e-9)  # same events
