"""OTA-FD's local training, schemes and round loop (Appendices A and E)."""

import numpy as np
import pandas as pd
import pytest
import torch

from airfl.core.engine import ClientData
from airfl.core.loop import LocalWork, ServerStep, TrialSetup
from airfl.core.scheme import ChannelStatistics
from airfl.core.scheme import DesignContext
from airfl.models.flat import build_model
from airfl.papers.ota_fd import distillation as tr
from airfl.papers.ota_fd.schemes import OtaFdScheme


M, K, PER_CLASS = 3, 10, 2
COMMON = dict(power=1.0, snr_db=10.0, delta=1e-8, gamma=1.0, clip_S=5.0,
              sensitivity_mode="paper", an_mode="none")


def test_cnn_has_the_papers_parameter_count():
    """21,680 parameters (Appendix E, stated)."""
    assert build_model("cnn_mnist_k3", (1, 28, 28), 10).dim == 21_680
    assert build_model("cnn_mnist", (1, 28, 28), 10).dim == 21_840   # LAPA's, unchanged


def _setup(rounds=2, lr=0.1):
    g = torch.Generator().manual_seed(0)
    n = M * K * PER_CLASS
    x = torch.rand(n, 1, 28, 28, generator=g)
    y = torch.arange(K).repeat_interleave(PER_CLASS).repeat(M)
    sizes = torch.full((M,), K * PER_CLASS)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes, 0)])
    data = ClientData(x, y, torch.arange(n), offsets, sizes)
    stats = ChannelStatistics(path_gain=torch.ones(M, dtype=torch.float64), reference_gain=1.0,
                              bandwidth_hz=1.0, distances_m=torch.zeros(M, dtype=torch.float64))
    model = build_model("cnn_mnist_k3", (1, 28, 28), K, engine="loop")
    return TrialSetup("ota_fd/test", 0, 0, model, data, (x[:40], y[:40]), (x[:20], y[:20]),
                      stats, rounds, 1, LocalWork(2, 8, lr), ServerStep(1.0))


def _scheme(method, **extra):
    return OtaFdScheme(method, method=method, **{**COMMON, **extra})


def test_soft_labels_are_per_class_means_on_the_simplex():
    setup = _setup()
    params = setup.model.init(torch.Generator().manual_seed(1)).repeat(M, 1)
    q = tr.soft_labels(setup, params, K)
    assert q.sum(dim=-1) == pytest.approx(torch.ones(M, K, dtype=torch.float64))
    idx = torch.nonzero(setup.data.y[:K * PER_CLASS] == 4).flatten()
    direct = torch.softmax(setup.model.logits(params[0], setup.data.x[idx]), -1).mean(0)
    assert q[0, 4].float() == pytest.approx(direct, abs=1e-6)


def test_distillation_term_is_squared_distance_of_probabilities():
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(5, K, generator=g)
    y = torch.tensor([0, 1, 2, 3, 4])
    targets = torch.softmax(torch.randn(K, K, generator=g), -1)
    w = torch.full((5,), 0.2)
    plain = tr.distillation_loss(logits, y, w, None, 3.0)
    full = tr.distillation_loss(logits, y, w, targets, 3.0)
    gap = ((torch.softmax(logits, -1) - targets[y]) ** 2).sum(-1)
    assert float(full - plain) == pytest.approx(float(3.0 * (0.2 * gap).sum()), rel=1e-6)


def test_gradient_clipping_bounds_every_step_by_lr_times_S():
    setup = _setup()
    params = setup.model.init(torch.Generator().manual_seed(2)).repeat(M, 1)
    before = params.clone()
    batch = (torch.arange(M * 8).view(M, 8), torch.full((M, 8), 1 / 8))
    tr.local_step_(setup, params, batch, None, gamma=0.0, lr=0.1, clip_S=1e-3)
    steps = torch.linalg.vector_norm(params - before, dim=1)
    assert steps == pytest.approx(torch.full((M,), 1e-4), rel=1e-4)


def test_round_loop_is_deterministic_and_shares_common_channels():
    setup = _setup(rounds=2)
    scheme = _scheme("otafd_prop", eps=1.0)
    a, rec_a = tr.run_fd_trial(setup, scheme, scheme.design(_context(setup)), False)
    b, rec_b = tr.run_fd_trial(setup, scheme, scheme.design(_context(setup)), False)
    pd.testing.assert_frame_equal(a, b)
    assert rec_a == rec_b
    assert list(a["channel_uses"]) == [0, 100, 200]
    assert {"test_accuracy", "test_accuracy_min", "eps_real_ratio_max"} <= set(a.columns)
    nodp, _ = tr.run_fd_trial(setup, _scheme("fd_ota_nodp"), {"T": 2}, False)
    assert (nodp["round"] == a["round"]).all()           # same schedule, same channel draws
    assert np.isfinite(a["test_accuracy"].dropna()).all()


def _context(setup):
    from airfl.core.scheme import DesignContext
    return DesignContext(M, setup.model.dim, setup.rounds, setup.data.sizes, setup.statistics)


def test_full_batch_round_is_one_step_on_the_whole_local_objective():
    """Paper profile (FedSGD): theta_1 = theta_0 - eta_0 clip_S(grad F_i(theta_0)) per WD."""
    from dataclasses import replace

    from torch.func import functional_call

    setup = _setup(rounds=1, lr=0.05)
    setup = replace(setup, local=replace(setup.local, full_batch=True))
    scheme = _scheme("local_only", clip_S=1e9)
    params0 = tr.initial_params(setup)
    tr.run_fd_trial(setup, scheme, {"T": 1}, False)      # smoke: the path runs end to end
    m = 1
    idx = setup.data.client_index[setup.data.offsets[m]:setup.data.offsets[m + 1]]
    flat = params0.clone().requires_grad_()
    logits = functional_call(setup.model.module, setup.model.unflatten(flat),
                             (setup.data.x[idx],))
    loss = torch.nn.functional.cross_entropy(logits, setup.data.y[idx])
    (grad,) = torch.autograd.grad(loss, flat)
    params = params0.unsqueeze(0).repeat(M, 1)
    tr.local_step_(setup, params, tr.full_batches(setup.data), None, gamma=0.0, lr=0.05,
                   clip_S=1e9)
    assert params[m] == pytest.approx(params0 - 0.05 * grad, abs=1e-6)


def test_a_theory_curve_writes_theorem1s_omega_from_its_recorded_rounds():
    """X4's fixed-T curves (`theory`) record Phi_1, Phi_2, the pre-clip gradient norms and the
    losses of every round, and the last row carries sum_i Omega_i recomputed from them; Phi_1
    is 0 for Prop. 1's weights; a curve without `theory` records none of it (same accuracy)."""
    from airfl.papers.ota_fd import theorem1 as th
    from airfl.papers.ota_fd.rounds import TheoryConstants
    setup = _setup(rounds=3)
    theory = {"L1": 2.0, "L2": 1.0}
    scheme = _scheme("otafd_prop", eps=1.0, theory=theory)
    table, records = tr.run_fd_trial(setup, scheme, {"T": 3}, False)
    assert all(len(r["theorem1_gradnorm"]) == M and len(r["theorem1_phi2"]) == M
               for r in records)
    assert np.allclose([r["theorem1_phi1"] for r in records], 0.0)
    column = {k: np.array([r[f"theorem1_{k}"] for r in records])
              for k in ("phi1", "phi2", "gradnorm", "loss")}
    consts = TheoryConstants(eta0=setup.local.lr, gamma=1.0, L1=2.0, L2=1.0)
    omega = th.omega(T=3, consts=consts, fmax=column["loss"].max(0), phi1=column["phi1"],
                     phi2=column["phi2"], gradnorm=column["gradnorm"])
    last = table.iloc[-1]
    assert last["theorem1_omega"] == pytest.approx(omega.sum())
    assert last["theorem1_bound"] == pytest.approx(omega.sum() + M * 8 * 1.0 * 1.0 * 5.0)
    assert table["theorem1_omega"].notna().sum() == 1
    # every WD here holds the same class counts, so 1/M is B_j^k/B^k and uniform weights are
    # unbiased too (Phi_1 > 0 for the dominant-class split: test_ota_fd_theorem1)
    uniform, rec_u = tr.run_fd_trial(setup, _scheme("otafd_uniformw", eps=1.0, theory=theory),
                                     {"T": 3}, False)
    assert np.allclose([r["theorem1_phi1"] for r in rec_u], 0.0)
    assert uniform.iloc[-1]["theorem1_bias"] == pytest.approx(0.0, abs=1e-12)
    plain, rec_p = tr.run_fd_trial(setup, _scheme("otafd_prop", eps=1.0), {"T": 3}, False)
    assert "theorem1_omega" not in plain and not any("theorem1_phi1" in r for r in rec_p)
    assert plain["test_accuracy"].equals(table["test_accuracy"])


def test_a_curves_own_eta0_sets_the_step_size():
    """An eta_0 calibration run (curve parameter eta0) steps as eta0 / sqrt(t): the same run
    with the block's lr set to that eta0 gives the same table."""
    own, _ = tr.run_fd_trial(_setup(rounds=2, lr=0.1), _scheme("fd_noiseless", eta0=0.3),
                             {"T": 2}, False)
    block, _ = tr.run_fd_trial(_setup(rounds=2, lr=0.3), _scheme("fd_noiseless"), {"T": 2}, False)
    other, _ = tr.run_fd_trial(_setup(rounds=2, lr=0.1), _scheme("fd_noiseless"), {"T": 2}, False)
    pd.testing.assert_frame_equal(own, block)
    assert not own["train_loss"].equals(other["train_loss"])


def test_device_cuda_without_a_gpu_stops_with_a_clear_message(monkeypatch):
    """X2 is GPU work (`device: cuda`); on a machine without CUDA the run stops naming the key
    and the alternatives instead of failing inside torch (checked on CPU)."""
    from airfl.pipeline.trial import torch_device
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="device: cuda.*use cpu or auto"):
        torch_device({"device": "cuda"})
    assert torch_device({"device": "auto"}).type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_fd_rounds_on_cuda_match_cpu():
    """The FD loop on `device: cuda` (X2's path): same soft labels, targets and accuracy as on
    CPU up to float reassociation (one round, the proposed design)."""
    import dataclasses
    cpu = _setup(rounds=1)
    data = cpu.data
    moved = dataclasses.replace(
        cpu, data=type(data)(*(t.cuda() for t in (data.x, data.y, data.client_index,
                                                     data.offsets, data.sizes))),
        test=tuple(t.cuda() for t in cpu.test), train_eval=tuple(t.cuda() for t in cpu.train_eval))
    a, _ = tr.run_fd_trial(cpu, _scheme("otafd_prop", eps=1.0), {"T": 1}, False)
    b, _ = tr.run_fd_trial(moved, _scheme("otafd_prop", eps=1.0), {"T": 1}, False)
    assert b["train_loss"].to_numpy() == pytest.approx(a["train_loss"].to_numpy(), rel=1e-3)


@pytest.mark.parametrize("full_batch", [False, True])
def test_fl_benchmarks_step_with_fds_decaying_rule(monkeypatch, full_batch):
    """One step-size rule for FD and FL (Appendix A's eta_t = eta_0 / sqrt(t + 1)): FedAvg's
    local steps and FedSGD's server step of round t are eta_0 / sqrt(t) (the real round runs;
    the spy only records the set-up each round hands to the clients)."""
    from dataclasses import replace

    seen = []
    real = tr.client_updates

    def spy(setup, params, streams, participants=None):
        seen.append((setup.local.lr, setup.server.lr))
        return real(setup, params, streams, participants)

    monkeypatch.setattr(tr, "client_updates", spy)
    setup = _setup(rounds=3, lr=0.2)
    setup = replace(setup, local=replace(setup.local, full_batch=full_batch))
    scheme = OtaFdScheme("fl_noiseless", method="fl_noiseless", clip_C=1.0, **COMMON)
    table, _ = tr.run_fd_trial(setup, scheme, {"T": 3, "dim": setup.model.dim}, False)
    etas = [0.2 / np.sqrt(t) for t in (1, 2, 3)]
    used = [server if full_batch else local for local, server in seen]
    assert used == pytest.approx(etas) and tr.step_size(0.2, 4) == pytest.approx(0.1)
    if not full_batch:
        assert all(server == 1.0 for _, server in seen)
    assert table["channel_uses"].iloc[-1] == 3 * setup.model.dim


FL = dict(COMMON, clip_C=1.0)


def _method_scheme(method, **extra):
    return OtaFdScheme(method, method=method, **{**FL, **extra})


def _method_context(setup, rounds=None):
    return DesignContext(M, setup.model.dim, rounds or setup.rounds, setup.data.sizes,
                         setup.statistics)


def test_fl_trial_runs_the_core_loop_and_counts_D_channel_uses():
    setup = _setup(rounds=2)
    scheme = _method_scheme("otafl_dp", eps=1e6, delta=1e-3)
    design = scheme.design(_method_context(setup))
    a, rec = tr.run_fd_trial(setup, scheme, design, False)
    b, _ = tr.run_fd_trial(setup, scheme, design, False)
    pd.testing.assert_frame_equal(a, b)                           # deterministic
    assert list(a["channel_uses"]) == [0, setup.model.dim, 2 * setup.model.dim]
    assert len(rec) == 2 and np.isfinite(a["test_accuracy"]).all()
    ideal, _ = tr.run_fd_trial(setup, _method_scheme("fl_noiseless"), design, False)
    assert not np.allclose(ideal["train_loss"], a["train_loss"])  # channel noise did something


def test_fixed_T_curve_runs_its_own_number_of_rounds_and_noise_grows_with_T():
    """`otafd_fixedT`: the curve's T overrides the schedule's, and Theorem 2's noise level
    4 T max c^2 rho grows linearly in T (the DP side of the U-shape in T)."""
    setup = _setup(rounds=2)
    short, long_ = (_method_scheme("otafd_prop", eps=0.5, T=T) for T in (3, 30))
    assert short.design(_method_context(setup))["T"] == 3
    table, records = tr.run_fd_trial(setup, short, short.design(_method_context(setup)), False)
    assert list(table["round"]) == [0, 1, 2, 3] and len(records) == 3
    table_long, _ = tr.run_fd_trial(setup, long_, {**long_.design(_method_context(setup)), "T": 3},
                                    False)
    assert (table_long["nu_median"].iloc[1:].to_numpy()
            >= table["nu_median"].iloc[1:].to_numpy()).all()


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
    scheme = _method_scheme("fl_noiseless")
    table, _ = tr.run_fd_trial(setup, scheme, scheme.design(_method_context(setup)), False)
    from airfl.core.engine import evaluate_many
    loss, _ = evaluate_many(setup.model, expected.unsqueeze(0), *setup.test)
    assert float(table["test_loss"].iloc[-1]) == pytest.approx(float(loss[0]), rel=1e-5)


def _large_setup(sizes, rounds=3, lr=0.2):
    """Full-batch WDs with more samples than one soft-label chunk (256 rows), unequal sizes
    (padded full batches), every class on every WD."""
    from dataclasses import replace
    setup = _setup(rounds=rounds, lr=lr)
    g = torch.Generator().manual_seed(3)
    n = sum(sizes)
    x = torch.rand(n, 1, 28, 28, generator=g)
    y = torch.arange(n) % K
    sizes = torch.tensor(sizes)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes, 0)])
    data = ClientData(x, y, torch.arange(n), offsets, sizes)
    return replace(setup, data=data, local=replace(setup.local, full_batch=True))


@pytest.mark.parametrize("method", ["otafd_prop", "fd_noiseless", "local_only"])
def test_full_batch_rounds_reusing_the_training_forward_equal_the_separate_forward(
        monkeypatch, method):
    """A full-batch round reads its soft labels off the training step's forward
    (`shares_training_forward`): its run table and records equal those of the separate
    soft-label forward (`soft_labels` in 256-row chunks, then `local_step_`), Theorem 1's
    inputs included, up to the convolution and GEMM kernels' summation order by batch size
    (logits ~1e-8 apart where a chunk's rows take another kernel; bit for bit at the paper's
    1,200 samples a WD, benchmarks/ota_fd_round.py). Sizes 300 and 270: a full chunk and a
    tail, one WD padded."""
    setup = _large_setup([300, 270, 300])
    assert tr.shares_training_forward(setup)
    extra = {"eps": 1.0, "theory": {"L1": 2.0, "L2": 1.0}} if method == "otafd_prop" else {}
    scheme = _scheme(method, **extra)
    design = scheme.design(_context(setup)) if method == "otafd_prop" else {"T": 3}
    shared, rec_shared = tr.run_fd_trial(setup, scheme, design, False)
    with monkeypatch.context() as patch:
        patch.setattr(tr, "shares_training_forward", lambda s: False)
        separate, rec_separate = tr.run_fd_trial(setup, scheme, design, False)
    pd.testing.assert_frame_equal(shared, separate, check_exact=False, rtol=1e-5, atol=1e-6)
    assert len(rec_shared) == len(rec_separate) == 3
    for a, b in zip(rec_shared, rec_separate):
        _assert_close_records(a, b)
    if method == "otafd_prop":
        assert "theorem1_omega" in shared and "theorem1_gradnorm" in rec_shared[0]


def _assert_close_records(a, b, path="record"):
    """Two records equal up to 1e-5 relative in their numbers (nested dicts and lists)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _assert_close_records(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (list, tuple)) and any(isinstance(v, (dict, list, str)) for v in a):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _assert_close_records(u, v, f"{path}[{i}]")
    elif isinstance(a, str) or a is None:
        assert a == b, path
    else:
        assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                           rtol=1e-5, atol=1e-6), path


def test_soft_labels_of_the_training_forward_are_the_chunked_forwards():
    """`soft_labels_from_logits` on each WD's full-batch logits gives `soft_labels` (256-row
    chunks) within 1e-7: the same softmax rows summed in the same order (padding rows of the
    shorter WD left out)."""
    setup = _large_setup([300, 270, 300])
    params = setup.model.init(torch.Generator().manual_seed(4)).repeat(M, 1)
    params[1] += 0.01
    index, _ = tr.full_batches(setup.data)
    logits = [setup.model.logits(params[m], setup.data.x[index[m]]) for m in range(M)]
    reference = tr.soft_labels(setup, params, K)
    assert float((tr.soft_labels_from_logits(setup, logits, K) - reference).abs().max()) < 1e-7
    padded = tr.soft_labels_from_logits(setup, [torch.cat([lg, lg[:5]]) if m == 1 else lg
                                                for m, lg in enumerate(logits)], K)
    assert torch.equal(padded, tr.soft_labels_from_logits(setup, logits, K))


def test_only_fp32_full_batch_rounds_without_batch_statistics_share_the_forward():
    from dataclasses import replace
    setup = _setup()
    assert not tr.shares_training_forward(setup)                         # mini-batches
    full = replace(setup, local=replace(setup.local, full_batch=True))
    assert tr.shares_training_forward(full)
    bf16 = build_model("cnn_mnist_k3", (1, 28, 28), K, engine="loop", precision="bf16")
    assert not tr.shares_training_forward(replace(full, model=bf16))
    bn = build_model("cnn_mnist_bn", (1, 28, 28), K, engine="loop")
    assert not tr.shares_training_forward(replace(full, model=bn))
