"""SplitMix64 float64 uniforms, compiled: the quantizer's [N, d] block of a round
(`airfl.runtime.rng.RoundStreams.uniform_block`).

SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
the generator of Java's SplittableRandom, and the one that seeds xoshiro) is a Weyl sequence
state_i = seed + i * 0x9E3779B97F4A7C15 (mod 2^64), i = 1, 2, ..., passed through a 64-bit
mixing function; its output passes BigCrush. Uniform i of a block is its i-th output's top 53
bits times 2^-53 (in [0, 1), the float64 grid numpy and torch use), row-major: row m of an
[N, d] block is outputs m d + 1 .. m d + d, so a client's uniforms are fixed by the seed and
its position.

Why: every round of every Biased FL digital run quantizes with
such a block; numpy's PCG64 drew a [10, 7850] block in ~132 us, this loop in ~12 us
(benchmarks/README.md), since each output is a few integer operations with no carried state
besides the counter, which the compiler vectorises. Unsigned 64-bit arithmetic wraps, as the
algorithm needs; every constant is typed uint64 (numba turns uint64 mixed with int64 into
float64). Compiled on first use and cached next to this file; no fast-math, so the same seed
gives the same bits on every run and machine.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["splitmix64_uniforms"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)      # the golden-ratio increment of the Weyl sequence
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)       # SplitMix64's finaliser (Stafford's variant 13)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIT = 2.0 ** -53


@numba.njit(cache=True, nogil=True)
def _fill(seed, out):  # pragma: no cover
    """out[i] = SplitMix64 output i + 1 of `seed`, its top 53 bits times 2^-53 (out 1-d)."""
    for i in range(out.shape[0]):
        z = seed + np.uint64(i + 1) * _GAMMA
        z = (z ^ (z >> _S30)) * _MIX1
        z = (z ^ (z >> _S27)) * _MIX2
        z = z ^ (z >> _S31)
        out[i] = np.float64(z >> _S11) * _UNIT


def splitmix64_uniforms(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """float64 uniforms on [0, 1) [shape], the first prod(shape) outputs of SplitMix64 seeded
    with `seed` (0 <= seed < 2^64), row-major."""
    if not 0 <= int(seed) < 2 ** 64:
        raise ValueError(f"seed must be in [0, 2^64); got {seed}")
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.float64)
    _fill(np.uint64(seed), out)
    return out.reshape(shape)
