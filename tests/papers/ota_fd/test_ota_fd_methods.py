"""OTA-FD's FL benchmarks and fixed-T curves (methods `otafl_dp`,
`fl_noiseless`, `otafd_fixedT`; the FL mechanism is reconstructed: Appendix E states only
its budgets)."""

import numpy as np
import pandas as pd
import pytest
import torch

from airfl.core.aggregation import clip_by_norm
from airfl.core.scheme import DesignContext, RoundState
from airfl.papers.ota_fd import distillation as tr
from airfl.papers.ota_fd import transceiver as tx
from airfl.papers.ota_fd.schemes import OtaFdScheme
from airfl.runtime.rng import RoundStreams
from test_ota_fd_distillation import COMMON, M, _setup

D = 50
FL = dict(COMMON, clip_C=1.0)


def _scheme(method, **extra):
    return OtaFdScheme(method, method=method, **{**FL, **extra})


def _state(t, power, sizes):
    return RoundState(t, power, sizes, None, RoundStreams(0, "e", 0, t))


def _updates(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(M, D, generator=g, dtype=torch.float64) * torch.tensor([[0.5], [2.0], [3.0]])


def test_fl_noiseless_is_otafl_dp_without_noise():
    """The upper bound of OTA-FL with DP: the same clipping to C and weights B_i/B, no noise;
    OTA-FL at an inactive budget differs from it by its receiver noise only."""
    sizes = torch.tensor([10, 30, 60])
    u = _updates()
    assert (torch.linalg.vector_norm(u, dim=1) > 1.0).any()        # clipping bites
    r, record = _scheme("fl_noiseless").aggregate(u, _state(1, torch.ones(M), sizes),
                                                  {"T": 5, "dim": D})
    truth = torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64) @ clip_by_norm(u, 1.0)[0]
    assert r == pytest.approx(truth) and record["clipped_fraction"] > 0
    assert not torch.allclose(r, torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64) @ u)


@pytest.mark.parametrize("eps", [1e-3, 1e6])
def test_otafl_is_unbiased_with_noise_variance_nu_and_meets_its_budget(eps):
    """Monte Carlo over the receiver-noise stream: the mean of the received update is the
    B_i/B-weighted mean of the clipped updates (A21, c_i = B_i/B), its per-entry variance C^2 nu,
    and the realised eps (paper's formula, whole-update sensitivity 2C) <= eps, = eps in Case II."""
    sizes = torch.tensor([10, 30, 60])
    u = _updates(1)
    power = torch.tensor([0.3, 1.2, 2.0], dtype=torch.float64)
    truth = torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64) @ clip_by_norm(u, 1.0)[0]
    scheme = _scheme("otafl_dp", eps=eps)
    draws, recs = [], []
    for t in range(1, 801):
        r, rec = scheme.aggregate(u, _state(t, power, sizes), {"T": 20, "dim": D})
        draws.append(r)
        recs.append(rec)
    draws = torch.stack(draws)
    nu = recs[0]["nu_median"]                 # same channel every draw: one nu
    z = (draws.mean(0) - truth) / np.sqrt(nu / len(draws))
    assert float(z.abs().max()) < 4.5
    assert float((draws.var(0) / nu - 1).abs().max()) < 0.25
    assert max(r["eps_real_ratio"] for r in recs) <= 1 + 1e-9
    case2 = recs[0]["case2_fraction"] == 1.0
    assert case2 == (eps < 1)                 # tiny eps: DP-limited; FL's huge eps: power-limited
    if case2:
        assert recs[0]["eps_real_ratio"] == pytest.approx(1.0, rel=1e-9)


def test_ball_sensitivity_doubles_the_privacy_coefficient():
    counts = np.array([[10.0], [30.0]])
    simplex = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5), class_counts=counts)
    ball = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5), class_counts=counts,
                                   spread=tx.BALL_SPREAD)
    assert ball == pytest.approx(2 * simplex)
    # two unit-ball vectors differ by up to 2 = sqrt(2 spread): the sensitivity's diameter
    delta = tx.sensitivity(h_abs=np.ones(2), p1=np.ones((2, 1)), class_counts=counts, K=1,
                           spread=tx.BALL_SPREAD)
    assert delta[:, 0] == pytest.approx(2.0 / counts[:, 0])


def test_the_fl_benchmark_accounts_a_whole_clipped_update_without_dividing_by_B_i():
    """One sample can move a whole-clipped update across the unit ball: D_i = 1, so the
    sensitivity is 2 (2C / C) and rho_i = 2 ln(1/delta_i) / eps_i^2, B_i^2 times Lemma 1's
    form with / B_i; the noise design needs correspondingly more noise (a smaller lambda_DP)."""
    counts = np.array([[10.0], [30.0]])
    whole = tx.whole_update_counts(2)
    assert whole.shape == (2, 1)
    rho = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5), class_counts=whole,
                                  spread=tx.BALL_SPREAD)
    assert rho[:, 0] == pytest.approx(2 * np.log(1e5))
    per_sample = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5),
                                         class_counts=counts, spread=tx.BALL_SPREAD)
    assert rho == pytest.approx(per_sample * counts ** 2)
    assert tx.sensitivity(h_abs=np.ones(2), p1=np.ones((2, 1)), class_counts=whole, K=1,
                          spread=tx.BALL_SPREAD)[:, 0] == pytest.approx(2.0)
    design = dict(h_abs=np.ones(2), power=np.ones(2), class_counts=counts, sigma_n2=0.1, T=5,
                  K=50)
    assert tx.prop1_design(**design, rho=rho).lam[0] < \
        tx.prop1_design(**design, rho=per_sample).lam[0]


def _context(setup, rounds=None):
    return DesignContext(M, setup.model.dim, rounds or setup.rounds, setup.data.sizes,
                         setup.statistics)


def test_fl_trial_runs_the_core_loop_and_counts_D_channel_uses():
    setup = _setup(rounds=2)
    scheme = _scheme("otafl_dp", eps=1e6, delta=1e-3)
    design = scheme.design(_context(setup))
    a, rec = tr.run_fd_trial(setup, scheme, design, False)
    b, _ = tr.run_fd_trial(setup, scheme, design, False)
    pd.testing.assert_frame_equal(a, b)                           # deterministic
    assert list(a["channel_uses"]) == [0, setup.model.dim, 2 * setup.model.dim]
    assert len(rec) == 2 and np.isfinite(a["test_accuracy"]).all()
    ideal, _ = tr.run_fd_trial(setup, _scheme("fl_noiseless"), design, False)
    assert not np.allclose(ideal["train_loss"], a["train_loss"])  # channel noise did something


def test_fixed_T_curve_runs_its_own_number_of_rounds_and_noise_grows_with_T():
    """`otafd_fixedT`: the curve's T overrides the schedule's, and Theorem 2's noise level
    4 T max c^2 rho grows linearly in T (the DP side of the U-shape in T)."""
    setup = _setup(rounds=2)
    short, long_ = (_scheme("otafd_prop", eps=0.5, T=T) for T in (3, 30))
    assert short.design(_context(setup))["T"] == 3
    table, records = tr.run_fd_trial(setup, short, short.design(_context(setup)), False)
    assert list(table["round"]) == [0, 1, 2, 3] and len(records) == 3
    table_long, _ = tr.run_fd_trial(setup, long_, {**long_.design(_context(setup)), "T": 3},
                                    False)
    assert (table_long["nu_median"].iloc[1:].to_numpy()
            >= table["nu_median"].iloc[1:].to_numpy()).all()


def test_per_wd_budgets_are_drawn_once_per_trial_and_each_is_met():
    """X2's stated budgets eps_i ~ U(0.01, 1), delta_i ~ U(1e-9, 1e-7): one draw per trial
    (every round and method alike, CRN) and the realised eps_i of each WD <= its own eps_i."""
    sizes = torch.tensor([10, 30, 60])
    scheme = _scheme("otafl_dp", eps_uniform=[0.01, 1.0], delta_uniform=[1e-9, 1e-7])
    first = scheme.budgets(_state(1, torch.ones(M), sizes), M)
    again = scheme.budgets(_state(7, torch.ones(M), sizes), M)
    assert all((a == b).all() for a, b in zip(first, again))
    assert ((0.01 <= first[0]) & (first[0] <= 1.0)).all() and len(set(first[0])) == M
    assert ((1e-9 <= first[1]) & (first[1] <= 1e-7)).all()
    _, rec = scheme.aggregate(_updates(), _state(1, torch.ones(M), sizes), {"T": 50, "dim": D})
    assert rec["eps_real_ratio"] <= 1 + 1e-9


def test_experiment_blocks_inherit_x1_and_scale_budgets():
    """X3-X7 take X1's setting; quick budgets are noise-equivalent (eps / s sqrt(T / T_full))
    except fixed-T curves (eps / s, literal T); X4's curves carry Prop. 2's T*; X2 substitutes
    an offline dataset for CIFAR-10 and says so."""
    import yaml

    from airfl.papers.ota_fd import run_blocks as setup

    params = yaml.safe_load(open("params.yaml"))
    params["profile"] = "quick"
    x1, x3, x4 = (setup.block_of(params, k) for k in ("x1", "x3", "x4"))
    assert x3["partition"] == x1["partition"] and x3["model"] == x1["model"]
    s, T, T_full = 0.2, 30, 200
    assert x3["curves"]["otafd_prop_e0p1"]["eps"] == pytest.approx(0.1 / s * np.sqrt(T / T_full))
    fixed = x4["curves"]["otafd_fixedt_e0p1_t10"]
    assert fixed["T"] == 10 and fixed["eps"] == pytest.approx(0.1 / s) and fixed["T_star"] >= 1
    assert x1["curves"]["otafl_dp"]["eps_uniform"] == [1e6, 1e7]
    params["data"]["mirror"] = "/nonexistent"
    params["data"]["root"] = "/nonexistent"
    x2 = setup.block_of(params, "x2")
    assert x2["substituted_for"] == "cifar10 / resnet18_bn" and x2["dataset"] == "fashion_mnist"


def test_bf16_local_step_tracks_the_fp32_step():
    """`precision: bf16` (bfloat16 autocast, fp32 master weights) moves the weights like fp32
    up to bfloat16 rounding; fp32 stays exact (the default)."""
    from dataclasses import replace

    from airfl.models.flat import build_model

    setup = _setup()
    bf16 = replace(setup, model=build_model("cnn_mnist_k3", (1, 28, 28), 10, engine="loop",
                                             precision="bf16"))
    params = setup.model.init(torch.Generator().manual_seed(2)).repeat(M, 1)
    batch = (torch.arange(M * 8).view(M, 8), torch.full((M, 8), 1 / 8))
    targets = torch.full((10, 10), 0.1, dtype=torch.float64)
    a, b = params.clone(), params.clone()
    tr.local_step_(setup, a, batch, targets, gamma=1.0, lr=0.1, clip_S=5.0)
    tr.local_step_(bf16, b, batch, targets, gamma=1.0, lr=0.1, clip_S=5.0)
    step_a, step_b = a - params, b - params
    assert b.dtype == torch.float32 and not torch.equal(step_a, step_b)
    rel = torch.linalg.vector_norm(step_b - step_a) / torch.linalg.vector_norm(step_a)
    assert float(rel) < 0.05


def test_fedsgd_fl_round_is_one_full_batch_gradient_step():
    """Paper profile (FedSGD): noiseless FL moves the global model by -eta_0 sum_i (B_i/B)
    grad F_i(w) on the whole local datasets."""
    from dataclasses import replace

    from airfl.core.engine import client_gradients

    setup = _setup(rounds=1, lr=0.05)
    setup = replace(setup, local=replace(setup.local, full_batch=True))
    w0 = tr.initial_params(setup)
    fedsgd = replace(setup, local=replace(setup.local, upload="gradient"),
                     server=replace(setup.server, lr=0.05))
    _, grads = client_gradients(setup.model, w0, setup.data,
                                fedsgd.full_batch_data)
    expected = w0 - 0.05 * grads.mean(0)                 # equal local sizes: weights 1/M
    scheme = _scheme("fl_noiseless")
    table, _ = tr.run_fd_trial(setup, scheme, scheme.design(_context(setup)), False)
    from airfl.core.engine import evaluate_many
    loss, _ = evaluate_many(setup.model, expected.unsqueeze(0), *setup.test)
    assert float(table["test_loss"].iloc[-1]) == pytest.approx(float(loss[0]), rel=1e-5)
