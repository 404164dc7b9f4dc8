"""Helpers of the pipeline tests that run real stages on a shrunk experiment: params.yaml with
the offline data mirror, and an OTA-FD experiment cut to a few rounds on small sets."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from airfl.pipeline.params import validate_params


def raw_params(repo_root: Path, mirror: Path) -> dict:
    """params.yaml as read (not validated), its data read from `mirror`."""
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    params["data"] = {**params["data"], "root": str(mirror)}
    return params


def small_ota_fd(raw: dict, key: str, **quick) -> dict:
    """params.yaml (quick) with `ota_fd.<key>` shrunk to a few rounds on small sets."""
    raw = copy.deepcopy(raw)
    block = raw["ota_fd"][key]
    for name, value in {"test_subset": 200, "train_eval_subset": 100, **quick}.items():
        block[name] = {"quick": value, "paper": None if name == "test_subset" else value}
    return validate_params(raw)
