"""Biased FL's catalogue (experiments.py): the offset-only curves run in the offset panels of
Fig. 2(b) and their claims read n/a with the reason."""

from __future__ import annotations

import pytest


def test_offset_only_curves_run_in_the_offset_panels_and_their_claims_say_na(repo_root):
    """LCPC's design leaves nobody transmitting at the literal SNR: the literal Fig. 2(b) leaves it
    out, the +30/+60 dB copies keep it, and a claim naming it reads n/a with the reason."""
    import pandas as pd
    import yaml

    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import get_experiment

    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    literal = get_experiment("biased_fl/fig2b")
    assert "lcpc_ota_comp" not in literal.params(params)["curves"]
    assert "lcpc_ota_comp" in get_experiment("biased_fl/fig2b_snr30").params(params)["curves"]
    frame = pd.DataFrame({"curve": ["proposed", "opc_ota_comp"], "trial": [0, 0],
                          "time_s": [1.0, 1.0], "suboptimality_gap": [0.5, 0.7]})
    claims = {c.name: c for c in literal.claims}
    result = claims["fig2b_beats_lcpc"].evaluate(frame)               # LCPC is its subject: n/a
    assert result.holds is None and "lcpc_ota_comp not run at this SNR" in result.numbers
    gaps = {"proposed": 0.5, "opc_ota_comp": 0.7, "opc_ota_fl": 0.4, "vanilla_ota_fl": 1.0,
            "bbfl_interior": 2.0, "bbfl_alternative": 1.5, "bbfl_interior_per_round": 2.5,
            "bbfl_alternative_per_round": 1.8}                            # every curve but LCPC
    frame = pd.DataFrame([{"curve": c, "trial": t, "time_s": 1.0,
                           "suboptimality_gap": g * (1 + 0.01 * t * (c == "opc_ota_fl"))}
                          for t in range(3) for c, g in gaps.items()])      # three trials
    partial = claims["fig2b_genie_best"].evaluate(frame)             # LCPC one of the compared
    assert partial.verdict == "holds" and "lcpc_ota_comp not run" in partial.numbers
    bad = {**params["biased_fl"]["fig2b"], "offset_only_curves": ["nope"]}
    from airfl.papers.biased_fl.run_blocks import literal_curves
    with pytest.raises(ValueError, match="offset_only_curves names \\['nope'\\]"):
        literal_curves(bad)
