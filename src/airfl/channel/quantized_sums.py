"""A fused loop for the digital schemes' aggregation: each run's sum_m w_m Q(g_m) in one pass over
its rows instead of one torch pass per arithmetic step (numba).

Why: in a Biased FL digital tune job each round of each run
quantizes a few [d] rows (d = 7850) and sums them; in torch that is about ten elementwise passes
over float64 copies of the rows (grid indices, weights, sum), each its own kernel call, and it
was ~30 % of the job (benchmarks/digital_aggregation.py). A compiled loop reads each row and its
uniforms once, with the same float operations in the same order as
:func:`airfl.channel.quantization.grid_indices`, so a row's grid indices are bit-identical to the
torch quantizer's (tests/channel/test_quantized_sums.py); only the order of the sum over rows
may differ from torch's reduction (float reassociation).

The kernel is compiled on first use and cached next to this file (``cache=True``); it has no
parallel or fast-math options, so the same inputs give the same bits on every run.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

__all__ = ["quantized_weighted_sum"]


@numba.njit(cache=True, nogil=True)
def _quantized_weighted_sum(x, noise, used, bits, weights, scale, out):  # pragma: no cover
    """out[t] = sum_{m used} c_m k_m[t] - sum_{m used} w_m s_m (see quantized_weighted_sum)."""
    d = out.shape[0]
    for t in range(d):
        out[t] = 0.0
    offset = 0.0
    for m in range(used.shape[0]):
        if not used[m]:
            continue
        s = scale[m]
        safe = s if s > 0.0 else 1.0
        levels = np.ldexp(1.0, bits[m]) - 1.0                 # 2^r - 1 (exact)
        half = levels / 2.0
        ws = weights[m] * s                                   # w_m s_m
        coefficient = ws * (2.0 / levels)                     # c_m = 2 w_m s_m/(2^r - 1)
        offset += ws
        row, uniforms = x[m], noise[m]
        for t in range(d):       # k = ceil((x/s + 1)(2^r - 1)/2 - U): grid_indices' operations
            out[t] += coefficient * np.ceil((np.float64(row[t]) / safe + 1.0) * half - uniforms[t])
    for t in range(d):
        out[t] -= offset


def quantized_weighted_sum(x: torch.Tensor, noise: torch.Tensor, used, bits, weights, scale
                           ) -> torch.Tensor:
    """sum_{m used} w_m Q(g_m) [d] float64 for the rows x [N, d] (float32 or float64), the
    quantizer's uniforms noise [N, d] (float64), used [N] bool, bits r_m [N] int64, weights w_m
    [N] float64 and scale s_m = ||g_m||_inf [N] float64 (Q(g_m) =
    s_m (2 k_m/(2^r_m - 1) - 1), k_m = ceil((g/s + 1)(2^r - 1)/2 - U), i.e. stochastic rounding
    up with probability equal to the fraction), as sum_m c_m k_m - sum_m w_m s_m with
    c_m = 2 w_m s_m/(2^r_m - 1): no quantized copy of a row is made. Rows not used are not read.
    The [N] inputs may be tensors or numpy arrays (the digital schemes plan in numpy)."""
    out = np.empty(x.shape[-1], dtype=np.float64)
    _quantized_weighted_sum(x.numpy(), noise.numpy(), _array(used), _array(bits),
                            _array(weights), _array(scale), out)
    return torch.from_numpy(out)


def _array(values) -> np.ndarray:
    return values.numpy() if isinstance(values, torch.Tensor) else values

