"""What `airfl plan` charges federated distillation's soft labels: a forward of every local
sample a round, except in the rounds that read them off the training forward
(`airfl.papers.ota_fd.distillation.shares_training_forward`)."""

from __future__ import annotations

import contextlib
import copy

import pytest

from airfl.pipeline import train_cost
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_experiment


@pytest.fixture(scope="module")
def x4_paper(repo_root):
    with contextlib.chdir(repo_root):
        params = load_params("params.yaml", {"profile": "paper"})
        experiment = get_experiment("ota_fd/x4")
        block = experiment.params(params)
    return experiment, block


def test_full_batch_fp32_rounds_are_charged_no_soft_label_forwards(x4_paper):
    """X4 (paper: FedSGD, fp32, cnn_mnist_k3) evaluates its schedule and nothing more; the same
    block trained on mini-batches, in bf16 or with a BatchNorm model also forwards every local
    sample once a round, as its round loop does."""
    experiment, block = x4_paper
    name, curve = next(iter(block["curves"].items()))
    assert block["training"]["full_batch"] and train_cost.shares_training_forward(block)
    rounds = int(curve.get("T") or block["scale"]["rounds"])
    samples = train_cost.samples_per_device(block)
    shared = train_cost.train_work(experiment, block, curve, rounds=rounds)
    for change in ({"training": {"full_batch": False}}, {"model": {"precision": "bf16"}},
                   {"model": {"name": "cnn_mnist_bn"}}):
        other = copy.deepcopy(block)
        for key, value in change.items():
            other[key].update(value)
        assert not train_cost.shares_training_forward(other)
        work = train_cost.train_work(experiment, other, curve, rounds=rounds)
        assert work.eval_samples - shared.eval_samples == pytest.approx(
            rounds * block["num_devices"] * samples)
