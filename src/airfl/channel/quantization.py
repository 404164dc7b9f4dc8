"""Dithered stochastic uniform quantizer and its payload (paper eq. 14).

Per row x (one device's update): ``s = ||x||_inf``, ``u = x/s`` in [-1, 1]; the r-bit grid is
``l_k = -1 + k Delta``, k = 0..2^r - 1, ``Delta = 2/(2^r - 1)``; each entry rounds up to ``l_{k+1}`` with
probability ``(u - l_k)/Delta`` and down otherwise (stochastic rounding), and the receiver
reconstructs ``s q``. The result is unbiased with ``var <= d ||x||_inf^2 / (2^r - 1)^2`` per row.
Rows may have different bit widths; everything is vectorised over rows (no Python loop).
"""

from __future__ import annotations

import numpy as np
import torch


__all__ = ["grid_indices", "stochastic_quantize", "quantization_variance_bound", "payload_bits"]

_MAX_BITS = 52  # the grid must be representable in float64


def _bits_tensor(bits, batch_shape: torch.Size) -> torch.Tensor:
    """Integer bit widths broadcast to the row shape, validated to 1.._MAX_BITS, as float64."""
    b = torch.as_tensor(bits)
    if b.dtype == torch.bool or b.is_complex():
        raise ValueError("bits must be integers")
    if b.is_floating_point() and not torch.equal(b, torch.round(b)):
        raise ValueError("bits must be integers")
    b = b.to(torch.float64)
    if (b < 1).any() or (b > _MAX_BITS).any():
        raise ValueError(f"bits must lie in 1..{_MAX_BITS}")
    try:
        return torch.broadcast_to(b, batch_shape)
    except RuntimeError as exc:
        raise ValueError(f"bits of shape {tuple(b.shape)} do not match rows {tuple(batch_shape)}") from exc


def _levels(bits: torch.Tensor) -> torch.Tensor:
    """Number of grid intervals ``2^r - 1``."""
    return torch.exp2(bits) - 1.0


def stochastic_quantize(x, bits, generator: torch.Generator | None,
                        rows: torch.Tensor | None = None,
                        noise: torch.Tensor | None = None) -> torch.Tensor:
    """Quantize each row of ``x[..., d]`` with ``bits`` (int or integer tensor of row shape ``[...]``).

    Returns ``x_hat`` with the dtype of ``x`` (float64 for non-float input). Zero rows stay zero.
    Draw order: one ``torch.rand(x.shape)`` in float64, consumed even for zero rows, so the generator
    advances by the same amount whatever the data.

    ``rows`` (bool mask of the row shape, optional): only those rows are quantized and the others
    are returned as 0; the full ``torch.rand(x.shape)`` is still drawn and row m still uses its own
    row of it, so a selected row's bits equal those of the full call (every step is per row or per
    entry). Schemes whose receiver discards most rows (Biased FL's threshold participation, ~1 of
    10 devices at the literal SNR) skip the work on the discarded ones.

    ``noise`` (optional, float64 of ``x.shape``, read only): the uniform draws themselves, as
    ``torch.rand(x.shape, generator=generator)`` gives them (e.g. ``RoundStreams.first_uniform``,
    shared by the runs of one trial); ``generator`` is then not used.
    """
    xt = torch.as_tensor(x)
    out_dtype = xt.dtype if xt.is_floating_point() else torch.float64
    xt = xt.to(torch.float64)
    if xt.ndim < 1:
        raise ValueError("x must have shape [..., d]")
    bits_rows = _bits_tensor(bits, xt.shape[:-1])
    if noise is None:
        noise = torch.rand(xt.shape, generator=generator, dtype=torch.float64)
    elif noise.shape != xt.shape or noise.dtype != torch.float64:
        raise ValueError(f"noise must be float64 of shape {tuple(xt.shape)}, got "
                         f"{noise.dtype} {tuple(noise.shape)}")
    if rows is None:
        return _quantize_rows(xt, bits_rows, noise).to(out_dtype)
    rows = torch.as_tensor(rows, dtype=torch.bool, device=xt.device)
    if rows.shape != xt.shape[:-1]:
        raise ValueError(f"rows of shape {tuple(rows.shape)} do not match rows {tuple(xt.shape[:-1])}")
    if not torch.isfinite(xt.abs().amax(dim=-1)).all():       # as the full call: every row
        raise ValueError("x must be finite")
    out = torch.zeros_like(xt)
    out[rows] = _quantize_rows(xt[rows], bits_rows[rows], noise[rows])
    return out.to(out_dtype)


def _quantize_rows(xt: torch.Tensor, bits: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The quantizer of the module docstring on float64 rows xt [..., d] with uniform draws noise."""
    levels = _levels(bits).unsqueeze(-1)          # 2^r - 1, [..., 1]
    scale = xt.abs().amax(dim=-1, keepdim=True)  # s = ||x||_inf (biased_fl §2.6 step 1)
    if not torch.isfinite(scale).all():          # amax propagates NaN and inf
        raise ValueError("x must be finite")
    k = grid_indices(xt, scale, levels, noise)
    q = k.mul_(2.0 / levels).sub_(1.0)           # l_k = -1 + k Delta, Delta = 2/(2^r - 1)
    return q.mul_(scale)  # reconstruction g^q = s q; s = 0 gives 0


def grid_indices(x: torch.Tensor, scale: torch.Tensor, levels: torch.Tensor,
                 noise: torch.Tensor) -> torch.Tensor:
    """The grid index k in {0, ..., 2^r - 1} each entry of rows x [..., d] rounds to (float64, a
    new tensor), given s = ||x||_inf [..., 1] (float64), 2^r - 1 [..., 1] and the uniforms
    noise [..., d]; x may be float32 (converted exactly). Q(x) = s (-1 + 2k/(2^r - 1)).

    With pos = (x/s + 1)(2^r - 1)/2 = k_low + f (f in [0, 1)): k = k_low + 1 exactly when U < f,
    i.e. k = ceil(pos - U) (stochastic rounding, P(up) = f: Biased FL eq. 14's unbiased quantizer).
    Evaluated in this order pos stays in [0, 2^r - 1] in floats too (|x/s| <= 1 and each step
    rounds monotonically), so k needs no clamp. Five in-place passes over the rows (the digital
    tune jobs quantize ~1e9 entries)."""
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    pos = x.to(torch.float64, copy=True).div_(safe).add_(1.0).mul_(levels / 2.0)
    return pos.sub_(noise).ceil_()


def quantization_variance_bound(x, bits) -> torch.Tensor:
    """Per-row bound ``E||x_hat - x||^2 <= d ||x||_inf^2 / (2^r - 1)^2`` (biased_fl eq. 14), shape ``[...]``."""
    xt = torch.as_tensor(x, dtype=torch.float64)
    if xt.ndim < 1:
        raise ValueError("x must have shape [..., d]")
    levels = _levels(_bits_tensor(bits, xt.shape[:-1]))
    s = xt.abs().amax(dim=-1)
    return xt.shape[-1] * s ** 2 / levels ** 2  # biased_fl eq. 14: d ||g||_inf^2 / (2^r - 1)^2


def payload_bits(d: int, bits, header_bits: int = 64):
    """Upload size ``L = header + d r`` bits (biased_fl §2.6: 64 bits carry the norm s).

    Returns an ``int`` for integer ``bits``, an int64 tensor for tensor ``bits`` and an int64
    array for a numpy array of integer ``bits`` (the digital schemes' per-round plans).
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be a positive int; got {d!r}")
    if header_bits < 0:
        raise ValueError("header_bits must be >= 0")
    if isinstance(bits, np.ndarray):
        if bits.dtype.kind not in "iu" or (bits.size and not 1 <= bits.min() <= bits.max()
                                           <= _MAX_BITS):
            raise ValueError(f"bits must be integers in 1..{_MAX_BITS}")
        return header_bits + d * bits.astype(np.int64)  # biased_fl §2.6: L_m = 64 + d r_m
    if isinstance(bits, torch.Tensor):
        b = _bits_tensor(bits, bits.shape).to(torch.int64)
        return header_bits + d * b  # biased_fl §2.6: L_m = 64 + d r_m
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= _MAX_BITS:
        raise ValueError(f"bits must be an int in 1..{_MAX_BITS}; got {bits!r}")
    return header_bits + d * bits  # biased_fl §2.6: L_m = 64 + d r_m
