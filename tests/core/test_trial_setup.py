"""The parts of a trial's set-up (airfl.core.trial_setup): the server's projection is Biased FL's
P_W (eq. 3), a wrong upload kind stops naming its key, and the loop's server step is
w + lr_s Delta (delta upload) or P_W(w - lr_s g) (gradient upload, Biased FL eq. 18)."""

from __future__ import annotations

import pytest
import torch

from airfl.core.engine import ClientData
from airfl.core.loop import LocalWork, ServerStep, TrialSetup, server_step
from airfl.core.scheme import ChannelStatistics
from airfl.models.flat import SoftmaxRegression


def test_projection_is_the_euclidean_projection_onto_the_ball():
    """P_W(v) = v min(1, rho/||v||) (Biased FL eq. 3): lands in W, keeps points of W, and is the
    nearest point of W (<v - P(v), w - P(v)> <= 0 for every w in W)."""
    g = torch.Generator().manual_seed(4)
    step = ServerStep(0.5, projection_radius=2.0)
    for _ in range(20):
        v = torch.randn(9, generator=g, dtype=torch.float64) * 3
        p = step.project(v)
        assert float(torch.linalg.vector_norm(p)) <= 2.0 * (1 + 1e-12)
        if float(torch.linalg.vector_norm(v)) <= 2.0:
            assert torch.equal(p, v)
        w = torch.randn(50, 9, generator=g, dtype=torch.float64)
        w = w * (2.0 * torch.rand(50, 1, generator=g, dtype=torch.float64)
                 / torch.linalg.vector_norm(w, dim=1, keepdim=True))   # points of W
        assert ((w - p) @ (v - p) <= 1e-9).all()
    v = torch.full((4,), 10.0, dtype=torch.float64)
    assert torch.equal(ServerStep(0.5).project(v), v)                  # no radius: identity


def test_a_wrong_upload_kind_stops_naming_the_key():
    with pytest.raises(ValueError, match=r"training\.upload.*delta.*gradient"):
        LocalWork(1, 1, 0.1, upload="weights")


def _setup(upload: str, radius: float | None) -> TrialSetup:
    x = torch.randn(8, 3, generator=torch.Generator().manual_seed(1))
    data = ClientData(x, torch.zeros(8, dtype=torch.long), torch.arange(8),
                      torch.tensor([0, 4, 8]), torch.tensor([4, 4]))
    stats = ChannelStatistics(torch.ones(2, dtype=torch.float64), 1.0, 1e6, torch.ones(2))
    return TrialSetup("test/parts", 0, 0, SoftmaxRegression(3, 2), data, (x, data.y),
                      (x, data.y), stats, 1, 1, LocalWork(1, 4, 0.1, upload=upload),
                      ServerStep(0.5, projection_radius=radius))


def test_server_step_adds_deltas_and_descends_projected_on_gradients():
    w = torch.tensor([3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    u = torch.tensor([2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert torch.equal(server_step(_setup("delta", None), w, u), w + 0.5 * u)
    descended = server_step(_setup("gradient", None), w, u)              # w - lr_s g
    assert torch.equal(descended, torch.tensor([2.0, 4.0, 0, 0, 0, 0, 0, 0]))
    projected = server_step(_setup("gradient", 2.0), w, u)               # eq. 18: P_W(w - lr_s g)
    assert torch.allclose(projected, descended * (2.0 / float(torch.linalg.vector_norm(descended))))
