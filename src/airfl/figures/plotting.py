"""The figure theme and deterministic saving; every figure says what it is.

Colours, markers and prominence come from styles.py (one figure's curves styled together, no two
alike). A figure carries a footer (`footer`) naming how it was made (profile, trials, dataset and
model, a substitution), written by the stage from stored data; titles and footers are wrapped
and saved with a tight bounding box, so nothing is cut off. Curves that coincide are drawn with
different line styles and staggered markers and named in the footer (`coinciding`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from airfl.runtime.io import atomic_path  # noqa: E402

from airfl.figures.styles import Style, figure_styles, label_styles  # noqa: E402

# Line styles of curves that coincide with an earlier one (the first keeps a solid line).
OVERLAP_DASHES = ("--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3)))
# Two mean curves coincide when they differ nowhere by more than this share of the y axis.
COINCIDE_SHARE = 0.02
TITLE_WIDTH = 68                      # characters per title line at 6.4 in
FOOTER_WIDTH = 118                    # characters per footer line at 6.4 in


def set_theme() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "svg.hashsalt": "airfl",
                         "pdf.compression": 6})


def wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width)) if text else ""


def mean_curves(frame: pd.DataFrame, x: str, y: str, hue: str) -> dict[str, pd.DataFrame]:
    """Per `hue` value: mean and standard deviation (ddof 1; 0 for one trial) of y at each x."""
    curves = {}
    for label, rows in frame.groupby(hue, sort=False):
        stats = rows.groupby(x, sort=True)[y].agg(["mean", "std"]).fillna({"std": 0.0})
        curves[label] = stats
    return curves


def coinciding(curves: dict[str, pd.DataFrame], logy: bool = False,
               share: float = COINCIDE_SHARE) -> list[tuple[str, str, float]]:
    """Pairs of curves (earlier, later, max |difference|) whose means differ by at most `share`
    of the y axis's span at every common x (log y: of the span of log10 y), so that one hides
    the other; curves without a common x never coincide."""
    def values(stats):
        v = stats["mean"].astype(float)
        return np.log10(v.where(v > 0)) if logy else v

    series = {k: values(s).dropna() for k, s in curves.items()}
    every = pd.concat(series.values()) if series else pd.Series(dtype=float)
    span = float(every.max() - every.min()) if len(every) else 0.0
    pairs = []
    names = list(series)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = series[a].index.intersection(series[b].index)
            if len(common) == 0:
                continue
            gap = float((series[a][common] - series[b][common]).abs().max())
            if gap <= share * span or span == 0.0:
                pairs.append((a, b, gap))
    return pairs


def coinciding_groups(pairs: list[tuple[str, str, float]]) -> list[tuple[list[str], float]]:
    """The coinciding pairs joined into groups (curves linked by a chain of pairs), each with
    its largest pairwise difference, in the order the curves are first named."""
    groups: list[tuple[list[str], float]] = []
    for a, b, gap in pairs:
        hits = [g for g in groups if a in g[0] or b in g[0]]
        names = list(dict.fromkeys([n for g in hits for n in g[0]] + [a, b]))
        largest = max([gap, *(g[1] for g in hits)])
        groups = [g for g in groups if g not in hits] + [(names, largest)]
    return groups


def overlap_text(pairs: list[tuple[str, str, float]], logy: bool = False) -> str:
    """The coinciding groups, e.g. "A = B = C (max |Δ| 0)"; empty when none."""
    unit = " in log10" if logy else ""
    return "; ".join(f"{' = '.join(names)} (max |Δ| {gap:.2g}{unit})"
                     for names, gap in coinciding_groups(pairs))


def overlap_note(texts: list[str]) -> str:
    """The footer's sentence naming coinciding curves (`texts`: one `overlap_text` per panel,
    prefixed with the panel where there are several)."""
    texts = [t for t in texts if t]
    if not texts:
        return ""
    return (f"Coinciding curves (within {100 * COINCIDE_SHARE:g} % of the y axis everywhere; "
            f"drawn dashed on top, with hollow markers): {'; '.join(texts)}.")


def _overlap_ranks(order: list[str], pairs: list[tuple[str, str, float]]) -> dict[str, int]:
    """0 for every curve, except a later curve that coincides with an earlier one: 1, 2, ...
    in drawing order (its dash pattern and the size of its hollow markers)."""
    ranks = {label: 0 for label in order}
    hidden = {b for _, b, _ in pairs}
    for number, label in enumerate((l for l in order if l in hidden), start=1):
        ranks[label] = number
    return ranks


def _draw_curve(ax, stats: pd.DataFrame, label: str, style: Style, rank: int, offset: int,
                band: bool) -> None:
    """One mean curve (and its +-1 s.d. band). `rank` > 0: the curve coincides with an earlier
    one, so it is drawn on top of it, dashed, with hollow markers that grow with the rank
    (rings around the earlier curve's markers, up to the fourth, seen even where the markers
    cannot be staggered); markers are staggered along x by `offset` where there are enough points."""
    xs, mean = stats.index.to_numpy(dtype=float), stats["mean"].to_numpy(dtype=float)
    step = max(1, len(xs) // 10)
    hollow = rank > 0
    ax.plot(xs, mean, color=style.colour, marker=style.marker,
            linestyle=OVERLAP_DASHES[(rank - 1) % len(OVERLAP_DASHES)] if hollow else "-",
            linewidth=min(style.linewidth, 1.6) if hollow else style.linewidth,
            markersize=style.markersize + 2.0 * min(rank, 4), markevery=(offset % step, step),
            zorder=5.0 + rank / 100 if hollow else style.zorder, label=label,
            markerfacecolor="none" if hollow else style.colour,
            markeredgecolor=style.colour if hollow or not style.proposed else "white",
            markeredgewidth=1.5 if hollow else 0.6)
    if band and (stats["std"] > 0).any():
        sd = stats["std"].to_numpy(dtype=float)
        ax.fill_between(xs, mean - sd, mean + sd, color=style.colour, alpha=0.15, linewidth=0,
                        zorder=style.zorder - 1)


def _finish(fig, ax_or_axes, title: str, footer: str, legend_entries: int) -> None:
    """Title (wrapped), layout, legends and footer. Up to 6 curves: a legend inside each axes
    where it covers least; more: one legend beside the last axes (added after the layout, so
    the saved bounding box grows to hold it instead of squeezing the axes)."""
    axes = ax_or_axes if isinstance(ax_or_axes, (list, tuple, np.ndarray)) else [ax_or_axes]
    width = TITLE_WIDTH * max(1, len(axes) * 0.8)
    if len(axes) == 1:
        axes[0].set_title(wrap(title, int(width)))
    else:
        fig.suptitle(wrap(title, int(width)))
    fig.tight_layout()
    if legend_entries > 6:
        axes[-1].legend(title=None, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                        ncol=1 if legend_entries <= 14 else 2, frameon=False)
    else:
        for ax in axes:
            ax.legend(title=None, fontsize=8, loc="best")
    if footer:
        fig.text(0.01, 0.0, wrap(footer, int(FOOTER_WIDTH * max(1, len(axes) * 0.8))),
                 ha="left", va="top", fontsize=7, color="#333333")


def line_plot(frame: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str, title: str,
              logy: bool = False, hue: str = "label", style_key: str = "style_key",
              markers: tuple[tuple[str, str], ...] = (), logx: bool = False, footer: str = ""):
    """Mean over trials with a +-1 standard-deviation band, one line per `hue` value, styled by
    its `style_key` (styles.figure_styles). Rows without an x value (a curve that does not depend
    on x) are drawn as dashed horizontal lines at their mean; each `markers` (column, legend) as
    a dotted vertical line at its mean. `footer`: how the figure was made (below the axes),
    followed by a note naming curves that coincide."""
    set_theme()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    styles = label_styles(zip(frame[hue], frame[style_key]))
    flat = frame[frame[x].isna()] if x in frame else frame.iloc[:0]
    frame = frame.drop(flat.index)
    curves = mean_curves(frame, x, y, hue)
    pairs = coinciding(curves, logy)
    order = list(curves)
    ranks = _overlap_ranks(order, pairs)
    for number, label in enumerate(order):
        _draw_curve(ax, curves[label], label, styles[label], ranks[label], number, band=True)
    for label, rows in flat.groupby(hue, sort=False):
        ax.axhline(rows[y].mean(), color=styles[label].colour, linestyle="--",
                   linewidth=styles[label].linewidth, label=label)
    for (column, legend), color in zip(markers, ("#444444", "#999999")):
        if column in frame and frame[column].notna().any():
            ax.axvline(frame[column].mean(), color=color, linestyle=":", linewidth=1.4,
                       label=f"{legend} ({frame[column].mean():.3g})")
    ax.set(xlabel=xlabel, ylabel=ylabel)
    if logy:
        ax.set_yscale("log")
    if logx:
        ax.set_xscale("log")
    note = overlap_note([overlap_text(pairs, logy)])
    _finish(fig, ax, title, " ".join(t for t in (footer, note) if t),
            len(order) + flat[hue].nunique() + len(markers))
    return fig


def panel_plot(frame: pd.DataFrame, panels, xlabel: str, title: str, logx: bool = False,
               hue: str = "label", footer: str = ""):
    """One subplot per panel (a metric of a tidy x/metric/value frame), one line per `hue` value,
    styled by its name (styles.figure_styles over every panel's names, so a name has one style
    across panels); exact values, so no band."""
    set_theme()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    styles = figure_styles(frame[hue].tolist())
    texts, entries = [], 0
    for ax, panel in zip(axes[0], panels):
        rows = frame[frame["metric"] == panel.metric]
        curves = mean_curves(rows, "x", "value", hue)
        pairs = coinciding(curves, panel.logy)
        ranks = _overlap_ranks(list(curves), pairs)
        for number, label in enumerate(curves):
            _draw_curve(ax, curves[label], label, styles[label], ranks[label], number,
                        band=False)
        ax.set(xlabel=xlabel, ylabel=panel.ylabel)
        if panel.logy:
            ax.set_yscale("log")
        if logx:
            ax.set_xscale("log")
        texts.append((panel.ylabel, overlap_text(pairs, panel.logy)))
        entries = max(entries, len(curves))
    if len({text for _, text in texts}) == 1:          # the same in every panel: said once
        note = overlap_note([texts[0][1]])
    else:
        note = overlap_note([f"{ylabel}: {text}" for ylabel, text in texts if text])
    _finish(fig, list(axes[0]), title, " ".join(t for t in (footer, note) if t), entries)
    return fig


_METADATA = {"png": {"Software": None},
             "pdf": {"Creator": None, "Producer": None, "CreationDate": None}}


def save_figure(fig, stem: Path, formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
    """The figure in each format with metadata stripped, so equal data give equal bytes; the
    bounding box is the drawn content's (a long title, a legend below the axes or the footer
    are never cut off)."""
    written = []
    for suffix in formats:
        metadata = _METADATA[suffix]
        path = Path(f"{stem}.{suffix}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=suffix, metadata=metadata, bbox_inches="tight",
                        pad_inches=0.08)
        written.append(path)
    plt.close(fig)
    return written
