"""Fig. 3: the device layout of Sec. V-A from the radio draw the training figures use
(`lapa.radio`, trial 0), each device annotated with its 3-D distance to the BS and its path loss
(eq. 39). A tidy frame: one point per device (x, y) plus the BS, and the claims that check it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .radio import draw_radio, layout_generator

#: kappa needs E_s = C^2 / q; the layout and path loss do not (q of the paper's CNN with its
#: BatchNorm layer, Sec. V-A; the frame is the same for any q).
LAYOUT_DIM = 21880


def layout_frame(radio: dict[str, Any]) -> pd.DataFrame:
    drawn = draw_radio(radio, clip=1.0, dim=LAYOUT_DIM,
                       generator=layout_generator(radio["layout_seed"], 0))
    pl_db = 10 * np.log10(drawn.path_gain)
    rows = [{"scheme": f"device {k} (Region {'I' * int(r)}): d = {d:.1f} m, PL = {p:.1f} dB",
             "x": float(pos[0]), "metric": "y", "value": float(pos[1]), "region": int(r),
             "distance_m": float(d), "pl_db": float(p)}
            for k, (pos, r, d, p) in enumerate(zip(drawn.positions, drawn.region,
                                                    drawn.distances_m, pl_db))]
    bs = radio["bs_position"]
    rows.append({"scheme": f"BS (height {bs[2]:g} m)", "x": bs[0], "metric": "y",
                 "value": bs[1], "region": 0, "distance_m": 0.0, "pl_db": np.nan})
    frame = pd.DataFrame(rows)
    frame.attrs.update(figure="fig3", params=radio)
    return frame


def layout_claims(frame: pd.DataFrame) -> list[tuple[str, str, str, bool]]:
    """The geometry matches Sec. V-A: 7 devices in Region I, 8 in Region II, inside their boxes."""
    radio = frame.attrs.get("params") or {}
    devices = frame[frame["region"] > 0]
    counts = devices["region"].value_counts().to_dict()
    inside = []
    for region, key in ((1, "region1_x"), (2, "region2_x")):
        rows = devices[devices["region"] == region]
        lo, hi = radio.get(key, (-np.inf, np.inf)) if radio else (-np.inf, np.inf)
        inside.append(bool(((rows["x"] >= lo) & (rows["x"] <= hi)).all()))
    y_ok = bool((devices["value"].abs() <= 5.0 + 1e-12).all())
    holds = counts.get(1, 0) == 7 and counts.get(2, 0) == 8 and all(inside) and y_ok
    numbers = (f"Region I: {counts.get(1, 0)} devices, Region II: {counts.get(2, 0)}; inside "
               f"their x ranges: {inside}; |y| <= 5 m: {y_ok}; distances "
               f"{devices['distance_m'].min():.1f}-{devices['distance_m'].max():.1f} m, PL "
               f"{devices['pl_db'].min():.1f} to {devices['pl_db'].max():.1f} dB")
    return [("fig3_geometry", "BS at (-50, 0, 10) m; 7 devices uniform in Region I "
             "(-10 <= x <= 0), 8 in Region II (10 <= x <= 20), |y| <= 5, z = 0 (Sec. V-A).",
             numbers, holds)]
