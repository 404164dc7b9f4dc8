"""The arena's common task (airfl.arena.task): the edge SNR from the radio settings, one run
block for every curve (same data, split, model, local work, channel), the settings' checks."""

from __future__ import annotations

import math
import re

import pytest
import torch

from airfl.arena.experiments import (ARENA)
from airfl.arena.task import edge_snr_db, run_block, settings
from airfl.channel.pathloss import dbm_to_watt, gain_from_db, log_distance_db


def test_edge_snr_is_power_over_noise_times_the_edge_gain(params):
    radio = settings(params)["radio"]
    gain = gain_from_db(log_distance_db(torch.tensor([radio["radius_m"]], dtype=torch.float64),
                                        pl0_db=radio["pl0_db"], exponent=radio["exponent"]))
    noise_w = dbm_to_watt(torch.tensor(radio["n0_dbm_per_hz"])) * radio["bandwidth_hz"]
    snr = dbm_to_watt(torch.tensor(radio["power_dbm"])) * gain / noise_w
    assert edge_snr_db(radio) == pytest.approx(10 * math.log10(float(snr[0])), abs=1e-9)


def test_every_scheme_shares_one_task_and_channel(params):
    """One block for every curve: the same data, split, model, local work, channel and scale
    (common random numbers come from the one experiment id)."""
    block = ARENA.params(params)
    assert block == run_block(params, block["curves"])
    assert block["channel"]["model"] == "geometry"
    assert block["partition"]["kind"] in ("dirichlet", "shards")
    radio = settings(params)["radio"]
    noise_w = dbm_to_watt(torch.tensor(radio["n0_dbm_per_hz"])) * radio["bandwidth_hz"]
    power_keys = ARENA.panel_keys + ("snr_db", "power_w")

    def without_power(curve: dict) -> dict:
        """The curve but its power (a top-level power_w, or LAPA's radio.max_power_w)."""
        out = {k: v for k, v in curve.items() if k not in power_keys}
        if "radio" in out:
            out["radio"] = {k: v for k, v in out["radio"].items() if k != "max_power_w"}
        return out

    for name, curve in block["curves"].items():      # the power only sets the scheme's SNR
        if "arena_snr_db" in curve:
            if "snr_db" in curve:
                assert curve["snr_db"] == pytest.approx(curve["arena_snr_db"], abs=1e-6)
            else:                                    # its power P in W: P Lambda_edge / (N0 B)
                edge = gain_from_db(log_distance_db(
                    torch.tensor([radio["radius_m"]], dtype=torch.float64),
                    pl0_db=radio["pl0_db"], exponent=radio["exponent"]))
                power_w = curve.get("power_w", curve.get("radio", {}).get("max_power_w"))
                snr = 10 * math.log10(float(power_w * edge[0] / noise_w))
                assert snr == pytest.approx(curve["arena_snr_db"], abs=1e-6)
            base = block["curves"][re.sub(r"_pm?[0-9p]+dbm$", "", name)]
            assert without_power(curve) == without_power(base)
    assert block["curves"]["ota_fl"]["snr_db"] == pytest.approx(edge_snr_db(radio))


def test_an_snr_eps_outside_the_eps_targets_stops(params):
    bad = {**params, "arena": {**params["arena"],
                               "privacy": {**params["arena"]["privacy"], "snr_eps": 3.0}}}
    with pytest.raises(ValueError, match="arena.privacy.snr_eps = 3.0"):
        settings(bad)
