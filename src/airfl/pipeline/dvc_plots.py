"""What `dvc plots show` and `dvc plots diff` draw: Vega-Lite templates (.dvc/plots/*.json,
generated with dvc.yaml by `airfl dvc-yaml`) and an HTML page that renders them offline.

DVC's default template draws every row of a CSV as one line, so a figure's CSV (one row per
curve, trial and x) became one zig-zag line over all schemes and trials. These templates draw
what the PNG draws: one line per scheme (the CSV's `label`), the mean over trials at each x, in
the colour the figure gives the scheme (the CSV's `color`), on the figure's own axes (x, y,
their labels and log scales, from dvc.yaml's plot properties), one line style per revision
(`dvc plots diff`). Analytic figures (one CSV, one panel per `metric`) get one panel per metric;
audits a dot per audited quantity and mechanism.

DVC's page loads its renderer from a CDN (blank offline): `.dvc/config` points `plots.html_template`
at `.dvc/plots/offline.html`, which carries vega, vega-lite and vega-embed inline (`offline_page`,
built by `make vendor-vega` from the npm packages named in VEGA_PACKAGES).
"""

from __future__ import annotations

import sys
from pathlib import Path
from dataclasses import dataclass
from typing import Any

TEMPLATE_DIR = Path(".dvc") / "plots"
OFFLINE_PAGE = TEMPLATE_DIR / "offline.html"
VEGA_PACKAGES = {"vega": "5.33.1", "vega-lite": "5.23.0", "vega-embed": "6.29.0"}
SCRIPTS = {"vega": "build/vega.min.js", "vega-lite": "build/vega-lite.min.js",
           "vega-embed": "build/vega-embed.min.js"}
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"      # an identifier, never fetched

DATA, TITLE = "<DVC_METRIC_DATA>", "<DVC_METRIC_TITLE>"
X, Y = "<DVC_METRIC_X>", "<DVC_METRIC_Y>"
X_LABEL, Y_LABEL = "<DVC_METRIC_X_LABEL>", "<DVC_METRIC_Y_LABEL>"

# audit CSV columns drawn per mechanism (airfl.pipeline.stages.audit.COLUMNS)
AUDIT_VALUES = ("eps_claimed", "eps_simulated", "eps_audited_lower", "eps_audited_point",
                "eps_audited_upper")


def _scale(log: bool) -> dict[str, Any]:
    return {"type": "log"} if log else {"zero": False}


def _colour() -> dict[str, Any]:
    """One colour per scheme, the figure's own (the CSV's `color` column, aligned by Vega-Lite
    with the scheme's `label`)."""
    return {"field": "label", "type": "nominal", "title": "scheme (mean over trials)",
            "scale": {"range": {"field": "color"}}, "legend": {"labelLimit": 420}}


def _revision() -> dict[str, Any]:
    return {"field": "rev", "type": "nominal", "title": "revision"}


def lines(logx: bool = False, logy: bool = False) -> dict[str, Any]:
    """A training figure: the mean over trials of y at each x, one line per scheme and
    revision; rows without x or y (a curve that does not depend on x, a metric not evaluated
    in that round) are left out."""
    return {
        "$schema": SCHEMA, "data": {"values": DATA}, "title": TITLE,
        "width": 560, "height": 340,
        "transform": [{"filter": {"and": [{"not": {"field": X, "equal": ""}},
                                          {"not": {"field": Y, "equal": ""}}]}}],
        "mark": {"type": "line", "point": True, "tooltip": True},
        "encoding": {
            "x": {"field": X, "type": "quantitative", "title": X_LABEL, "scale": _scale(logx)},
            "y": {"field": Y, "aggregate": "mean", "type": "quantitative", "title": Y_LABEL,
                  "scale": _scale(logy)},
            "color": _colour(), "strokeDash": _revision()}}


def panels(logx: bool = False, logy: bool = False) -> dict[str, Any]:
    """An analytic figure: one panel per metric (its own y axis), one line per scheme."""
    return {
        "$schema": SCHEMA, "data": {"values": DATA}, "title": TITLE,
        "transform": [{"filter": {"not": {"field": Y, "equal": ""}}}],
        "facet": {"column": {"field": "metric", "type": "nominal", "title": None}},
        "resolve": {"scale": {"y": "independent"}},
        "spec": {"width": 380, "height": 300,
                 "mark": {"type": "line", "point": True, "tooltip": True},
                 "encoding": {
                     "x": {"field": X, "type": "quantitative", "title": X_LABEL,
                           "scale": _scale(logx)},
                     "y": {"field": Y, "aggregate": "mean", "type": "quantitative",
                           "title": Y_LABEL, "scale": _scale(logy)},
                     "color": _colour(), "strokeDash": _revision()}}}


def audit() -> dict[str, Any]:
    """An audit: per mechanism (rows), the claimed, simulated and audited epsilons on a log axis."""
    return {
        "$schema": SCHEMA, "data": {"values": DATA}, "title": TITLE, "width": 520,
        "transform": [{"fold": list(AUDIT_VALUES), "as": ["quantity", "epsilon"]},
                      {"filter": "isFinite(toNumber(datum.epsilon)) && toNumber(datum.epsilon) > 0"}],
        "mark": {"type": "point", "filled": True, "size": 70, "tooltip": True},
        "encoding": {
            "y": {"field": "label", "type": "nominal", "title": None},
            "x": {"field": "epsilon", "type": "quantitative", "scale": {"type": "log"},
                  "title": "epsilon (one round)"},
            "color": {"field": "quantity", "type": "nominal", "sort": list(AUDIT_VALUES)},
            "shape": _revision()}}


def template_name(kind: str, logx: bool = False, logy: bool = False) -> str:
    """The template a plot uses: `airfl_<kind>[_logx][_logy]` (kind: lines, panels, audit)."""
    return "airfl_" + kind + ("_logx" if logx else "") + ("_logy" if logy else "")


def templates() -> dict[str, dict[str, Any]]:
    """Every template, by name (its file: .dvc/plots/<name>.json)."""
    out = {"airfl_audit": audit()}
    for kind, make in (("lines", lines), ("panels", panels)):
        for logx in (False, True):
            for logy in (False, True):
                out[template_name(kind, logx, logy)] = make(logx, logy)
    return out


def template_texts() -> dict[Path, str]:
    import json

    return {TEMPLATE_DIR / f"{name}.json": json.dumps(spec, indent=1, ensure_ascii=False) + "\n"
            for name, spec in templates().items()}


HEAD = """<!DOCTYPE html>
<!-- airfl: `dvc plots show` / `dvc plots diff` page that renders offline (.dvc/config:
     plots.html_template). Built by `make vendor-vega` (src/airfl/pipeline/dvc_plots.py) from
     {versions}; their licences (BSD-3-Clause) follow. Do not edit: rebuild.
{licences}
-->
<html>
<head>
    <meta charset="utf-8">
    {{refresh_tag}}
    <title>airfl: DVC plots</title>
"""

TAIL = """    <style>
        body { font-family: sans-serif; }
        div[id] { margin: 18px 0; }
    </style>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def offline_page(packages: Path) -> str:
    """The HTML template with vega, vega-lite and vega-embed inline, from unpacked npm packages
    (`packages/<name>/package/...`, as `npm pack` and tar leave them)."""
    versions = ", ".join(f"{n}@{v}" for n, v in VEGA_PACKAGES.items())
    licences = []
    scripts = []
    for name, script in SCRIPTS.items():
        root = packages / name / "package"
        found = root / "LICENSE"
        text = found.read_text() if found.exists() else BSD3.format(name=name)
        licences.append(f"--- {name}@{VEGA_PACKAGES[name]} ---\n{text.replace('--', '- -')}")
        code = (root / script).read_text()
        if "</script" in code:
            raise ValueError(f"{name}'s {script} holds '</script'; it cannot be inlined")
        scripts.append(f"    <script>/* {name}@{VEGA_PACKAGES[name]} */\n{code}\n    </script>\n")
    return HEAD.format(versions=versions, licences="\n".join(licences)) + "".join(scripts) + TAIL


BSD3 = """Copyright (c) 2015-2023, University of Washington Interactive Data Lab.
All rights reserved. ({name}: BSD-3-Clause, as its package.json states)

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the following conditions are met:
1. Redistributions of source code must retain the above copyright notice, this list of conditions
   and the following disclaimer.
2. Redistributions in binary form must reproduce the above copyright notice, this list of
   conditions and the following disclaimer in the documentation and/or other materials provided
   with the distribution.
3. Neither the name of the copyright holder nor the names of its contributors may be used to
   endorse or promote products derived from this software without specific prior written
   permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND
FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR
CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER
IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT
OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE."""


def main(argv: list[str] | None = None) -> int:
    """`python -m airfl.pipeline.dvc_plots PACKAGES_DIR`: write .dvc/plots/offline.html."""
    from airfl.runtime.io import write_text

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        sys.stderr.write("usage: python -m airfl.pipeline.dvc_plots DIR (unpacked npm packages "
                         f"{', '.join(VEGA_PACKAGES)})\n")
        return 2
    write_text(OFFLINE_PAGE, offline_page(Path(args[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


@dataclass(frozen=True)
class Plot:
    """One figure CSV as `dvc plots` draws it: its axes as the PNG has them (columns, labels,
    log scales) and the template (this module) that draws one line per scheme."""

    path: str
    x: str
    y: str
    title: str
    x_label: str
    y_label: str
    template: str

    def props(self) -> dict[str, str]:
        """dvc.yaml's plot properties."""
        return {"template": self.template, "x": self.x, "y": self.y, "title": self.title,
                "x_label": self.x_label, "y_label": self.y_label}
