"""Derivation sources and targets as names or glob patterns over the profile's curves, "*" for
every other curve; a derivation without source curves does not run (experiments.Derivation)."""

from airfl.core.experiments import Derivation


def _d(sources, targets):
    return Derivation("d", sources=sources, targets=targets, compute=lambda *a: {})


def test_literal_names_resolve_to_themselves_in_curve_order():
    curves = {"pilot": {}, "a": {}, "b": {}, "c": {}}
    assert _d(("pilot",), ("c", "a")).resolve(curves) == (("pilot",), ("a", "c"))


def test_patterns_and_star_target_every_curve_but_the_sources():
    curves = ["cal_1", "x", "cal_2", "y"]
    assert _d(("cal_*",), ("*",)).resolve(curves) == (("cal_1", "cal_2"), ("x", "y"))


def test_a_derivation_without_source_curves_does_not_run():
    d = _d(("cal_*",), ("*",))
    assert d.resolve(["x", "y"]) is None
    assert _d(("cal_*", "pilot"), ("*",)).resolve(["cal_1", "x"]) is None
