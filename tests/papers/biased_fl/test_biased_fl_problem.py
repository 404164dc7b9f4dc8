"""Biased FL problem: the exact optimum and data constants on real MNIST, and the
panel composition that feeds the generic stages."""

from __future__ import annotations

import numpy as np
import pytest

from airfl.papers.biased_fl.problem import (accuracy, build_problem, constants, global_objective,
                                            solve_optimum)


@pytest.fixture(scope="module")
def solved(mnist_mirror):
    from airfl.data import load_dataset
    from airfl.data.partitioners import make_partition

    x, y = load_dataset("mnist", mnist_mirror, "train")
    xt, yt = load_dataset("mnist", mnist_mirror, "test")
    part = make_partition("per_class_one_class", y, 10, np.random.default_rng(0), per_class=100)
    problem = build_problem(x, y, part.indices, 10, 0.01)
    return problem, solve_optimum(problem), xt, yt, part


def test_device_m_holds_the_first_100_images_of_class_m(solved):
    problem, _, _, _, part = solved
    assert [int(np.unique(ys)[0]) for ys in problem.y] == list(range(10))
    assert all(len(ys) == 100 for ys in problem.y)


def test_optimum_matches_the_reference_values(solved):
    """F(w*) = 0.4495 and test acc(w*) = 0.8673; kappa_true = 1.264,
    rho_W ~ 794, ||grad f_m(0)|| in [5.29, 7.94]."""
    problem, w_star, xt, yt, _ = solved
    value, grad = global_objective(problem, w_star)
    assert np.linalg.norm(grad) < 1e-8
    c = constants(problem, w_star)
    assert value == pytest.approx(0.4495, abs=5e-5)
    assert accuracy(w_star, xt, yt, 10) == pytest.approx(0.8673, abs=5e-5)
    assert c["kappa_true"] == pytest.approx(1.264, abs=1e-3)
    assert c["projection_radius"] == pytest.approx(794.4, abs=0.1)
    assert min(c["grad_norm_at_zero"]) == pytest.approx(5.29, abs=0.01)
    assert c["eta_max"] == pytest.approx(2 / (0.01 + max(c["L_per_device"])))


def test_objective_gradient_matches_finite_differences(solved):
    problem, w_star, *_ = solved
    rng = np.random.default_rng(1)
    w = w_star + 0.01 * rng.standard_normal(problem.dim)
    v = rng.standard_normal(problem.dim)
    h = 1e-6
    numeric = (global_objective(problem, w + h * v)[0] - global_objective(problem, w - h * v)[0]) / (2 * h)
    assert numeric == pytest.approx(global_objective(problem, w)[1] @ v, rel=1e-6)


def test_panels_compose_into_generic_blocks(repo_root):
    import yaml

    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import get_experiment

    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    block = get_experiment("biased_fl/fig2b").params(params)
    assert block["training"] == {"upload": "gradient", "full_batch": True, "local_steps": 1,
                                 "batch_size": 100, "lr": 0.0, "server_lr": 0.05}
    proposed = block["curves"]["proposed"]
    assert proposed["G"] == 5.0 and proposed["mu"] == 0.01 and proposed["kappa"] == 0.01
    assert "radius_m" in block["curves"]["bbfl_interior"]
    assert "eta" not in block["curves"]["vanilla_ota_fl"]      # only keys a scheme accepts
    sens = get_experiment("biased_fl/snr_sensitivity_ota").params(params)
    assert sens["curves"]["ota_nv_60db"]["snr_offset_db"] == 60.0


def test_snr_offset_scales_the_symbol_energy():
    from airfl.pipeline.trial import radio_units

    channel = {"power_dbm": 0.0, "bandwidth_hz": 1e6, "n0_dbm_per_hz": -161.0, "snr_offset_db": 0.0}
    es, n0 = radio_units(channel)
    assert es == pytest.approx(1e-9) and n0 == pytest.approx(7.943e-20, rel=1e-3)
    assert radio_units(channel, {"snr_offset_db": 30.0})[0] == pytest.approx(1e-6)


def test_biased_fl_curve_schema_is_generated_from_the_schemes():
    """$defs.biased_fl_curve comes from the schemes' own parameter declarations, and offers
    exactly the wing's scheme kinds."""
    from airfl.papers.biased_fl import WING
    from airfl.papers.biased_fl.schemes.params import PARAMS_SCHEMA, curve_schema
    from airfl.pipeline.params import params_schema

    assert params_schema()["$defs"]["biased_fl_curve"] == curve_schema()
    assert sorted(curve_schema()["properties"]["scheme"]["enum"]) == sorted(PARAMS_SCHEMA) \
        == sorted(WING.schemes)
