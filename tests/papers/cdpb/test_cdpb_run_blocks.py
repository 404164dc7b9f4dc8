"""CDPB's training run blocks (run_blocks.py): the update-norm calibration of W, and the paper
profile's dataset (CIFAR + ResNet-18-GN when CIFAR can be supplied, an offline substitute that
says so otherwise)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from airfl.core.engine import ClientData
from airfl.core.loop import LocalWork, ServerStep, TrialSetup, initial_update_norms
from airfl.core.scheme import ChannelStatistics
from airfl.models.flat import SoftmaxRegression
from airfl.pipeline import paths
from airfl.pipeline.dag import jobs
from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.runs import calibrated
from airfl.papers.cdpb.run_blocks import median_update_norm


N_CLIENTS, PER_CLIENT, FEATURES, CLASSES, LR = 5, 4, 3, 3, 0.1


def _tiny_setup() -> tuple[TrialSetup, torch.Tensor, torch.Tensor]:
    """5 clients x 4 samples, 3 features, 3 classes; one local epoch of one full batch."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N_CLIENTS * PER_CLIENT, FEATURES, generator=gen)
    y = torch.randint(0, CLASSES, (N_CLIENTS * PER_CLIENT,), generator=gen)
    sizes = torch.full((N_CLIENTS,), PER_CLIENT)
    data = ClientData(x, y, torch.arange(N_CLIENTS * PER_CLIENT),
                      torch.arange(0, N_CLIENTS * PER_CLIENT + 1, PER_CLIENT), sizes)
    stats = ChannelStatistics(torch.ones(N_CLIENTS, dtype=torch.float64), 1.0, 1e6,
                              torch.zeros(N_CLIENTS, dtype=torch.float64))
    none = (x[:0], y[:0])
    setup = TrialSetup("test/calibration", 3, 0, SoftmaxRegression(FEATURES, CLASSES, l2=1e-3),
                       data, none, none, stats, 1, 1, LocalWork(1, PER_CLIENT, LR, epochs=1),
                       ServerStep(1.0))
    return setup, x, y


def test_initial_update_norms_are_one_gradient_step_at_theta_0():
    """theta_0 = 0 for softmax regression: one full-batch step gives u_k = -lr grad f_k(0), whose
    class-c block is -lr mean_i (1/C - 1[y_i = c]) [x_i, 1] (the L2 term vanishes at 0). The
    calibrated W_clip is the median of their norms."""
    setup, x, y = _tiny_setup()
    norms = initial_update_norms(setup).numpy()
    expected = []
    for k in range(N_CLIENTS):
        rows = slice(k * PER_CLIENT, (k + 1) * PER_CLIENT)
        xs, ys = x[rows].double().numpy(), y[rows].numpy()
        residual = 1.0 / CLASSES - np.eye(CLASSES)[ys]                   # softmax(0) - onehot
        features = np.hstack([xs, np.ones((PER_CLIENT, 1))])
        grad = residual.T @ features / PER_CLIENT                         # [C, p + 1]
        expected.append(np.linalg.norm(LR * grad))
    np.testing.assert_allclose(norms, expected, rtol=1e-5)         # float32 training
    assert median_update_norm(norms)["w_clip"] == pytest.approx(float(np.median(expected)),
                                                                rel=1e-5)
    assert median_update_norm(norms)["w_clip"] == float(np.median(norms))


def test_median_update_norm_rejects_degenerate_norms():
    with pytest.raises(ValueError, match="W_clip"):
        median_update_norm(np.zeros(4))
    with pytest.raises(ValueError, match="W_clip"):
        median_update_norm(np.array([np.nan, 1.0]))


def test_every_cdpb_training_figure_is_calibrated_and_trains_with_the_stored_value(
        repo_root, tmp_path, monkeypatch):
    """No hand-entered W_clip: every CDPB training experiment has a calibrate job whose output
    each train job depends on, and the train stage merges the stored value into the curve."""
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    for profile in ("quick", "paper"):
        params["profile"] = profile
        pipeline = jobs(params)
        for figure in ("fig4", "fig8a", "fig8b"):
            experiment = get_experiment(f"cdpb/{figure}")
            assert experiment.calibration is median_update_norm
            target = str(paths.calibration(experiment.id))
            assert any(j.stage == "calibrate" and j.outs == [target] for j in pipeline)
            trains = [j for j in pipeline if j.stage == "train" and j.args[0] == experiment.id]
            assert trains and all(target in j.deps for j in trains)
            assert all("w_clip" not in c for c in experiment.curves(params).values())
    monkeypatch.chdir(tmp_path)
    target = paths.calibration("cdpb/fig4")
    target.parent.mkdir(parents=True)
    target.write_text('{"params": {"w_clip": 0.123}}')
    assert calibrated(get_experiment("cdpb/fig4"), {"strategy": "cdpb_i"})["w_clip"] == 0.123


def _paper(repo_root, tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFL_DATA_MIRROR", str(tmp_path / "mirror"))
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    params.update(profile="paper")
    params["data"].update(root=str(tmp_path / "data"), mirror=None)
    return params


def test_offline_paper_run_substitutes_and_says_so(repo_root, tmp_path, monkeypatch):
    from airfl.pipeline.artifacts import caption

    params = _paper(repo_root, tmp_path, monkeypatch)
    for figure, original in (("cdpb/fig4", "cifar100"), ("cdpb/fig8b", "cifar10")):
        experiment = get_experiment(figure)
        block = experiment.params(params)
        assert (block["dataset"], block["model"]["name"]) == ("fashion_mnist", "cnn_mnist")
        assert block["substituted_for"] == f"{original} / resnet18_gn"
        assert f"Offline substitute for {original} / resnet18_gn" in caption(params, experiment)


def test_paper_run_trains_cifar_when_its_archive_is_there(repo_root, tmp_path, monkeypatch):
    params = _paper(repo_root, tmp_path, monkeypatch)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cifar-100-python.tar.gz").write_bytes(b"")   # found, checked later
    block = get_experiment("cdpb/fig4").params(params)
    assert (block["dataset"], block["model"]["name"]) == ("cifar100", "resnet18_gn")
    assert "substituted_for" not in block
    quick = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    assert get_experiment("cdpb/fig4").params(quick)["dataset"] == "fashion_mnist"
