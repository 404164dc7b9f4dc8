"""LAPA's run blocks (run_blocks.py): the catalogue block, precision and the Fig. 6 and Fig. 7
curves, and the schemes' lam from the local-work settings."""

from __future__ import annotations

import pytest

from airfl.papers.lapa import mechanism as mech
from airfl.papers.lapa.run_blocks import CNN_DIMS, compose, compose_fmnist
from airfl.pipeline.registry import build_scheme


K, DIM, ROUNDS = 15, 64, 6


def test_catalogue_block(params):
    block = compose(params)
    curves = block["curves"]
    fig4 = [c for c, p in curves.items() if p["in_fig4"]]
    fig5 = [c for c, p in curves.items() if p["in_fig5"]]
    assert len(fig4) == 6 and "nodp" in fig5
    assert block["partition"]["kind"] == "mixed" and block["num_devices"] == 15
    fmnist = compose_fmnist(params)
    assert fmnist["dataset"] == "fashion_mnist" and sorted(fmnist["curves"]) == sorted(fig4)
    assert fmnist["training"]["lr"] == params["lapa"]["training"]["fmnist_lr"]["quick"]
    from airfl.models.flat import build_model
    for name, dim in CNN_DIMS.items():             # the paper's CNN (BatchNorm) and without it
        assert build_model(name, (1, 28, 28), 10).dim == dim
    assert block["model"]["name"] == "cnn_mnist_bn" and block["partition_per"] == "trial"
    nu4 = block["curves"]["lapa_nu4"]              # Fig. 5's x: (nu C)^2 / q of the paper's CNN
    assert nu4["sigma_init2"] == round((4 * nu4["clip"]) ** 2 / 21880, 9)
    assert mech.gaussian_constant(block["curves"]["nodp"]["delta"]) > 0


def test_precision_and_the_fig6_and_fig7_curves_of_the_catalogue(params):
    """`lapa.training.precision` reaches the model block (fp32 default);
    Fig. 6 panels keep the four strategies at nu = 4 with their own IID count (our reading);
    Fig. 7's three curves run over the practical channel, LAPA's with switching at p_bar."""
    from airfl.papers.lapa.run_blocks import compose_mix

    assert compose(params)["model"]["precision"] == "fp32"
    bf16 = {**params, "lapa": {**params["lapa"], "training": {**params["lapa"]["training"],
                                                              "precision": "bf16"}}}
    assert compose(bf16)["model"]["precision"] == "bf16"
    for n in (0, 15):
        block = compose_mix(n)(params)
        assert block["partition"]["num_iid"] == n
        assert sorted(block["curves"]) == sorted(["nodp", "lapa_nu4", "uniform_nu4", "arb_nu4"])
    curves = compose(params)["curves"]
    control = params["lapa"]["control"]
    p_bar = (control["p_min_w"] + control["p_max_w"]) / (2 * K)
    assert curves["lapa_avgp"]["power_w"] == pytest.approx(0.55) == p_bar
    assert curves["config5"]["switching"] and not curves["arb_avgp"].get("switching")
    assert all(curves[c]["channel"] == "practical" for c in ("config5", "lapa_avgp", "arb_avgp"))


def test_lam_comes_from_the_local_work_settings(params):
    """The scheme's lam (eq. 18's sensitivity, eq. 3's step) is the step size the clients
    train with (`training.lr`), given by build_scheme; no curve carries a copy, one that does
    stops naming the key, and the figure still tabulates it as `param_lr` after `scheme`."""
    from airfl.pipeline.registry import with_local_lr

    for block in (compose(params), compose_fmnist(params)):
        lam = block["training"]["lr"]
        for name, curve in block["curves"].items():
            assert "lr" not in curve
            assert build_scheme(name, curve, lam).lr == lam
            assert list(with_local_lr(curve, lam))[:2] == ["scheme", "lr"]
    curve = compose(params)["curves"]["nodp"]
    with pytest.raises(ValueError, match=r"curves\.c\.lr"):
        build_scheme("c", {**curve, "lr": 0.05}, 0.05)
    with pytest.raises(ValueError, match=r"training\.lr"):
        build_scheme("c", curve)
