"""The claims stage: evaluate every experiment's declared claims on its stored figure data."""

from __future__ import annotations

import pandas as pd


def final_values(frame: pd.DataFrame, metric: str) -> dict[str, float]:
    """Mean over trials of `metric` at each curve's last evaluated round."""
    rows = frame.dropna(subset=[metric])
    last = rows[rows["round"] == rows.groupby("curve")["round"].transform("max")]
    return last.groupby("curve", sort=False)[metric].mean().to_dict()
