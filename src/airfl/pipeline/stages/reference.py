"""Stage `reference`: a paper's precomputation shared by its experiments (e.g. Biased FL's exact
optimum w* and data constants), written as NPZ arrays plus a JSON of scalars and parameters."""

from __future__ import annotations

from typing import Any

from airfl.pipeline import paths
from airfl.pipeline.registry import get_reference
from airfl.runtime.io import provenance, write_json, write_npz
from airfl.pipeline.stage_params import declared


@declared("reference")
def run(params: dict[str, Any], name: str) -> None:
    reference = get_reference(name)
    arrays, scalars = reference.compute(params)
    from airfl.params.config import get_dotted

    used = {key: get_dotted(params, key) for key in reference.config_keys}
    write_npz(paths.reference(name, "npz"), **arrays)
    write_json(paths.reference(name, "json"), {"provenance": provenance(used), **scalars})
