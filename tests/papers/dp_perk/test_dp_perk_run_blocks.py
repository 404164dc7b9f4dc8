"""DP as a perk's training run blocks (run_blocks.py) and what they choose: the MLP of the quick
profile, epoch-mode local training, partial participation, every panel built from params; and
the input normalisation of the block (`input_normalization: {mean, std}`): the model is fed
(x/255 - 0.5)/0.5 as the authors' code does, every other wing keeps x/255, bit for bit, checked
on the tensors the train stage hands to the model (`client_data`, `train_eval_data`,
`test_data`)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import yaml
from torch import nn
from torch.func import functional_call

from airfl.core.engine import ClientData, epoch_batches, local_sgd
from airfl.data import load_dataset, load_labels, make_partition, to_float_tensor
from airfl.models.flat import SoftmaxRegression, build_model
from airfl.params.config import ConfigError
from airfl.pipeline import paths
from airfl.pipeline.params import load_params
from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.trial import client_data, partition_generator, train_eval_data
from airfl.pipeline.trial import test_data as load_test_data
from airfl.papers.dp_perk.run_blocks import compose, dp_curve, power_curve

from dp_perk_helpers import DIM_IN, N, PER, toy_client_data


def test_mlp_gradients_match_autograd_of_the_torch_module():
    model = build_model("mlp32", (1, 28, 28), 10)
    assert model.dim == 25_450                                   # mlp32: 784-32-10
    g = torch.Generator().manual_seed(1)
    params = torch.stack([model.init(g) for _ in range(3)])
    x, y = torch.randn(3, 7, 1, 28, 28, generator=g), torch.randint(0, 10, (3, 7), generator=g)
    weights = torch.full((3, 7), 1 / 7)
    loss, grad = model.loss_and_grads(params, x, y, weights)
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    names = [n for n, _ in net.named_parameters()]
    for i in range(3):
        leaves = [t.clone().requires_grad_() for t in model._split(params[i])]
        out = functional_call(net, dict(zip(names, leaves)), (x[i],))
        ref = (weights[i] * nn.functional.cross_entropy(out, y[i], reduction="none")).sum()
        ref_grad = torch.cat([t.reshape(-1) for t in torch.autograd.grad(ref, leaves)])
        assert loss[i].item() == pytest.approx(ref.item(), rel=1e-6)
        torch.testing.assert_close(grad[i], ref_grad, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model.logits(params[i], x[i]), out.detach())


def test_an_epoch_visits_every_sample_of_every_client_once():
    data = toy_client_data()
    batches = epoch_batches(data, 6, torch.Generator().manual_seed(0))
    assert [b[0].shape[1] for b in batches] == [6, 6, 6, 2]      # the last batch is smaller
    seen = torch.cat([b[0] for b in batches], dim=1)
    for c in range(N):
        mine = data.client_index[data.offsets[c]:data.offsets[c + 1]]
        assert sorted(seen[c].tolist()) == sorted(mine.tolist())
    assert all(torch.allclose(w.sum(dim=1), torch.ones(N)) for _, w in batches)
    uneven = ClientData(data.x, data.y, data.client_index, torch.tensor([0, 5, 200]),
                        torch.tensor([5, 195]))
    with pytest.raises(ValueError, match="equally sized"):
        epoch_batches(uneven, 5, torch.Generator())


def test_a_subset_trains_exactly_the_chosen_clients():
    data, model = toy_client_data(), SoftmaxRegression(DIM_IN, 3)
    chosen = torch.tensor([7, 2, 5])
    sub = data.subset(chosen)
    assert sub.sizes.tolist() == [PER] * 3
    for row, c in enumerate(chosen.tolist()):
        assert sub.client_index[sub.offsets[row]:sub.offsets[row + 1]].tolist() == \
            data.client_index[data.offsets[c]:data.offsets[c + 1]].tolist()
    params = torch.zeros(model.dim)
    every = local_sgd(model, params, data, 0, 5, 0.1, torch.Generator().manual_seed(0), epochs=1)
    some = local_sgd(model, params, sub, 0, 5, 0.1, torch.Generator().manual_seed(0), epochs=1)
    assert some.shape == (3, model.dim) and every.shape == (N, model.dim)
    assert some.abs().sum() > 0


def test_registry_builds_every_panel_from_params():
    params = load_params("params.yaml", {"profile": "quick"})
    iid = compose("iid")(params)
    curves = iid["curves"]
    pick = params["dp_perk"]["training"]
    assert iid["training"]["local_epochs"] == pick["local_epochs"]["quick"]
    assert dp_curve(1.0) in curves and curves[dp_curve(1.0)]["in_fig6"]
    for power in pick["fig6_power_w"]["quick"]:
        for method in ("airfl_dp", "airfl_mimo"):
            assert curves[power_curve(method, power, "zf")]["in_fig6"]
            assert curves[power_curve(method, power, "zf_opt")]["beamformer"] == "zf_opt"
    non = compose("noniid")(params)
    assert non["partition"] == {"kind": "shards", "classes_per_device": 2, "pool_per_class": 400}
    assert {c for c, p in non["curves"].items() if p["method"] == "airfl_dp"} == \
        {dp_curve(e) for e in pick["fig3_eps_tilde"]["quick"]}


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
