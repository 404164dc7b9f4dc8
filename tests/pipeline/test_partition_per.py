"""`partition_per` (pipeline.partitioning): LAPA's trials each draw their own data split, an
experiment wing's trials share one; the split is a function of (seed, experiment, trial); the
partition stage, the design and train stages' inputs and the DAG agree on it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import yaml

from airfl.params.config import ConfigError
from airfl.data.partition import Partition, load_trial_partition, save_trial_partitions
from airfl.pipeline import paths
from airfl.pipeline.partitioning import partition_setting, partition_trials
from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment

LAPA = "lapa/fig4"
SHARED = "baselines/accuracy_vs_rounds"          # no partition_per: one split per experiment


@pytest.fixture()
def params(repo_root, mnist_mirror):
    raw = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    return {**raw, "data": {**raw["data"], "root": str(mnist_mirror)}}


def _partitions(params, experiment_id: str) -> list[Partition]:
    """Run the partition stage and read back the split of every trial as the stages do."""
    from airfl.pipeline.stages import partition
    from airfl.pipeline.trial import load_partition

    partition.run(params, experiment_id)
    block = get_experiment(experiment_id).params(params)
    return [load_partition(experiment_id, block, t) for t in range(block["scale"]["trials"])]


def _same(a: Partition, b: Partition) -> bool:
    return len(a.indices) == len(b.indices) and all(
        np.array_equal(x, y) for x, y in zip(a.indices, b.indices))


def test_the_settings_follow_the_papers(params):
    """LAPA: a split per trial (its seeds fix the partition); every other experiment: one."""
    from airfl.pipeline.registry import all_experiments

    for experiment in all_experiments():
        block = experiment.params(params)
        expected = "trial" if experiment.paper == "lapa" else "experiment"
        assert partition_setting(block) == expected, experiment.id
    assert partition_trials(get_experiment(LAPA).params(params)) == range(2)   # quick: 2 trials


def test_lapa_trials_draw_their_own_split_and_a_seed_fixes_it(params, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = _partitions(params, LAPA)
    assert len(first) == 2 and not _same(first[0], first[1])
    assert not np.array_equal(first[0].sizes, first[1].sizes)      # sizes redrawn too
    for part in first:                                             # each a valid mixed split
        assert part.kind == "mixed" and part.num_devices == 15 and int(part.is_iid.sum()) == 5
    summary = json.loads(paths.partition_summary(LAPA).read_text())
    assert summary["partition_per"] == "trial" and len(summary["trials"]) == 2
    assert summary["trials"][1]["sizes"] == first[1].sizes.tolist()
    again = _partitions(params, LAPA)                              # same seed: same splits
    assert all(_same(a, b) for a, b in zip(first, again))
    other = _partitions({**params, "seed": params["seed"] + 1}, LAPA)
    assert not _same(first[0], other[0])


def test_an_experiment_wing_shares_one_split_across_trials(params, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parts = _partitions(params, SHARED)
    assert len(parts) == 3 and all(_same(parts[0], p) for p in parts[1:])
    assert _same(parts[0], Partition.from_npz(paths.partition(SHARED)))   # the one-split file
    again = _partitions(params, SHARED)
    assert _same(parts[0], again[0])


def test_design_and_train_inputs_read_each_trials_split(params, tmp_path, monkeypatch):
    """The design stage's sizes and label histograms and the train stage's devices' data come
    from the trial's own split (LAPA), or from the one split (an experiment wing)."""
    from airfl.pipeline.runs import design_trials
    from airfl.pipeline.trial import curve_inputs

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(params, "device", "cpu")
    experiment = get_experiment(LAPA)
    block = experiment.params(params)
    parts = _partitions(params, LAPA)
    curve = block["curves"]["wasserstein"]
    designs = design_trials(params, LAPA, block, "wasserstein", curve, range(2))
    for design, part in zip(designs, parts):
        assert design["sizes"] == part.sizes.astype(float).tolist()
    assert designs[0]["wasserstein"] != designs[1]["wasserstein"]
    shared = curve_inputs(params, experiment, block)
    (data0, eval0), (data1, _) = shared.trial_data(0), shared.trial_data(1)
    assert data0.sizes.tolist() == parts[0].sizes.tolist()
    assert data1.sizes.tolist() == parts[1].sizes.tolist()
    assert shared.trial_data(0)[0] is data0                     # built once per trial
    assert len(eval0[1]) == min(block["scale"]["train_eval_subset"], int(parts[0].sizes.sum()))
    other = get_experiment(SHARED)
    other_block = other.params(params)
    _partitions(params, SHARED)
    one = curve_inputs(params, other, other_block)
    assert one.trial_data(0)[0] is one.trial_data(2)[0] is one.data


def test_a_file_of_the_other_kind_or_a_missing_trial_stops(params, tmp_path, monkeypatch):
    from airfl.pipeline.trial import load_partition

    monkeypatch.chdir(tmp_path)
    _partitions(params, SHARED)
    block = get_experiment(LAPA).params(params)
    paths.partition(LAPA).parent.mkdir(parents=True, exist_ok=True)
    paths.partition(LAPA).write_bytes(paths.partition(SHARED).read_bytes())
    with pytest.raises(ConfigError, match="partition_per 'trial'"):
        load_partition(LAPA, block, 0)
    one = Partition.from_npz(paths.partition(SHARED))
    save_trial_partitions(tmp_path / "two.npz", [one, one])
    assert _same(load_trial_partition(tmp_path / "two.npz", 1), one)
    with pytest.raises(ValueError, match="trials 0..1, not of trial 2"):
        load_trial_partition(tmp_path / "two.npz", 2)
    with pytest.raises(ValueError, match="one partition per trial"):
        Partition.from_npz(tmp_path / "two.npz")
    with pytest.raises(ConfigError, match="partition_per: 'seed'.*allowed: experiment, trial"):
        partition_setting({"partition_per": "seed"})


def test_the_dag_and_the_caption_know_the_setting(params):
    """The partition job reads the setting and LAPA's number of trials (one split each); its
    one file stays the input of the design and train jobs; the caption states the setting."""
    from airfl.pipeline import dag, param_deps
    from airfl.pipeline.artifacts import caption

    experiment = get_experiment(LAPA)
    keys = param_deps.derive(experiment, params)
    assert {"lapa.training.partition_per", "lapa.scale.quick.trials"} <= \
        set(keys[("partition", None)])
    jobs = {j.name: j for j in dag.experiment_jobs(experiment, params)}
    npz = str(paths.partition(LAPA))
    assert npz in jobs["partition-lapa-fig4"].outs
    assert npz in jobs["design-lapa-fig4-fedavg"].deps and npz in jobs["train-lapa-fig4-fedavg"].deps
    shared_keys = param_deps.derive(get_experiment(SHARED), params)[("partition", None)]
    assert not any("trials" in k for k in shared_keys)
    assert "a split of its own per trial" in caption(params, experiment)
    assert "one split shared by all trials" in caption(params, get_experiment(SHARED))


def test_train_eval_subset_is_seeded_per_trial():
    """With a split per trial the training-loss subset comes from the trial's own stream; the
    experiment's one subset keeps its stream (seed, experiment, 'train_eval')."""
    from airfl.core.engine import ClientData
    from airfl.pipeline.trial import train_eval_data

    n = 50
    x = torch.arange(n, dtype=torch.float32).view(n, 1, 1, 1)      # sample i holds the value i
    data = ClientData(x, torch.zeros(n, dtype=torch.long), torch.arange(n), torch.tensor([0, n]),
                      torch.tensor([n]))
    block = {"scale": {"train_eval_subset": 10}}

    def pick(trial):
        return train_eval_data({"seed": 0}, block, data, LAPA, trial)[0].flatten()

    assert torch.equal(pick(None), pick(None)) and torch.equal(pick(1), pick(1))
    assert not torch.equal(pick(0), pick(1)) and not torch.equal(pick(None), pick(0))
    from airfl.runtime.rng import numpy_generator
    expected = np.sort(numpy_generator(0, LAPA, "train_eval").choice(n, size=10, replace=False))
    assert pick(None).tolist() == expected.tolist()
