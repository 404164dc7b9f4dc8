"""Shared helper of the CDPB tests (not collected by pytest; the cdpb test files
import it by module name, since tests/ is not a package)."""

from __future__ import annotations


def assert_printed(ours: float, printed: str) -> None:
    """ours agrees with a printed reference value to every printed digit: |ours - printed| <= half
    a unit in the last printed digit (mantissa digits and exponent of e.g. "8.995e-4" count).
    At least as strict as a 1e-4 relative tolerance for its 5+ digit values."""
    mantissa, _, exponent = printed.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    half_unit = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
    assert abs(ours - float(printed)) <= half_unit * (1 + 1e-9), (ours, printed)
