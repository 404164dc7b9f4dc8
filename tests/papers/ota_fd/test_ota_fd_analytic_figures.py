"""OTA-FD's analytic figures (analytic_figures.py): X6's closed-form frames (Prop. 2's round
count, the noise level nu, the DP-limited share, the channel uses) and the claims they decide."""

import numpy as np
import pytest

from airfl.papers.ota_fd import analytic_figures as an

BLOCK = dict(num_devices=10, K=10, dominant=1110, minor=10, power=1.0, snr_db=10.0, delta=1e-8,
             sensitivity_mode="paper", fading_quantile=0.5, eta0=1.0, gamma=1.0, L1=1.0,
             L2=1.0, fmax=2.3, T_max=20000, eps_grid=[0.01, 0.1, 1.0], nu_eps=[0.1, 1.0])


def test_split_counts_is_the_stated_mnist_split():
    counts = an.split_counts(10, 10, 1110, 10)
    assert (counts.sum(axis=1) == 1200).all() and (counts.sum(axis=0) == 1200).all()
    assert (np.diag(counts) == 1110).all()


def test_rounds_frame_closed_form_and_argmin_agree():
    wide = an.rounds_frame(BLOCK)
    assert (abs(wide["T_argmin"] - wide["T_closed"]) <= 1).all()
    assert wide["T_hat"].iloc[2] / wide["T_hat"].iloc[1] == pytest.approx(100.0)
    verdicts = {claim: holds for claim, _, _, holds in an.check_rounds(wide)}
    assert all(verdicts.values())


def test_noise_frame_is_flat_then_linear_in_T():
    wide = an.noise_frame(BLOCK)
    assert {c[0]: c[3] for c in an.check_noise(wide)} == {"x6_nu_vs_T": True}
    one_eps = wide[wide["eps"] == 1.0]
    assert one_eps["case2_fraction"].iloc[0] == 0.0 and one_eps["case2_fraction"].iloc[-1] == 1.0


def test_communication_ratio_uses_the_model_sizes():
    wide = an.communication_frame(BLOCK)
    per = wide.drop_duplicates("scheme").set_index("scheme")["per_round"]
    assert per["OTA-FL, CNN (D)"] == 21_680 and per["OTA-FD (K²)"] == 100
    assert an.check_communication(wide)[0][3]


def test_case_map_plateaus_once_dp_limited():
    block = {**BLOCK, "seed": 0, "draws": 50, "snr_grid": [0.0, 10.0, 30.0, 50.0], "case_T": 200}
    wide = an.case_frame(block)
    assert an.check_cases(wide)[0][3]
    strict = wide[wide["eps"] == 0.1]
    assert strict["case2_fraction"].iloc[-1] == 1.0          # DP-limited at high SNR
    again = an.case_frame(block)                             # seeded draws: reproducible
    assert again.equals(wide)


def test_closed_form_rounds_is_the_rounds_frames_T_closed():
    """X4's T* marker is X6's max(T_0, a/b) (our reading of (P3.1)-(P3.2)) at the same eps."""
    wide = an.rounds_frame(BLOCK)
    for eps, T in zip(wide["eps"], wide["T_closed"]):
        assert an.closed_form_rounds(BLOCK, eps) == T
