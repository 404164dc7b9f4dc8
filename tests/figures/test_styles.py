"""Scheme styles from the declared palette (airfl.figures.styles) and how curves that coincide are told
apart (airfl.figures.plotting), on hand-made names and frames."""

import pandas as pd
import pytest

from airfl.figures import styles
from airfl.figures.plotting import (coinciding, coinciding_groups, mean_curves, overlap_note,
                                    overlap_text)
from airfl.figures.styles import (PALETTE, Style, collisions, declared_base, figure_styles,
                                  label_styles)


@pytest.fixture()
def declared(monkeypatch):
    """A clean style table for one test: the core's names and a proposed scheme."""
    table = {"OTA-FL": Style("#1f77b4", "s"), "Ideal FedAvg": Style("#000000", "o"),
             "Mine": Style("#d62728", "*", proposed=True)}
    monkeypatch.setattr(styles, "SCHEME_STYLES", table)
    return table


def test_declared_names_keep_their_style_and_variants_their_marker(declared):
    got = figure_styles(["Ideal FedAvg", "OTA-FL, SNR 10 dB", "OTA-FL, SNR 0 dB"])
    assert got["Ideal FedAvg"] == declared["Ideal FedAvg"]
    assert got["OTA-FL, SNR 10 dB"] == declared["OTA-FL"]          # the base's colour is free
    assert got["OTA-FL, SNR 0 dB"].marker == "s"                    # same family, own colour
    assert got["OTA-FL, SNR 0 dB"].colour not in {"#1f77b4", "#000000"}
    assert collisions(got) == []


def test_an_undeclared_name_gets_a_free_colour_and_marker_not_a_hash(declared):
    """A plug-in scheme's label beside the baselines: today's hash gave it the colour and marker
    of 'OTA-FL, SNR 10 dB'; now it takes the first colour and marker no curve of the figure has."""
    names = ["Ideal FedAvg", "OTA-FL, SNR 10 dB", "OTA-FL, SNR 0 dB", "Trimmed mean"]
    got = figure_styles(names)
    taken = {got[n].colour for n in names[:3]}
    assert got["Trimmed mean"].colour == next(c for c in PALETTE if c not in taken)
    assert got["Trimmed mean"].marker not in {got[n].marker for n in names[:3]}
    assert collisions(got) == []
    assert figure_styles(names) == got                              # deterministic


def test_proposed_scheme_and_its_variants_are_the_most_prominent(declared):
    got = figure_styles(["Ideal FedAvg", "Mine, ε = 1", "Mine, ε = 10", "Other"])
    prominent = [n for n, s in got.items() if s.proposed]
    assert prominent == ["Mine, ε = 1", "Mine, ε = 10"]
    assert got["Mine, ε = 1"].colour == "#d62728" and got["Mine, ε = 10"].colour != "#d62728"
    assert all(got[p].linewidth > got[o].linewidth and got[p].zorder > got[o].zorder
               for p in prominent for o in ("Ideal FedAvg", "Other"))


def test_declared_styles_that_collide_are_reported_not_hidden(declared):
    declared["Twin"] = Style("#1f77b4", "o")
    assert collisions(figure_styles(["OTA-FL", "Twin"])) == ["#1f77b4: OTA-FL, Twin"]


def test_register_refuses_a_second_style_and_an_undeclared_proposed_name(declared):
    styles.register_styles({"New": ("#2ca02c", "^")}, proposed=("New",))
    assert styles.SCHEME_STYLES["New"] == Style("#2ca02c", "^", proposed=True)
    with pytest.raises(ValueError, match="already has the style"):
        styles.register_styles({"New": ("#2ca02c", "^")})            # same, not proposed
    with pytest.raises(ValueError, match="no declared style"):
        styles.register_styles({"A": ("#000000", "o")}, proposed=("B",))


def test_declared_base_takes_the_longest_declared_prefix(declared):
    declared["OTA-FL with DP"] = Style("#393b79", "D")
    assert declared_base("OTA-FL with DP (ε ≥ 1), T = 3") == "OTA-FL with DP"
    assert declared_base("OTA-FL, SNR 3 dB") == "OTA-FL"
    assert declared_base("OTA-FLX") is None


def _frame(curves):
    return pd.DataFrame([{"label": label, "trial": trial, "x": x, "y": y}
                         for label, ys in curves.items() for trial in (0, 1)
                         for x, y in enumerate(ys)])


def test_coinciding_curves_are_found_and_named():
    frame = _frame({"a": [0.1, 0.5, 0.9], "b": [0.1, 0.5, 0.9001], "c": [0.1, 0.3, 0.5]})
    pairs = coinciding(mean_curves(frame, "x", "y", "label"))
    assert [(a, b) for a, b, _ in pairs] == [("a", "b")]
    assert pairs[0][2] == pytest.approx(1e-4)
    assert overlap_text(pairs) == "a = b (max |Δ| 0.0001)"
    assert "a = b (max" in overlap_note([overlap_text(pairs)])
    assert overlap_note(["", ""]) == ""


def test_coinciding_pairs_join_into_groups():
    pairs = [("a", "c", 0.0), ("a", "d", 0.2), ("b", "e", 0.1), ("c", "d", 0.1)]
    assert coinciding_groups(pairs) == [(["b", "e"], 0.1), (["a", "c", "d"], 0.2)]


def test_curves_apart_by_more_than_the_share_do_not_coincide():
    frame = _frame({"a": [0.0, 1.0], "b": [0.0, 0.97]})             # 3 % of the axis apart
    assert coinciding(mean_curves(frame, "x", "y", "label")) == []


def test_two_labels_with_one_style_key_get_two_colours(declared):
    """Two DP runs of one scheme whose legends differ only by their final guarantee."""
    got = label_styles([("Mine (ε = 1)", "Mine"), ("Mine (ε = 2)", "Mine"), ("Mine (ε = 1)", "Mine")])
    assert list(got) == ["Mine (ε = 1)", "Mine (ε = 2)"]
    assert got["Mine (ε = 1)"] == declared["Mine"]
    assert got["Mine (ε = 2)"].colour != declared["Mine"].colour and got["Mine (ε = 2)"].proposed


def test_more_curves_than_markers_reuse_markers_and_colours_stay_distinct(declared):
    names = [f"device {i}" for i in range(16)]
    got = figure_styles(names)
    assert collisions(got) == [] and len({s.marker for s in got.values()}) < 16
