"""CDPB's validated setting (setting.py): bad parameters are named, a params block and the
strategy names."""

from __future__ import annotations

import math

import pytest

from airfl.papers.cdpb.setting import CdpbSetting, mechanism


# ------------------------------------------------------------------------- setting
@pytest.mark.parametrize("field,value", [
    ("K", 0), ("K", 2.5), ("P", 0.0), ("h_bar", -1.0), ("alpha", 2.5), ("alpha", 1),
    ("sigma_z2", -0.1), ("lam1", -1.0), ("gamma_bar", 0.0), ("eps_bar", math.inf),
    ("q_IS", 0.0), ("q_IS", 1.5), ("rdp_bound", "foo"), ("W", math.nan),
])
def test_invalid_setting_names_the_parameter(field, value):
    with pytest.raises(ValueError, match=field):
        CdpbSetting(**{field: value})


def test_setting_from_params_block_and_strategy_names():
    block = {"K": 10, "P": 10.0, "gamma_bar": 0.1, "train": {"rounds": 200}, "q_IS": 0.9}
    s = CdpbSetting.from_dict(block)
    assert (s.K, s.P, s.gamma_bar, s.rho_max) == (10, 10.0, 0.1, 10.0)
    with pytest.raises(ValueError, match="model_dim"):
        CdpbSetting(rdp_bound="dimension_corrected")
    with pytest.raises(ValueError, match="lam1 and lam2"):
        CdpbSetting(lam1=0.0, lam2=0.0)
    assert mechanism("cdpb_n") == ("cdpb", 1.0) and mechanism("gamma_bar", 1.0) == ("cdpb", 1.0)
    for bad in (("cdpb_mixed", None), ("cdpb_i", 0.5), ("cdpb_mixed", 1.5), ("foo", None)):
        with pytest.raises(ValueError):
            mechanism(*bad)
