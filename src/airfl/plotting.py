"""The figure theme (seaborn) and deterministic saving; colours and markers come from styles.py."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from airfl.io import atomic_path  # noqa: E402

from airfl.styles import style_for  # noqa: E402


def set_theme() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "svg.hashsalt": "airfl",
                         "pdf.compression": 6})


def line_plot(frame: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str, title: str,
              logy: bool = False, hue: str = "label", style_key: str = "style_key",
              markers: tuple[tuple[str, str], ...] = (), logx: bool = False):
    """Mean over trials with a +-1 standard-deviation band, one line per `hue` value. Rows
    without an x value (a curve that does not depend on x) are drawn as dashed horizontal lines
    at their mean; each `markers` (column, legend) as a dotted vertical line at its mean."""
    set_theme()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    keys = frame.drop_duplicates(hue).set_index(hue)[style_key]
    flat = frame[frame[x].isna()] if x in frame else frame.iloc[:0]
    frame = frame.drop(flat.index)
    order = list(dict.fromkeys(frame[hue]))
    palette = {label: style_for(keys[label])[0] for label in order}
    symbols = {label: style_for(keys[label])[1] for label in order}
    sns.lineplot(data=frame, x=x, y=y, hue=hue, style=hue, hue_order=order, style_order=order,
                 palette=palette, markers=symbols, dashes=False, errorbar="sd", ax=ax,
                 markevery=max(1, frame[x].nunique() // 10), markersize=6, linewidth=1.6)
    for label, rows in flat.groupby(hue, sort=False):
        ax.axhline(rows[y].mean(), color=style_for(keys[label])[0], linestyle="--",
                   linewidth=1.2, label=label)
    for (column, legend), color in zip(markers, ("#444444", "#999999")):
        if column in frame and frame[column].notna().any():
            ax.axvline(frame[column].mean(), color=color, linestyle=":", linewidth=1.4,
                       label=f"{legend} ({frame[column].mean():.3g})")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if logy:
        ax.set_yscale("log")
    if logx:
        ax.set_xscale("log")
    ax.legend(title=None, fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def panel_plot(frame: pd.DataFrame, panels, xlabel: str, title: str, logx: bool = False,
               hue: str = "label"):
    """One subplot per panel (a metric of a tidy x/metric/value frame), one line per `hue` value,
    styled by scheme name; exact values, so no band."""
    set_theme()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        rows = frame[frame["metric"] == panel.metric]
        order = list(dict.fromkeys(rows[hue]))
        sns.lineplot(data=rows, x="x", y="value", hue=hue, style=hue, hue_order=order,
                     style_order=order, palette={k: style_for(k)[0] for k in order},
                     markers={k: style_for(k)[1] for k in order}, dashes=False, errorbar=None,
                     ax=ax, markevery=max(1, rows["x"].nunique() // 10), markersize=6,
                     linewidth=1.6)
        ax.set(xlabel=xlabel, ylabel=panel.ylabel)
        if panel.logy:
            ax.set_yscale("log")
        if logx:
            ax.set_xscale("log")
        ax.legend(title=None, fontsize=8, loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


_METADATA = {"png": {"Software": None},
             "pdf": {"Creator": None, "Producer": None, "CreationDate": None}}


def save_figure(fig, stem: Path, formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
    """The figure in each format with metadata stripped, so equal data give equal bytes."""
    written = []
    for suffix in formats:
        metadata = _METADATA[suffix]
        path = Path(f"{stem}.{suffix}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=suffix, metadata=metadata)
        written.append(path)
    plt.close(fig)
    return written
