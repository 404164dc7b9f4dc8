"""Stage `data`: make sure a dataset is present (root, mirror or download) and md5-verified."""

from __future__ import annotations

from typing import Any

from airfl.pipeline import paths
from airfl.data import ensure_dataset
from airfl.runtime.io import write_json
from airfl.pipeline.stage_params import declared


@declared("data")
def run(params: dict[str, Any], dataset: str) -> None:
    data = params["data"]
    manifest = ensure_dataset(dataset, data["root"], mirror=data["mirror"], download=data["download"])
    write_json(paths.dataset_manifest(dataset), manifest)
