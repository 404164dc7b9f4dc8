"""CDPB's training figures: the paper profile trains CIFAR + ResNet-18-GN when CIFAR can be
supplied, and an offline run substitutes a present dataset, saying so (caption and CSV)."""

from __future__ import annotations

import yaml

from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment


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
