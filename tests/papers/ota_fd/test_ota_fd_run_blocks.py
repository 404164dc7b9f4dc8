"""OTA-FD's run blocks (run_blocks.py): every experiment block inherits X1's setting and scales
its budgets."""

import numpy as np
import pytest


def test_experiment_blocks_inherit_x1_and_scale_budgets():
    """X3-X7 take X1's setting; quick budgets are noise-equivalent (eps / s sqrt(T / T_full))
    except fixed-T curves (eps / s, literal T); X4's curves carry Prop. 2's T*; X2 substitutes
    an offline dataset for CIFAR-10 and says so."""
    import yaml

    from airfl.papers.ota_fd import run_blocks as setup

    params = yaml.safe_load(open("params.yaml"))
    params["profile"] = "quick"
    x1, x3, x4 = (setup.block_of(params, k) for k in ("x1", "x3", "x4"))
    assert x3["partition"] == x1["partition"] and x3["model"] == x1["model"]
    s, T, T_full = 0.2, 30, 200
    assert x3["curves"]["otafd_prop_e0p1"]["eps"] == pytest.approx(0.1 / s * np.sqrt(T / T_full))
    fixed = x4["curves"]["otafd_fixedt_e0p1_t10"]
    assert fixed["T"] == 10 and fixed["eps"] == pytest.approx(0.1 / s) and fixed["T_star"] >= 1
    assert x1["curves"]["otafl_dp"]["eps_uniform"] == [1e6, 1e7]
    params["data"]["mirror"] = "/nonexistent"
    params["data"]["root"] = "/nonexistent"
    x2 = setup.block_of(params, "x2")
    assert x2["substituted_for"] == "cifar10 / resnet18_bn" and x2["dataset"] == "fashion_mnist"
