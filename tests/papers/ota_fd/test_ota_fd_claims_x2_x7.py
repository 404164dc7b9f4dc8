"""The claims of OTA-FD's X2-X5 and X7 and X1's FD-vs-FL claim (claims/x2_x7.py) on stored
figure data."""

import pandas as pd

from airfl.papers.ota_fd.claims import x2_x7 as cm


def _rows(curve, acc, uses_per_round=100, rounds=10, trials=1, **params):
    """One curve's rows; with several trials, trial i ends at acc + 0.001 * (-1)^i * i (a small
    spread that every curve shares, so paired differences are exact)."""
    out = []
    for trial in range(trials):
        for t in (0, rounds):
            final = acc + 0.001 * (-1) ** trial * trial
            row = {"curve": curve, "trial": trial, "round": t, "channel_uses": t * uses_per_round,
                   "test_accuracy": final if t else 0.1}
            row.update({f"param_{k}": v for k, v in params.items()})
            out.append(row)
    return out


def _wiggle(rows, sizes=(0.0, 0.002, -0.001)):
    """Per-trial offsets of one curve's final accuracy (a spread of the paired difference)."""
    return [{**r, "test_accuracy": r["test_accuracy"] + (sizes[r["trial"]] if r["round"] else 0)}
            for r in rows]


def test_competitive_uses_the_tolerance_and_reports_the_channel_use_ratio():
    frame = pd.DataFrame(_wiggle(_rows("fd_noiseless", 0.80, trials=3))
                         + _rows("fl_noiseless", 0.84, 21_680, trials=3))
    result = cm.competitive("fd_noiseless", "fl_noiseless")(frame)
    assert result.verdict == "holds" and "216.8x" in result.numbers
    frame = pd.DataFrame(_wiggle(_rows("fd_noiseless", 0.70, trials=3))
                         + _rows("fl_noiseless", 0.84, 21_680, trials=3))
    assert cm.competitive("fd_noiseless", "fl_noiseless")(frame).verdict == "contradicted"
    assert cm.competitive("fd_noiseless", "absent")(frame).verdict == "n/a"
    one = pd.DataFrame(_rows("fd_noiseless", 0.80) + _rows("fl_noiseless", 0.84, 21_680))
    assert cm.competitive("fd_noiseless", "fl_noiseless")(one).verdict == "inconclusive"


def test_optimal_T_needs_an_interior_best_T_that_grows_with_eps():
    def frame(accs, trials=2):
        rows = []
        for eps, per_T in accs.items():
            for T, acc in per_T.items():
                rows += _rows(f"otafd_fixedt_e{eps}_t{T}", acc, rounds=T, eps_full=eps, T=T,
                              T_star=50, trials=trials)
        return pd.DataFrame(rows)
    good = frame({0.1: {10: 0.5, 30: 0.6, 90: 0.55}, 1.0: {10: 0.5, 30: 0.6, 90: 0.7}})
    assert cm.optimal_T(good).holds
    monotone_rise = frame({0.1: {10: 0.5, 30: 0.6, 90: 0.7}})
    assert cm.optimal_T(monotone_rise).holds is False
    falling_best = frame({0.1: {10: 0.5, 30: 0.6, 90: 0.7}, 1.0: {10: 0.7, 30: 0.6, 90: 0.5}})
    assert cm.optimal_T(falling_best).holds is False
    one = frame({0.1: {10: 0.5, 30: 0.6, 90: 0.55}, 1.0: {10: 0.5, 30: 0.6, 90: 0.7}}, trials=1)
    assert cm.optimal_T(one).verdict == "inconclusive"          # one draw decides nothing


def test_snr_plateau_checks_case2_share_and_the_top_two_snrs():
    def frame(accs, shares):
        rows = []
        for (snr, acc), share in zip(accs.items(), shares):
            for r in _rows(f"otafd_prop_e0p1_snr{snr}", acc, eps_full=0.1, snr_db=snr,
                           trials=2):
                rows.append({**r, "case2_share": share})
        return pd.DataFrame(rows)
    assert cm.snr_plateau(frame({0.0: 0.3, 20.0: 0.6, 30.0: 0.61}, [0.1, 0.9, 1.0])).holds
    assert not cm.snr_plateau(frame({0.0: 0.3, 20.0: 0.5, 30.0: 0.6}, [0.1, 0.9, 1.0])).holds
    assert not cm.snr_plateau(frame({0.0: 0.3, 20.0: 0.6, 30.0: 0.6}, [0.5, 0.2, 1.0])).holds


def test_privacy_and_same_accuracy():
    frame = pd.DataFrame([{**r, "eps_real_ratio_max": 0.99} for r in _rows("otafd_prop", 0.5)])
    assert cm.privacy_met(frame).holds
    frame.loc[1, "eps_real_ratio_max"] = 1.01
    assert not cm.privacy_met(frame).holds
    same = pd.DataFrame(_wiggle(_rows("a", 0.500, trials=3), (0.0, 0.0002, -0.0001))
                        + _rows("b", 0.501, trials=3))
    assert cm.same_accuracy("a", "b")(same).verdict == "holds"
    apart = pd.DataFrame(_wiggle(_rows("a", 0.5, trials=3)) + _rows("b", 0.6, trials=3))
    assert cm.same_accuracy("a", "b")(apart).verdict == "contradicted"
    one = pd.DataFrame(_rows("a", 0.500) + _rows("b", 0.503))
    assert cm.same_accuracy("a", "b")(one).verdict == "inconclusive"    # one trial decides nothing


def test_x7_claims_find_their_curves_by_pattern_whatever_the_budget():
    """X7 runs at eps = 1 in quick and 0.1 in the paper profile: its claims name the curves by
    a pattern that must match exactly one curve (otafd_prop_e* is not otafd_per_class_e*)."""
    frame = pd.DataFrame(_wiggle(_rows("otafd_prop_e1", 0.23, trials=3))
                         + _rows("otafd_uniformw_e1", 0.11, trials=3)
                         + _rows("otafd_per_class_e1", 0.22, trials=3))
    assert cm.resolve(frame, "otafd_prop_e*") == "otafd_prop_e1"
    assert cm.beats("otafd_prop_e*", "otafd_uniformw_e*")(frame).verdict == "holds"
    assert cm.beats("otafd_prop_e*", "otafd_an_e*")(frame).verdict == "n/a"      # not run
    two = pd.DataFrame(_rows("otafd_prop_e1", 0.2) + _rows("otafd_prop_e0p1", 0.1))
    assert cm.resolve(two, "otafd_prop_e*") is None


def _shared_noise_frame(ota_acc, digital_acc, ota_nu, digital_nu=0.01, case2=0.98):
    """X3's two methods at eps = 0.1 and 1 over three trials: OTA-FD's final accuracy, run mean
    nu and Case II share, and the digital benchmark's, as the figure CSV carries them."""
    rows = []
    for eps, tag in ((0.1, "0p1"), (1.0, "1")):
        for curve, acc, nu, share in ((f"otafd_prop_e{tag}", ota_acc[eps], ota_nu[eps], case2),
                                      (f"fd_digital_ldp_e{tag}", digital_acc[eps], digital_nu,
                                       None)):
            for row in _wiggle(_rows(curve, acc, trials=3, eps_full=eps)):
                rows.append({**row, "nu_mean_run": nu if row["round"] else None,
                             "case2_share": share if row["round"] else None})
    return pd.DataFrame(rows)


def test_shared_noise_compares_accuracy_only_where_the_experiment_is_dp_limited():
    below = {0.1: 0.00999, 1.0: 0.009}                 # OTA-FD's noise below digital's: DP-limited
    wins = _shared_noise_frame({0.1: 0.60, 1.0: 0.70}, {0.1: 0.55, 1.0: 0.65}, below)
    result = cm.shared_noise(wins)
    assert result.verdict == "holds" and "mean ν OTA-FD / digital = 0.999" in result.numbers
    loses = _shared_noise_frame({0.1: 0.50, 1.0: 0.70}, {0.1: 0.55, 1.0: 0.65}, below)
    assert cm.shared_noise(loses).verdict == "contradicted"
    # eps = 1 channel-limited (OTA-FD's noise 10x digital's): its large loss is not tested
    mixed = _shared_noise_frame({0.1: 0.60, 1.0: 0.30}, {0.1: 0.55, 1.0: 0.65},
                                {0.1: 0.00999, 1.0: 0.1})
    result = cm.shared_noise(mixed)
    assert result.verdict == "holds" and "1 ε outside the DP-limited regime" in result.numbers
    outside = _shared_noise_frame({0.1: 0.30, 1.0: 0.30}, {0.1: 0.55, 1.0: 0.65},
                                  {0.1: 0.02, 1.0: 0.102}, case2=0.375)
    result = cm.shared_noise(outside)
    assert result.verdict == "inconclusive"
    assert "not in the DP-limited regime" in result.why and "Case II 37.5 %" in result.why
    assert "= 10.2" in result.why
