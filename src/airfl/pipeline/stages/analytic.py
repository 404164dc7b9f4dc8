"""Stage `analytic`: compute one analytic figure from its paper's formulas, store the tidy frame
(figures/<paper>/<figure>.csv, exactly what is drawn) with its attributes and provenance, draw it."""

from __future__ import annotations

import json
import time
from typing import Any

from airfl.pipeline import paths
from airfl.pipeline.registry import get_analytic
from airfl.runtime.io import provenance, read_json, record_run, write_csv, write_json
from airfl.pipeline.artifacts import analytic_made_with, with_colours
from airfl.pipeline.stage_params import declared


@declared("analytic")
def run(params: dict[str, Any], figure_id: str) -> None:
    from airfl.figures.plotting import panel_plot, save_figure

    started = time.perf_counter()
    figure = get_analytic(figure_id)
    block = figure.params(params)
    frame = figure.compute(block)
    attrs = json.loads(json.dumps(frame.attrs, default=float))
    frame = with_colours(frame.assign(label=frame["scheme"].map(figure.scheme_label)), "label")
    write_csv(paths.figure(figure.id, "csv"), frame, float_format="%.17g")   # exact round trip
    write_json(paths.analytic(figure.id), {
        "attrs": attrs, "description": figure.description,
        "provenance": provenance({"profile": params["profile"], figure.config_key: block})})
    stored = read_json(paths.analytic(figure.id))["provenance"]["params"]   # as stored
    fig = panel_plot(frame, figure.panels, figure.xlabel, figure.title, figure.logx,
                     footer=analytic_made_with(stored["profile"]))
    save_figure(fig, paths.figure(figure.id, "png").with_suffix(""))
    record_run(paths.figure(figure.id, "csv"), wall_time_s=round(time.perf_counter() - started, 3))
