"""One colour and marker per scheme name, in every figure.

Colours come from a fixed table of scheme names (core schemes here; wings add theirs with
`register_styles`); a name not in the table gets a colour from a stable hash, never from its
position in a legend, so a scheme keeps its colour when other curves are added or removed.
Kept free of plotting imports so that registering styles costs nothing at import time.
"""

from __future__ import annotations

import hashlib

_PALETTE = ("#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
            "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
            "#bcbd22", "#dbdb8d", "#17becf", "#9edae5")          # matplotlib's tab20
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")

SCHEME_STYLES: dict[str, tuple[str, str]] = {
    "Ideal FedAvg": ("#000000", "o"),
    "OTA-FL": ("#1f77b4", "s"),
    "Digital FL": ("#2ca02c", "^"),
    "FedAvg + DP": ("#d62728", "D"),
}


def register_styles(styles: dict[str, tuple[str, str]]) -> None:
    """A wing's scheme names and their (colour, marker); a name keeps one style everywhere."""
    for name, style in styles.items():
        if SCHEME_STYLES.get(name, style) != style:
            raise ValueError(f"scheme name {name!r} already has the style {SCHEME_STYLES[name]}")
        SCHEME_STYLES[name] = style


def style_for(name: str) -> tuple[str, str]:
    """(colour, marker) of a scheme name; variants 'Name, detail' keep the base's marker."""
    if name in SCHEME_STYLES:
        return SCHEME_STYLES[name]
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    base = name.split(",")[0].strip()
    marker = SCHEME_STYLES[base][1] if base in SCHEME_STYLES else _MARKERS[digest % len(_MARKERS)]
    return _PALETTE[digest % len(_PALETTE)], marker


