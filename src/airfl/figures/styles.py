"""One colour and marker per scheme, from a declared palette, and no two curves of a figure alike.

A wing declares the style of each scheme name it draws (`register_styles`: colour and marker, and
`proposed=True` for the scheme its paper proposes, drawn most prominent: thicker, larger markers,
on top). A figure's curves are styled together (`figure_styles`), so that no two share a colour:

1. a declared name keeps its declared style in every figure;
2. a variant of a declared name ("Name, detail" or "Name (detail)", e.g. one budget of a
   proposed scheme) keeps the name's marker and prominence, and its colour where no other curve
   of the figure has it, else the first free colour of the palette (the proposed family for a
   proposed scheme: reds first);
3. any other name (a plug-in scheme without a declared style) gets the first free colour and
   the first free marker of the palette, in the order the figure lists its curves.

So a scheme's colour never depends on a hash, and within one figure it depends only on which
curves the figure draws (the order of its curves is their declaration order). Two declared
styles that share a colour in one figure are a mistake in the declarations: `figure_styles`
keeps them as declared and `collisions` names them (a test checks every registered figure).
Kept free of plotting imports so that registering styles costs nothing at import time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# The palette a curve without a declared colour takes from, in order: distinguishable hues first
# (matplotlib's tab10 without red, which marks proposed schemes), then darker and lighter ones.
PALETTE = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#e377c2",
           "#bcbd22", "#7f7f7f", "#000000", "#393b79", "#637939", "#8c6d31", "#843c39",
           "#7b4173", "#66c2a5", "#fc8d62", "#b3de69", "#a6cee3", "#cab2d6")
# Variants of a proposed scheme (e.g. several privacy budgets) stay in the warm, saturated family.
PROPOSED_PALETTE = ("#d62728", "#8b0000", "#ff7f0e", "#e7298a", "#a6761d", "#fb6a4a")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "d", "H", "8")
PROPOSED_MARKER = "*"


@dataclass(frozen=True)
class Style:
    """How one curve is drawn. `proposed`: the paper's proposed scheme (most prominent)."""

    colour: str
    marker: str
    proposed: bool = False

    @property
    def linewidth(self) -> float:
        return 2.6 if self.proposed else 1.5

    @property
    def markersize(self) -> float:
        return 8.5 if self.proposed else 6.0

    @property
    def zorder(self) -> float:
        return 4.0 if self.proposed else 2.0


SCHEME_STYLES: dict[str, Style] = {
    "Ideal FedAvg": Style("#000000", "o"),
    "OTA-FL": Style("#1f77b4", "s"),
    "Digital FL": Style("#2ca02c", "^"),
    "FedAvg + DP": Style("#9467bd", "D"),
}


def register_styles(styles: dict[str, tuple[str, str] | Style], proposed: Iterable[str] = ()
                    ) -> None:
    """A wing's scheme names and their (colour, marker); names in `proposed` are its paper's
    proposed schemes. A name keeps one style everywhere: a second, different one is refused."""
    chosen = set(proposed)
    unknown = chosen - set(styles)
    if unknown:
        raise ValueError(f"proposed scheme(s) {sorted(unknown)} have no declared style")
    for name, style in styles.items():
        if not isinstance(style, Style):
            style = Style(style[0], style[1], name in chosen)
        if SCHEME_STYLES.get(name, style) != style:
            raise ValueError(f"scheme name {name!r} already has the style {SCHEME_STYLES[name]}")
        SCHEME_STYLES[name] = style


_VARIANT = re.compile(r"^(?P<base>.+?)(?:,\s|\s\().*$")


def declared_base(name: str) -> str | None:
    """The declared name that `name` is a variant of ("Name, detail" or "Name (detail)"; the
    longest declared prefix), or None."""
    if name in SCHEME_STYLES:
        return name
    candidates = [base for base in SCHEME_STYLES
                  if name.startswith(base) and name[len(base):][:2] in (", ", " (")]
    return max(candidates, key=len) if candidates else None


def figure_styles(names: Iterable[str]) -> dict[str, Style]:
    """The style of each curve name of one figure (rules in the module docstring): declared
    names as declared; variants and undeclared names take free colours in the listed order."""
    order = list(dict.fromkeys(names))
    styles: dict[str, Style] = {n: SCHEME_STYLES[n] for n in order if n in SCHEME_STYLES}
    used_colours = {s.colour for s in styles.values()}
    used_markers = {s.marker for s in styles.values()}
    for name in order:
        if name in styles:
            continue
        base = declared_base(name)
        if base is not None:
            family = SCHEME_STYLES[base]
            palette = PROPOSED_PALETTE + PALETTE if family.proposed else PALETTE
            colour = family.colour if family.colour not in used_colours else \
                _first_free(palette, used_colours)
            style = Style(colour, family.marker, family.proposed)
        else:
            style = Style(_first_free(PALETTE, used_colours), _first_free(MARKERS, used_markers))
        styles[name] = style
        used_colours.add(style.colour)
        used_markers.add(style.marker)
    return {name: styles[name] for name in order}


def label_styles(pairs: Iterable[tuple[str, str]]) -> dict[str, Style]:
    """The style of each legend label of one figure from (label, style key) pairs (the key: the
    label without a per-run suffix such as the final DP guarantee). Two labels with one key are
    two curves: the first keeps the key's style, a later one is styled by its own label (a
    variant of the key's declared name), so they never share a colour."""
    keys: dict[str, str] = {}
    for label, key in pairs:
        if label not in keys:
            keys[label] = key if key not in keys.values() else label
    styles = figure_styles(keys.values())
    return {label: styles[key] for label, key in keys.items()}


def _first_free(options: tuple[str, ...], used: set[str]) -> str:
    """The first option no curve of the figure has; when every one is taken (more curves than
    the palette holds), the options again in turn (`collisions` then names the shared ones)."""
    for option in options:
        if option not in used:
            return option
    return options[len(used) % len(options)]


def collisions(styles: dict[str, Style]) -> list[str]:
    """The colours that more than one curve of a figure shares, each with the names sharing it."""
    by_colour: dict[str, list[str]] = {}
    for name, style in styles.items():
        by_colour.setdefault(style.colour, []).append(name)
    return [f"{colour}: {', '.join(names)}" for colour, names in by_colour.items()
            if len(names) > 1]
