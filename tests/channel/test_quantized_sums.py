"""The fused quantized weighted sum (airfl.channel.quantized_sums) against the torch quantizer."""

import torch

from airfl.channel.quantization import grid_indices, stochastic_quantize
from airfl.channel.quantized_sums import quantized_weighted_sum

D = 257


def _rows(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, D, generator=g).to(dtype)
    x[1] = 0.0                                                   # s = 0: Q(g) = 0
    x[2, 7] = x[2].abs().max()                                   # an entry at +s ...
    x[3, 9] = -x[3].abs().max() * 2                              # ... and one at -s
    noise = torch.rand(5, D, generator=g, dtype=torch.float64)
    return x, noise


def test_one_row_gives_the_grid_indices_of_the_torch_quantizer_bit_for_bit():
    """With one used row the sum is c k - w s: k must be grid_indices' k exactly, for float32
    and float64 rows, bit widths 1 to 32 and the rows' edge entries (x = +-s, a zero row)."""
    for dtype in (torch.float32, torch.float64):
        x, noise = _rows(dtype)
        scale = torch.maximum(x.amax(-1), x.amin(-1).neg()).double()
        for m in range(5):
            for r in (1, 2, 8, 16, 32):
                used = torch.zeros(5, dtype=torch.bool)
                used[m] = True
                bits = torch.full((5,), r, dtype=torch.int64)
                weights = torch.full((5,), 0.75, dtype=torch.float64)
                got = quantized_weighted_sum(x, noise, used, bits, weights, scale)
                levels = torch.tensor([[2.0 ** r - 1.0]], dtype=torch.float64)
                s = scale[m:m + 1, None]
                k = grid_indices(x[m:m + 1], s, levels, noise[m:m + 1])[0]
                assert 0 <= k.min() and k.max() <= levels.item()
                ws = 0.75 * scale[m].item()
                assert torch.equal(got, k * (ws * (2.0 / levels[0, 0].item())) - ws)


def test_the_sum_is_the_weighted_sum_of_the_quantized_rows():
    """sum over the used rows of w_m Q(g_m) with Q = stochastic_quantize on the same uniforms;
    rows not used are not read (a NaN there changes nothing)."""
    x, noise = _rows(torch.float32)
    scale = x.abs().amax(-1).double()
    used = torch.tensor([True, True, False, True, True])
    bits = torch.tensor([1, 3, 8, 16, 4])
    weights = torch.tensor([0.5, 2.0, 9.0, 1.0, 0.1], dtype=torch.float64)
    q = stochastic_quantize(x.double(), bits, None, noise=noise)
    expected = (weights * used) @ q
    x[2] = float("nan")
    got = quantized_weighted_sum(x, noise, used, bits, weights, scale)
    assert got.dtype == torch.float64 and got.shape == (D,)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    assert torch.equal(got, quantized_weighted_sum(x, noise, used, bits, weights, scale))
