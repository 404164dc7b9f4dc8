"""Biased FL's run blocks (run_blocks.py): the panels compose into generic run blocks, the SNR
offset scales the symbol energy, and the radio's OTA noise reaches the OTA curves only."""

from __future__ import annotations

import jsonschema
import pytest

from airfl.pipeline.registry import build_scheme
from airfl.papers.biased_fl.schemes import ota as osch


G_S = 1.0


def _scheme(kind, **params):
    return build_scheme(kind, {"scheme": kind, "G": G_S, **params})


def test_ota_noise_is_passed_from_the_radio_to_ota_curves_only():
    from airfl.papers.biased_fl.run_blocks import curve_params

    params = {"seed": 0, "biased_fl": {"problem": {"mu": 0.01},
                                       "radio": {"ota_noise": "real_part"}}}
    panel = {"G": 5.0, "eta": 0.05}
    ota = curve_params(params, panel, {"scheme": "opc_ota_comp"}, "biased_fl/fig2b")
    digital = curve_params(params, panel, {"scheme": "qml", "K": 3}, "biased_fl/fig3b")
    assert ota["ota_noise"] == "real_part" and "ota_noise" not in digital
    assert _scheme("opc_ota_comp", ota_noise="real_part").param("ota_noise") == "real_part"
    validator = jsonschema.Draft202012Validator(osch.PARAMS_SCHEMA["opc_ota_comp"])
    assert validator.is_valid({"scheme": "opc_ota_comp", "G": 1.0, "ota_noise": "real_part"})
    assert not validator.is_valid({"scheme": "opc_ota_comp", "G": 1.0, "ota_noise": "imaginary"})


def test_panels_compose_into_generic_blocks(repo_root):
    import yaml

    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import get_experiment

    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    block = get_experiment("biased_fl/fig2b").params(params)
    assert block["training"] == {"upload": "gradient", "full_batch": True, "local_steps": 1,
                                 "batch_size": 100, "lr": 0.0, "server_lr": 0.05}
    proposed = block["curves"]["proposed"]
    assert proposed["G"] == 5.0 and proposed["mu"] == 0.01 and proposed["kappa"] == 0.01
    assert "radius_m" in block["curves"]["bbfl_interior"]
    assert "eta" not in block["curves"]["vanilla_ota_fl"]      # only keys a scheme accepts
    sens = get_experiment("biased_fl/snr_sensitivity_ota").params(params)
    assert sens["curves"]["ota_nv_60db"]["snr_offset_db"] == 60.0


def test_snr_offset_scales_the_symbol_energy():
    from airfl.pipeline.trial import radio_units

    channel = {"power_dbm": 0.0, "bandwidth_hz": 1e6, "n0_dbm_per_hz": -161.0, "snr_offset_db": 0.0}
    es, n0 = radio_units(channel)
    assert es == pytest.approx(1e-9) and n0 == pytest.approx(7.943e-20, rel=1e-3)
    assert radio_units(channel, {"snr_offset_db": 30.0})[0] == pytest.approx(1e-6)
