"""AirFL-DP's receive combiners (beamforming.py, problem (P1), Remark IV.2 (50)): zero-forcing
is interference-free and tight, needs M >= K, the phase-optimised combiner is never worse, the
solvers against the SDR lower bound, SCA never increases the norm of its start."""

from __future__ import annotations

import math

import pytest
import torch

from airfl.papers.dp_perk import beamforming as bf


torch.set_num_threads(1)


def _channels(seed: int, *shape: int, spread_db: float = 0.0) -> torch.Tensor:
    """CN(0, 1) entries [..., m, K], columns scaled by a random path loss of up to spread_db."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(*shape, 2, generator=g, dtype=torch.float64)
    h = torch.complex(z[..., 0], z[..., 1]) / math.sqrt(2.0)
    loss = 10 ** (-spread_db / 20 * torch.rand(*shape[:-2], 1, shape[-1], generator=g,
                                               dtype=torch.float64))
    return h * loss


def _inner(w: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
    """w^H h_i for every column: [..., K]."""
    return (w.conj().unsqueeze(-2) @ H).squeeze(-2)


def _norm2(w: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(w, dim=-1) ** 2


# ------------------------------------------------------------------------------------------
# Channel plan


# ------------------------------------------------------------------------------------------
# (P1) combiners
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("m, k", [(8, 5), (6, 6), (20, 12)])
def test_zf_is_interference_free_and_tight(m, k):
    H = _channels(m * k, 4, m, k, spread_db=40.0)
    W = bf.zf_matrix(H)
    eye = torch.eye(k, dtype=H.dtype).expand(4, -1, -1)
    assert float((W.mH @ H - eye).abs().max()) < 1e-10           # diagonal: W^H H = I
    w = bf.zf_beamformer(H, 2.5)
    inner = _inner(w, H)
    torch.testing.assert_close(inner, torch.full_like(inner, 2.5), rtol=1e-10, atol=0)
    assert float(inner.abs().min()) == pytest.approx(2.5, rel=1e-10)  # Lemma IV.2


def test_zf_needs_m_at_least_k_and_the_general_solver_takes_over():
    H = _channels(1, 4, 6)
    with pytest.raises(ValueError, match="num_antennas"):
        bf.zf_beamformer(H, 1.0)
    w, used = bf.solve_p1(H, 1.0, "zf")
    assert used == "sca" and float(_inner(w, H).abs().min()) >= 1.0 - 1e-9


def test_phase_optimised_combiner_is_never_worse_than_zf():
    for m, k, spread in [(8, 5, 0.0), (10, 10, 30.0), (30, 14, 60.0), (100, 45, 0.0)]:
        H = _channels(7 * m + k, 3, m, k, spread_db=spread)
        zf, opt = bf.zf_beamformer(H, 1.7), bf.zf_opt_beamformer(H, 1.7)
        assert bool((_norm2(opt) <= _norm2(zf) * (1 + 1e-12)).all())
        assert float(_inner(opt, H).abs().min()) >= 1.7 * (1 - 1e-12)
    # at paper scale (m = 100, K = 45) the gain is several dB (our measurement: 5-6 dB)
    gain_db = 10 * torch.log10(_norm2(zf) / _norm2(opt))
    assert bool((gain_db > 3.0).all())


def test_solvers_against_the_sdr_lower_bound():
    """tr(W*) of the relaxation bounds (P1) from below; every solver is feasible and above it."""
    g = torch.Generator().manual_seed(0)
    for m, k in [(6, 4), (4, 6)]:
        H = _channels(10 * m + k, 2, m, k, spread_db=20.0)
        w_sdr, bound = bf.sdr_beamformer(H, 1.0, g, randomisations=100)
        candidates = [w_sdr, bf.sca_beamformer(H, 1.0)]
        if m >= k:
            candidates += [bf.zf_beamformer(H, 1.0), bf.zf_opt_beamformer(H, 1.0)]
        for w in candidates:
            assert float(_inner(w, H).abs().min()) >= 1.0 - 1e-9
            assert bool((_norm2(w) >= bound * (1 - 1e-6)).all())


def test_sca_never_increases_the_norm_of_its_start():
    H = _channels(5, 2, 10, 7)
    start = bf.zf_beamformer(H, 1.0)
    refined = bf.sca_beamformer(H, 1.0, w_init=start)
    assert bool((_norm2(refined) <= _norm2(start) * (1 + 1e-9)).all())


# ------------------------------------------------------------------------------------------
# Transmit scaling and the effective noise
