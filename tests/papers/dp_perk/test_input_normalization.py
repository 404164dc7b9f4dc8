"""Input normalisation (`input_normalization: {mean, std}` of an experiment block): DP as a perk
feeds the model (x/255 - 0.5)/0.5 as the authors' code does; every other wing keeps
x/255, bit for bit. The three tensors checked are the ones the train stage hands to the model
(`client_data`, `train_eval_data`, `test_data`)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import yaml

from airfl.pipeline import paths
from airfl.params.config import ConfigError
from airfl.pipeline.params import validate_params
from airfl.data import load_dataset, load_labels, make_partition, to_float_tensor
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.trial import client_data, partition_generator, train_eval_data
from airfl.pipeline.trial import test_data as load_test_data

FMNIST_MEAN = 0.2860          # Fashion-MNIST pixel mean of x/255 (DatasetInfo)


@pytest.fixture(scope="module")
def params(repo_root, mnist_mirror, tmp_path_factory):
    """The committed params (quick profile) reading data from a copy of the offline mirror."""
    from airfl.data import ensure_dataset

    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    root = tmp_path_factory.mktemp("data")
    raw["data"].update(root=str(root), mirror=str(mnist_mirror), download=False)
    validated = validate_params(raw)
    for name in ("fashion_mnist", "mnist"):
        ensure_dataset(name, root, mirror=mnist_mirror, download=False)
    return validated


def _model_inputs(params, experiment_id):
    """What `stages.train.run_trials` gives the model: devices' data, loss subset, test set."""
    import airfl.papers  # noqa: F401  (registers every wing)

    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    spec = block["partition"]
    labels = load_labels(block["dataset"], params["data"]["root"], "train")
    options = {k: spec[k] for k in ("samples_per_device", "balanced", "classes_per_device")
               if k in spec}
    partition = make_partition(spec["kind"], labels, block["num_devices"],
                               partition_generator(params, experiment_id), **options)
    data = client_data(params, block, partition, torch.device("cpu"))
    loss_x, _ = train_eval_data(params, block, data, experiment_id)
    test_x, _ = load_test_data(params, block, torch.device("cpu"))
    return block, partition, data, loss_x, test_x


@pytest.mark.parametrize("experiment_id", ["dp_perk/fig3a", "dp_perk/fig4a"])
def test_dp_perk_model_inputs_are_normalised_to_minus_one_one(params, experiment_id):
    block, partition, data, loss_x, test_x = _model_inputs(params, experiment_id)
    assert block["input_normalization"] == {"mean": [0.5], "std": [0.5]}      # the default
    raw, _ = load_dataset(block["dataset"], params["data"]["root"], "train")
    held = np.unique(np.concatenate(partition.indices))
    expected = torch.from_numpy(raw[held]).float().unsqueeze(1) / 127.5 - 1.0   # (x/255-.5)/.5
    torch.testing.assert_close(data.x, expected, rtol=0, atol=1e-6)
    for x in (data.x, loss_x, test_x):
        assert float(x.min()) == -1.0 and float(x.max()) == 1.0   # black and white pixels exist
    # the test set's mean moves from ~0.286 (x/255) to 2 * 0.286 - 1 ~ -0.43
    assert float(test_x.mean()) == pytest.approx(2 * FMNIST_MEAN - 1, abs=0.02)


def test_other_wings_still_see_x_over_255_bit_for_bit(params):
    block, partition, data, loss_x, test_x = _model_inputs(params, "baselines/accuracy_vs_rounds")
    assert "input_normalization" not in block
    raw, _ = load_dataset(block["dataset"], params["data"]["root"], "train")
    held = np.unique(np.concatenate(partition.indices))
    assert torch.equal(data.x, to_float_tensor(raw[held], block["dataset"]))
    assert float(test_x.min()) == 0.0 and float(test_x.max()) == 1.0
    for wing in ("biased_fl", "cdpb"):                     # nobody else sets the key
        assert "input_normalization" not in str(params[wing])


def test_the_run_records_the_normalisation_it_trained_on(params):
    """The train rule's `setting` param and run info carry the block without its curves."""
    block = get_experiment("dp_perk/fig3a").params(params)
    setting = {k: v for k, v in block.items() if k != "curves"}
    assert setting["input_normalization"] == {"mean": [0.5], "std": [0.5]}


def test_the_normalised_inputs_reach_the_model_in_the_train_stage(params, tmp_path, monkeypatch):
    """One round of Vanilla FL through `run_trials` (the train stage's loop): the identity
    normalisation (mean 0, std 1) trains bit-identically to none, the paper's (0.5, 0.5) does
    not, so the setting reaches the model and acts only through its inputs."""
    from airfl.pipeline.runs import design_trials
    from airfl.pipeline.runs import run_trials

    experiment = get_experiment("dp_perk/fig3a")
    block = experiment.params(params)
    block["scale"] = {**block["scale"], "rounds": 1, "trials": 1, "test_subset": 200,
                      "train_eval_subset": 200}
    _, partition, *_ = _model_inputs(params, "dp_perk/fig3a")
    monkeypatch.chdir(tmp_path)                       # results/ of this test only
    labels = load_labels(block["dataset"], params["data"]["root"], "train")
    partition.to_npz(paths.partition(experiment.id), labels=labels, num_classes=10)
    curve = block["curves"]["vanilla"]
    designs = design_trials(params, experiment.id, block, "vanilla", curve, range(1))

    def run(normalization):
        setting = {**block, "input_normalization": normalization}
        frame, _ = run_trials(params, experiment, setting, "vanilla", curve, 1.0, designs,
                              range(1), progress=False)
        return frame[["test_loss", "train_loss", "test_accuracy"]].to_numpy()

    plain = run(None)
    assert np.array_equal(run({"mean": [0.0], "std": [1.0]}), plain)
    assert not np.allclose(run({"mean": [0.5], "std": [0.5]}), plain)


@pytest.mark.parametrize("value, expected", [
    ({"mean": [0.5]}, "input_normalization: 'std' is a required property"),
    ({"mean": [0.5], "std": [0.0]}, "input_normalization.std.0: 0.0 is less than or equal"),
    ({"mean": [], "std": [0.5]}, "input_normalization.mean: [] should be non-empty"),
    ({"mean": [0.5], "std": [0.5], "scale": 2}, "Additional properties are not allowed"),
])
def test_bad_normalisation_is_named_by_the_schema(params, value, expected):
    bad = copy.deepcopy(params)
    bad["dp_perk"]["training"]["input_normalization"] = value
    with pytest.raises(ConfigError) as info:
        validate_params(bad)
    assert "dp_perk.training.input_normalization" in str(info.value)
    assert expected in str(info.value)


def test_a_channel_count_mismatch_stops_with_the_key_named(params):
    bad = copy.deepcopy(params)
    bad["dp_perk"]["training"]["input_normalization"] = {"mean": [0.5, 0.5, 0.5],
                                                         "std": [0.5, 0.5, 0.5]}
    block = get_experiment("dp_perk/fig3a").params(validate_params(bad))
    with pytest.raises(ConfigError, match="input_normalization: .*fashion_mnist has 1 channel"):
        load_test_data(bad, block, torch.device("cpu"))
