"""OTA-FD's X6: the closed forms alone (numpy, seconds; full scale in both profiles) as analytic
figures: Prop. 2's round count, the noise level nu, the DP-limited share against the SNR and the
cumulative channel uses, from the frames and checks of :mod:`airfl.papers.ota_fd.analytic_figures`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.core.experiments import AnalyticFigure, Panel
from airfl.papers.ota_fd import analytic_figures as an


def _tidy(wide: pd.DataFrame, x: str, scheme: pd.Series, metrics: tuple[str, ...],
          name: str) -> pd.DataFrame:
    """x/scheme/metric/value rows that keep their wide row's columns (the claims read them)."""
    parts = [wide.assign(x=wide[x], scheme=scheme, metric=m, value=wide[m]) for m in metrics]
    frame = pd.concat(parts, ignore_index=True)
    frame.attrs.update(figure=name, x=x)
    return frame


def _wide(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["metric"] == frame["metric"].iloc[0]].reset_index(drop=True)


def _rounds(block: dict[str, Any]) -> pd.DataFrame:
    wide = an.rounds_frame(block)
    parts = []
    for column, name in (("T_hat", "a/b (appendix T*)"), ("T0", "T_0"),
                         ("T_closed", "max(T_0, a/b)"),
                         ("T_argmin", "argmin of the exact objective")):
        parts.append(_tidy(wide, "eps", pd.Series([name] * len(wide)), (column,), "x6_rounds")
                     .assign(metric="T", value=wide[column].to_numpy()))
    frame = pd.concat(parts, ignore_index=True)
    frame.attrs.update(figure="x6_rounds", x="eps")
    return frame


def _noise(block: dict[str, Any]) -> pd.DataFrame:
    wide = an.noise_frame(block)
    scheme = "ε = " + wide["eps"].map("{:g}".format)
    return _tidy(wide, "T", scheme, ("nu", "case2_fraction"), "x6_noise")


def _communication(block: dict[str, Any]) -> pd.DataFrame:
    wide = an.communication_frame(block)
    return _tidy(wide, "round", wide["scheme"], ("uses",), "x6_communication")


def _cases(block: dict[str, Any]) -> pd.DataFrame:
    wide = an.case_frame(block)
    scheme = "ε = " + wide["eps"].map("{:g}".format)
    return _tidy(wide, "snr_db", scheme, ("case2_fraction", "nu_median"), "x6_cases")


CAPTION_X6 = (" Full-scale MNIST split (1110 + 9×10 per WD, stated); Theorem 1's constants "
              "L_1, L_2, f_max, η_0, γ are not stated (reconstructed [R]); the channel "
              "is the median of min_i |h_i|² P_i under Rayleigh fading (our reading).")


def _analytic(name, title, description, xlabel, panels, compute, check, logx=True):
    return AnalyticFigure(paper="ota_fd", figure=name, config_key="ota_fd.analysis",
                          title=title, description=description + CAPTION_X6, xlabel=xlabel,
                          panels=panels, compute=compute, check=check, logx=logx)


ANALYTIC = (
    _analytic("x6_rounds", "X6: optimal number of FD rounds vs ε (Prop. 2, (P3.1)-(P3.2))",
              "a/b, T_0, max(T_0, a/b) and the argmin of the exact piecewise objective.",
              "Privacy budget ε (δ = 1e-8)", (Panel("T", "Rounds T", logy=True),), _rounds,
              lambda f: an.check_rounds(f.drop_duplicates("eps").reset_index(drop=True))),
    _analytic("x6_noise", "X6: per-entry noise ν of the received soft labels vs T (Prop. 1)",
              "Largest ν_t^k over classes and the fraction of DP-limited classes (Case II).",
              "Total rounds T", (Panel("nu", "ν (per entry)", logy=True),
                                 Panel("case2_fraction", "Fraction of classes in Case II")),
              _noise, lambda f: an.check_noise(_wide_noise(f))),
    _analytic("x6_cases", "X5 (closed-form half): DP-limited share and noise vs SNR",
              "Fraction of class-rounds in Case II and the median ν over Rayleigh draws at "
              "T = case_T (the training half of X5 is not part of this step).",
              "SNR (dB)", (Panel("case2_fraction", "Fraction of class-rounds in Case II"),
                           Panel("nu_median", "Median ν (per entry)", logy=True)),
              _cases, lambda f: an.check_cases(_wide(f)), logx=False),
    _analytic("x6_communication", "X6: cumulative uplink channel uses",
              "FD sends K² analog values per round, FL the D model parameters.",
              "Round t", (Panel("uses", "Cumulative channel uses", logy=True),),
              _communication, lambda f: an.check_communication(_wide(f))),
)


def _wide_noise(frame: pd.DataFrame) -> pd.DataFrame:
    return _wide(frame)[["eps", "T", "nu", "case2_fraction"]]
