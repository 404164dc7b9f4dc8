"""The privacy stage: per-round records -> eps per round, as the accountant gives it."""

import math

import numpy as np

import subprocess
import sys

import pandas as pd
import torch
import pytest

from airfl.pipeline import paths
from airfl.runtime.io import json_form, write_json
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
    experiment registry, so its job starts in a fraction of a second; nor scipy for records
    of Gaussian events (rdp.py imports it for the subsampled Gaussian only)."""
    monkeypatch.chdir(tmp_path)
    rounds = [{"round": t, "privacy": [GaussianEvent(3.0).to_dict()]} for t in (1, 2)]
    write_json(paths.run_records("x/y", "c"), {"curve": "c", "params": {"delta": 1e-3},
                                               "trials": [{"trial": 0, "rounds": rounds}]})
    code = ("import sys, airfl.pipeline.stages.privacy as p; p.run({}, 'x/y', 'c'); "
            "assert 'torch' not in sys.modules and 'airfl.core.experiments' not in sys.modules; "
            "assert 'scipy.special' not in sys.modules")   # Gaussian events: no scipy (~0.4 s)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
    table = pd.read_csv(paths.privacy("x/y", "c"))
    assert (table["delta"] == 1e-3).all()
    expected = trial_epsilons(rounds, 1e-3)["improved"]
    assert table["epsilon_paper"].tolist() == pytest.approx(expected, rel=1e-9)   # 10 digits
    assert table["epsilon_simulated"].tolist() == pytest.approx(expected, rel=1e-9)  # same events


def test_a_curve_without_its_own_delta_takes_the_declared_one(tmp_path, monkeypatch, repo_root):
    """No silent default: a curve whose scheme has no delta (CDPB states RDP only) is stated at
    params.yaml `privacy.delta`, declared in the schema with its default (1e-5) and read only
    through the stage's declared params."""
    from airfl.pipeline.params import load_params
    from airfl.pipeline.stages import privacy

    params = load_params(repo_root / "params.yaml", {"privacy.delta": 1e-7})
    assert load_params(repo_root / "params.yaml", {})["privacy"]["delta"] == 1e-5
    monkeypatch.chdir(tmp_path)
    rounds = [{"round": t, "privacy": [GaussianEvent(3.0).to_dict()]} for t in (1, 2)]
    write_json(paths.run_records("x/y", "c"), {"curve": "c", "params": {"scheme": "cdpb"},
                                               "trials": [{"trial": 0, "rounds": rounds}]})
    privacy.run(params, "x/y", "c")
    table = pd.read_csv(paths.privacy("x/y", "c"))
    assert (table["delta"] == 1e-7).all()
    assert table["epsilon_paper"].tolist() == pytest.approx(
        trial_epsilons(rounds, 1e-7)["improved"].tolist(), rel=1e-9)
    with pytest.raises(KeyError, match="privacy"):         # params without it: no fallback
        privacy.run({}, "x/y", "c")


# -- each wing's round records -> the privacy CSV's two epsilons -----------------

def _lapa_records(privacy: str, rounds: int = 4) -> tuple[list[dict], float]:
    import yaml
    from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
    from airfl.papers.lapa.run_blocks import compose
    from airfl.pipeline.registry import build_scheme
    from airfl.runtime.rng import RoundStreams

    k, dim = 15, 32
    with open("params.yaml") as f:
        block = compose(yaml.safe_load(f))
    scheme = build_scheme("c", {**block["curves"]["nodp"], "privacy": privacy, "nu": 4.0},
                          block["training"]["lr"])
    sizes = list(range(100, 100 + 20 * k, 20))
    histograms = np.eye(10, dtype=np.int64)[np.arange(k) % 10] * 50 + 1
    stats = ChannelStatistics(torch.ones(k, dtype=torch.float64), 1.0, 1.0,
                              torch.zeros(k, dtype=torch.float64))
    design = json_form(scheme.design(DesignContext(     # as the design stage stores it (JSON)
        k, dim, rounds, torch.tensor(sizes), stats, trial=0, seed=1, experiment="lapa/t",
        label_histograms=histograms)))
    records = []
    for t in range(1, rounds + 1):
        updates = 1e-3 * torch.randn(k, dim, generator=torch.Generator().manual_seed(t),
                                     dtype=torch.float64)
        state = RoundState(t, torch.ones(k), torch.ones(k), None, RoundStreams(1, "lapa/t", 0, t))
        records.append({"round": t, **scheme.aggregate(updates, state, design)[1]})
    return records, scheme.delta


def _ota_fd_records(method: str, rounds: int = 4) -> tuple[list[dict], float]:
    from airfl.core.scheme import RoundState
    from airfl.papers.ota_fd.schemes import OtaFdScheme
    from airfl.runtime.rng import RoundStreams

    m = k = 10
    counts = np.full((m, k), 2.0)
    counts[np.arange(m), np.arange(m)] = 222.0
    scheme = OtaFdScheme(method, method=method, eps=1.0, power=1.0, snr_db=10.0, delta=1e-8,
                         gamma=1.0, clip_S=5.0, sensitivity_mode="paper", an_mode="none")
    records = []
    for t in range(1, rounds + 1):
        power = torch.from_numpy(np.random.default_rng(t).exponential(size=m))
        state = RoundState(t, power, torch.full((m,), 240), None,
                           RoundStreams(0, "ota_fd/t", 0, t), extras={"class_counts": counts})
        q = torch.softmax(torch.randn(m, k * k, generator=torch.Generator().manual_seed(t),
                                      dtype=torch.float64), -1)
        records.append({"round": t, **scheme.aggregate(q, state, {"T": rounds, "dim": 50})[1]})
    return records, 1e-8


@pytest.mark.parametrize("wing, curve, private", [
    ("lapa", "lapa", True), ("lapa", "uniform", True), ("lapa", "arb", True),
    ("lapa", "none", False), ("ota_fd", "otafd_prop", True), ("ota_fd", "fd_digital_ldp", True),
    ("ota_fd", "otafd_uniformw", True), ("ota_fd", "fd_ota_nodp", False),
    ("ota_fd", "local_only", False)])
def test_wing_records_fill_both_epsilon_columns(tmp_path, monkeypatch, repo_root, wing, curve,
                                                private):
    """The privacy stage on a wing's own round records (LAPA and OTA-FD):
    a private curve gets a finite epsilon_paper AND epsilon_simulated in every round (the
    composition of its `privacy` and `privacy_simulated` events), a curve without DP inf."""
    from airfl.pipeline.stages import privacy
    from airfl.privacy import epsilon_curve

    monkeypatch.chdir(repo_root)
    records, delta = _lapa_records(curve) if wing == "lapa" else _ota_fd_records(curve)
    monkeypatch.chdir(tmp_path)
    write_json(paths.run_records(f"{wing}/t", curve), {"curve": curve, "params": {"delta": delta},
                                                      "trials": [{"trial": 0, "rounds": records}]})
    privacy.run({}, f"{wing}/t", curve)
    table = pd.read_csv(paths.privacy(f"{wing}/t", curve))
    if not private:
        assert np.isinf(table["epsilon_paper"]).all() and np.isinf(table["epsilon_simulated"]).all()
        return
    for column, key in (("epsilon_paper", "privacy"), ("epsilon_simulated", "privacy_simulated")):
        assert np.isfinite(table[column]).all() and (table[column] > 0).all()
        assert table[column].tolist() == pytest.approx(
            epsilon_curve([r[key] for r in records], delta), rel=1e-9)
