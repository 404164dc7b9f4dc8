"""Shared set-up of the train and tune stages: the per-process cache of a dataset split."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import airfl.pipeline.trial as setup


def test_a_split_is_read_once_per_process_and_cannot_be_changed_through_the_cache(
        mnist_mirror, monkeypatch):
    reads = []
    original = setup.load_dataset

    def counted(name, root, split, verify_md5=True):
        reads.append(split)
        return original(name, root, split, verify_md5)

    monkeypatch.setattr(setup, "load_dataset", counted)
    setup.dataset_split.cache_clear()
    params = {"data": {"root": str(mnist_mirror)}}
    block = {"dataset": "mnist", "scale": {"test_subset": 100}}
    first = setup.test_data(params, block, torch.device("cpu"))
    first[0].add_(1.0)                                  # a caller mutating its tensors ...
    first[1].zero_()
    second = setup.test_data(params, block, torch.device("cpu"))
    assert reads == ["test"]                            # ... read once, not once per candidate
    x, y = original("mnist", mnist_mirror, "test")
    assert torch.equal(second[0], torch.from_numpy(x[:100]).float().div_(255.0).unsqueeze(1))
    assert torch.equal(second[1], torch.from_numpy(y[:100]))   # ... leaves the cache intact
    cached_x, cached_y = setup.dataset_split("mnist", str(mnist_mirror), "test")
    assert not cached_x.flags.writeable and not cached_y.flags.writeable
    with pytest.raises(ValueError):
        cached_y[0] = 3
    assert np.array_equal(cached_y, y)
    setup.dataset_split.cache_clear()
