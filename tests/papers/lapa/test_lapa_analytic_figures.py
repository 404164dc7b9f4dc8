"""LAPA's analytic figure, Fig. 3 (analytic_figures.py): the device layout of Sec. V-A drawn from
the committed radio block, each device's 3-D distance to the BS and path loss (eq. 39), and the
geometry claim, which fails when a device leaves its region."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from airfl.pipeline.params import validate_params
from airfl.papers.lapa.analytic_figures import layout_claims, layout_frame
from airfl.papers.lapa.radio import draw_radio, layout_generator


@pytest.fixture(scope="module")
def radio(repo_root):
    return validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))["lapa"]["radio"]


def test_one_row_per_device_and_the_bs_with_the_draws_distances_and_path_loss(radio):
    frame = layout_frame(radio)
    devices = frame[frame["region"] > 0]
    assert len(frame) == len(devices) + 1 == 16
    drawn = draw_radio(radio, clip=1.0, dim=21880,
                       generator=layout_generator(radio["layout_seed"], 0))
    assert devices["x"].to_numpy() == pytest.approx(drawn.positions[:, 0])
    assert devices["value"].to_numpy() == pytest.approx(drawn.positions[:, 1])
    assert devices["distance_m"].to_numpy() == pytest.approx(drawn.distances_m)
    assert devices["pl_db"].to_numpy() == pytest.approx(10 * np.log10(drawn.path_gain))
    bs = frame[frame["region"] == 0].iloc[0]
    assert (bs["x"], bs["value"]) == (radio["bs_position"][0], radio["bs_position"][1])
    # the 3-D distance to the BS (height bs_position[2], devices at z = 0)
    position = np.stack([devices["x"], devices["value"], np.zeros(len(devices))], axis=1)
    assert devices["distance_m"].to_numpy() == pytest.approx(
        np.linalg.norm(position - np.asarray(radio["bs_position"]), axis=1))


def test_the_geometry_claim_holds_on_the_draw_and_fails_when_a_device_leaves_its_region(radio):
    frame = layout_frame(radio)
    ((claim_id, _, numbers, holds),) = layout_claims(frame)
    assert claim_id == "fig3_geometry" and holds, numbers
    moved = frame.copy()
    first = moved.index[moved["region"] == 1][0]
    moved.loc[first, "x"] = radio["region2_x"][1] + 1.0          # out of both regions
    moved.attrs.update(frame.attrs)
    assert not layout_claims(moved)[0][3]
    wide = frame.copy()
    wide.loc[first, "value"] = 6.0                              # |y| > 5 m
    wide.attrs.update(frame.attrs)
    assert not layout_claims(wide)[0][3]
