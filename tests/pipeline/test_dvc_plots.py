"""`dvc plots` draws what the figures draw, offline: the generated templates (one line per scheme,
the mean over trials, on the figure's own axes) filled by DVC's own renderer, every plot of
dvc.yaml naming one that exists, and `dvc plots show` run for real writing a page that loads
nothing from the network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from airfl.pipeline import dvc_plots


def _datapoints():
    """A figure CSV's rows as DVC reads them (strings): two schemes, two trials, one missing y."""
    rows = []
    for label, colour, base in (("Proposed", "#d62728", 0.5), ("Baseline", "#1f77b4", 0.2)):
        for trial in (0, 1):
            for x in (0, 1, 2):
                y = "" if (label, trial, x) == ("Baseline", 1, 2) else str(base + 0.1 * x + trial / 10)
                rows.append({"label": label, "color": colour, "trial": str(trial),
                             "round": str(x), "test_accuracy": y, "rev": "workspace"})
    return rows


def test_a_template_filled_by_dvc_draws_the_mean_per_scheme_on_the_figures_axes(repo_root):
    from dvc_render import VegaRenderer

    renderer = VegaRenderer(_datapoints(), "figures/x.csv", template="airfl_lines_logy",
                            template_dir=str(repo_root / dvc_plots.TEMPLATE_DIR), x="round",
                            y="test_accuracy", title="Fig. X", x_label="Round",
                            y_label="Accuracy")
    spec = renderer.get_filled_template()
    assert "<DVC_METRIC" not in json.dumps(spec)
    enc = spec["encoding"]
    assert (enc["x"]["field"], enc["x"]["title"]) == ("round", "Round")
    assert enc["y"] == {"field": "test_accuracy", "aggregate": "mean", "type": "quantitative",
                        "title": "Accuracy", "scale": {"type": "log"}}
    assert enc["color"]["field"] == "label" and enc["color"]["scale"]["range"] == {"field": "color"}
    assert spec["title"] == "Fig. X" and len(spec["data"]["values"]) == 12
    assert {"not": {"field": "test_accuracy", "equal": ""}} in spec["transform"][0]["filter"]["and"]


def test_every_plot_of_dvc_yaml_names_a_committed_template(repo_root):
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    plots = {path: p for stage in stages.values() for entry in stage.get("plots", [])
             for path, p in entry.items()}
    assert len(plots) > 50
    for path, props in plots.items():
        template = repo_root / dvc_plots.TEMPLATE_DIR / f"{props['template']}.json"
        assert template.exists(), (path, props["template"])
        assert {"x", "y", "title", "x_label", "y_label"} <= set(props), path
    kinds = {p["template"].split("_")[1] for p in plots.values()}
    assert kinds == {"lines", "panels", "audit"}


def test_the_offline_page_carries_its_renderer(repo_root):
    page = (repo_root / dvc_plots.OFFLINE_PAGE).read_text()
    assert "{plot_divs}" in page and "{scripts}" not in page   # DVC's CDN tags have no place
    assert "<script src" not in page and "cdn." not in page
    for name, version in dvc_plots.VEGA_PACKAGES.items():
        assert f"/* {name}@{version} */" in page
    config = (repo_root / ".dvc" / "config").read_text()
    assert "html_template = plots/offline.html" in config


def test_dvc_plots_show_writes_a_page_that_needs_no_network(repo_root, tmp_path):
    """A fresh DVC repository with the project's .dvc/config and templates and one figure CSV:
    the page `dvc plots show` writes has the renderer inline and the filled spec of one line
    per scheme (mean over trials)."""
    work = tmp_path / "repo"
    work.mkdir()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run([*dvc, "init", "-q"], cwd=work, check=True, env=env)
    shutil.copy(repo_root / ".dvc" / "config", work / ".dvc" / "config")
    shutil.copytree(repo_root / dvc_plots.TEMPLATE_DIR, work / dvc_plots.TEMPLATE_DIR)
    rows = _datapoints()
    header = ["label", "color", "trial", "round", "test_accuracy"]
    (work / "fig.csv").write_text(",".join(header) + "\n" + "".join(
        ",".join(r[h] for h in header) + "\n" for r in rows))
    (work / "dvc.yaml").write_text(yaml.safe_dump({"plots": [{"fig.csv": {
        "template": "airfl_lines", "x": "round", "y": "test_accuracy", "title": "Fig. X",
        "x_label": "Round", "y_label": "Accuracy"}}]}))
    done = subprocess.run([*dvc, "plots", "show", "-o", "out"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = (work / "out" / "index.html").read_text()
    assert "cdn.jsdelivr" not in page and "<script src" not in page
    assert "vegaEmbed(" in page and '"aggregate": "mean"' in page
    assert Path(work / "out" / "index.html").stat().st_size > 500_000     # the renderer inline
