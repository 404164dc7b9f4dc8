"""The no-transmission guard for every scheme whose design fixes who transmits (used by the
Biased FL designs; the tune stage's parameter search records a NoTransmissionError candidate as
infeasible instead of failing).

A design that leaves (almost) no device transmitting does not train: the estimate is 0 (or pure
noise) in nearly every round and the model stays at w_0 (at the literal SNR, LCPC OTA-Comp's
fading-averaged MSE rule gives a gap of exactly F(0) - F* = 1.8531). Such a design stops with
NoTransmissionError instead of running silently.

"Almost no" (our reading): the design's expected number of device updates that reach the PS per
round is below MIN_EXPECTED_PARTICIPANTS = 0.1, i.e. on average fewer than one received update
every ten rounds (50 of the 500 OTA rounds of Fig. 2). The threshold is fixed in code, not a knob:
it is a sanity bound far below every design that trains in the paper's figures, so it never decides
a comparison between designs that transmit.
"""

from __future__ import annotations

MIN_EXPECTED_PARTICIPANTS = 0.1

__all__ = ["MIN_EXPECTED_PARTICIPANTS", "NoTransmissionError", "require_participation"]


class NoTransmissionError(ValueError):
    """A scheme's design leaves (almost) no device transmitting, so the model would not train."""


def require_participation(scheme: str, expected: float, quantity: str, remedy: str) -> float:
    """Return `expected` (updates received per round) or raise NoTransmissionError naming the
    scheme, the design quantity that caused it and what to change."""
    if not expected >= MIN_EXPECTED_PARTICIPANTS:          # also catches NaN
        raise NoTransmissionError(
            f"scheme {scheme!r}: its design leaves almost no device transmitting: expected "
            f"{expected:.3g} received updates per round (< {MIN_EXPECTED_PARTICIPANTS}), so the "
            f"model would not train. Cause: {quantity}. To change: {remedy}")
    return float(expected)
