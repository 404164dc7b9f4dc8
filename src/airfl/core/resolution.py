"""The numerical resolution of a compared value: how close two stored results may be and still
be called the same by rounding (`RELATIVE_RESOLUTION`), and the finest step of a measured
metric (`resolution`). The claims (`airfl.core.claims`) call a paired difference below either
"equivalent (below numerical resolution)" rather than a win or a reversal.
"""

from __future__ import annotations

import math

import numpy as np

NUMERICAL_DTYPE = np.float32
RELATIVE_RESOLUTION = math.sqrt(float(np.finfo(NUMERICAL_DTYPE).eps))     # 2^-11.5 = 3.45e-4
"""The numerical resolution of a compared value, relative to its size (fixed from the
arithmetic before any claim was re-run).

Every metric a claim compares comes out of float32 arithmetic: the models' parameters,
activations and losses are float32 (the objective F is a float32 per-sample loss summed per
client, then averaged in float64; accuracies count argmaxes of float32 logits). Each value ends a
run of T rounds whose summation order is an implementation detail (lockstep or one run at a
time, thread count, kernel choice). Reordering a float32 sum of n terms moves it by up to
gamma_{n-1} sum |x_i|, gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., ch. 4); for the longest reduction of a round (the softmax model's
dot products over d = 785 inputs) n u = 4.7e-5 per round, and a trajectory carries such
perturbations from round to round. We take r = sqrt(eps_float32) = 2^-11.5: half of float32's
significand, ~7x the one-round bound as room for the T rounds (the usual attainable accuracy of
an iterative floating-point result). A reordering is the same code path in every trial, so it
moves every trial alike and the paired spread over trials does not see it: a t interval alone
can call pure rounding a significant difference (Biased FL Fig. 3(a) at 60 dB: +2.95e-08 +-
1.46e-08 on gaps of 0.002654 read as a reversal when the lockstep changed the order).

Rule: a paired difference whose whole interval lies within ±r * scale, scale = the larger
|mean| of the two curves over the paired trials, is "equivalent (below numerical resolution)",
whatever the interval says on its own (it may exclude 0: rounding moves every trial alike). For a sub-optimality gap the rounding is relative to F, not to the gap, so the gap as
the scale is conservative (a smaller floor than the rounding of F). For an accuracy of 90 % the
floor is 0.031 pp, below one test image of 2,000 (0.05 pp)."""


def resolution(values: np.ndarray) -> float:
    """The finest step between distinct measured values (0 if all are equal). A metric measured
    on a finite test set moves in steps (accuracy on 2,000 images: 0.05 pp), so a few trials can
    show the same difference exactly, a zero sample spread; that zero is the resolution of the
    measurement, not certainty. Continuous metrics (gaps, losses) have a negligible step."""
    distinct = np.unique(values[np.isfinite(values)])
    return float(np.min(np.diff(distinct))) if len(distinct) > 1 else 0.0
