"""Biased FL's scheme parameters (schemes/params.py): the wing's `$defs.biased_fl_curve` is
generated from the schemes' declarations."""

from __future__ import annotations


def test_biased_fl_curve_schema_is_generated_from_the_schemes():
    """$defs.biased_fl_curve comes from the schemes' own parameter declarations, and offers
    exactly the wing's scheme kinds."""
    from airfl.papers.biased_fl import WING
    from airfl.papers.biased_fl.schemes.params import PARAMS_SCHEMA, curve_schema
    from airfl.pipeline.params import params_schema

    assert params_schema()["$defs"]["biased_fl_curve"] == curve_schema()
    assert sorted(curve_schema()["properties"]["scheme"]["enum"]) == sorted(PARAMS_SCHEMA) \
        == sorted(WING.schemes)
