"""LAPA's figures (spec §9): Fig. 3 (layout, analytic, from `lapa.radio`) and the training
figures 4 (aggregation strategies, MNIST) and 5 (privacy strategies vs the initial noise level),
one experiment so they share the partition and common random numbers; claims of spec §9 / §11.2.
"""

from __future__ import annotations

from typing import Any

from airfl.experiments import AnalyticFigure, Claim, Experiment, FigureSpec, Panel
from airfl.papers.lapa import claims as cl
from airfl.papers.lapa.layout import layout_claims, layout_frame
from airfl.papers.lapa.training import compose, compose_fmnist
from airfl.styles import register_styles

STRATEGY = {"lapa": "LAPA (Config 3)", "uniform": "Uniform DP (B3)",
            "arb": "ARB (B4, reconstructed)", "none": "No DP (Config 4)"}
AGGREGATION = {"fedavg": "FedAvg (B1)", "beda": "BEDA / FedAdp (B2)",
               "wasserstein": "Wasserstein (Config 1)"}
register_styles({"FedAvg (B1)": ("#7f7f7f", "s"), "BEDA / FedAdp (B2)": ("#9467bd", "v"),
                 "Wasserstein (Config 1)": ("#1f77b4", "o"),
                 "Config 2, SER 0.1": ("#d62728", "*"), "Config 2, SER 0.01": ("#ff7f0e", "P"),
                 "Config 2, SER 0.001": ("#8c564b", "X"),
                 "LAPA (Config 3)": ("#d62728", "*"), "Uniform DP (B3)": ("#2ca02c", "^"),
                 "ARB (B4, reconstructed)": ("#17becf", "D"), "No DP (Config 4)": ("#000000", "o")})


def strategy_label(curve: str, params: dict[str, Any]) -> str:
    """Fig. 5's legend: the privacy strategy (one line over the noise levels)."""
    return STRATEGY[params["privacy"]]


def curve_label(curve: str, params: dict[str, Any]) -> str:
    if params.get("ser_threshold") is not None:
        return f"Config 2, SER {params['ser_threshold']:g}"
    if params["in_fig4"]:
        return AGGREGATION[params["aggregation"]]
    name = STRATEGY[params["privacy"]]
    return name if params["privacy"] == "none" else f"{name}, ν = {params['nu']:g}"


def _panel(tag: str):
    return lambda curve, params: bool(params.get(tag, False))


def _fig4_claims(name: str, dataset: str) -> tuple[Claim, ...]:
    gaps = ", ".join(f"{a} − {b} = {v:+.3f}" for (a, b), v in cl.FIG4_PAPER[dataset].items())
    return (
        Claim(f"{name}_ordering", "Config 2 (SER 1e-1) > Config 1 > BEDA > FedAvg in final "
              f"accuracy (Sec. V-B, {dataset}).", cl.fig4_ordering),
        Claim(f"{name}_ser_order", "Stricter SER thresholds lose accuracy: 1e-1 > 1e-2 > 1e-3.",
              cl.fig4_ser_order),
        Claim(f"{name}_gaps", f"Paper's differences in points ({dataset}): {gaps} (soft: same "
              "sign, within a factor of 2).", cl.fig4_gaps(dataset)))


ROUNDS = dict(x="round", xlabel="Communication round t", y="test_accuracy",
              ylabel="Test accuracy")

TRAINING = Experiment(
    paper="lapa", figure="fig4", config_key="lapa.training",
    title="Fig. 4(a): aggregation strategies under a noisy channel (MNIST)",
    description=("FedAvg, BEDA (FedAdp), Wasserstein-softmax weights (Config 1) and SER-threshold "
                 "selection (Config 2, BPSK) over LAPA's practical channel (15 devices at P_0, "
                 "median symbol SNR +1.5 dB), no DP, 5 IID + 10 two-class devices. Quick profile: "
                 "T = 15, 5 local steps, 2 trials, 1000 test images, noise levels ν = 4 and 16 "
                 "(CI budget: spec 11.2 shrunk)."),
    figure_spec=FigureSpec(**ROUNDS, curves=_panel("in_fig4")),
    extra_figures=(
        FigureSpec(**ROUNDS, name="fig5_rounds", curves=_panel("in_fig5"),
                   title="Fig. 5 runs: test accuracy vs round (ideal channel; ARB reconstructed)"),
        FigureSpec(x="param_sigma_init2", y="test_accuracy", final=True, name="fig5",
                   curves=_panel("in_fig5"), label=strategy_label,
                   xlabel="Initial artificial noise level σ_init² (W); no DP at 0",
                   ylabel="Final test accuracy",
                   title="Fig. 5: final accuracy vs initial noise level (ARB reconstructed)"),
    ),
    label=curve_label, compose=compose, shared_keys=("lapa.radio", "lapa.alloc", "lapa.scale"),
    curve_key=lambda curve: "lapa.training",
    claims=(
        *_fig4_claims("fig4", "mnist"),
        Claim("fig5_nodp_highest", "No DP is the highest at every noise level.",
              cl.fig5_nodp_highest, "fig5_rounds"),
        Claim("fig5_degrades", "Every DP strategy degrades as the initial noise grows.",
              cl.fig5_degrades, "fig5_rounds"),
        Claim("fig5_lapa_over_uniform", "LAPA is clearly above uniform DP.",
              cl.fig5_over_uniform("lapa"), "fig5_rounds"),
        Claim("fig5_arb_over_uniform", "ARB is clearly above uniform DP (report-only, Errata 2).",
              cl.fig5_over_uniform("arb"), "fig5_rounds"),
        Claim("fig5_lapa_ge_arb", "LAPA >= ARB at every noise level (Sec. V-D).",
              cl.fig5_lapa_ge_arb, "fig5_rounds"),
        Claim("fig5_lapa_closest", "LAPA comes closest to no DP: gap <= 1.5 points at ν <= 4 "
              "and the smallest of the three DP strategies at every level.",
              cl.fig5_lapa_closest, "fig5_rounds"),
    ))

FMNIST = Experiment(
    paper="lapa", figure="fig4b", config_key="lapa.training",
    title="Fig. 4(b): aggregation strategies under a noisy channel (Fashion-MNIST)",
    description=("The six curves of Fig. 4(a) on Fashion-MNIST (lam = fmnist_lr). Quick profile: "
                 "T = 15, 5 local steps, 2 trials, 1000 test images (CI budget)."),
    figure_spec=FigureSpec(**ROUNDS), label=curve_label, compose=compose_fmnist,
    shared_keys=("lapa.radio", "lapa.alloc", "lapa.scale"),
    curve_key=lambda curve: "lapa.training", claims=_fig4_claims("fig4b", "fashion_mnist"))

EXPERIMENTS = (TRAINING, FMNIST)

ANALYTIC = (
    AnalyticFigure(
        paper="lapa", figure="fig3", config_key="lapa.radio",
        title="Fig. 3: device layout (top view, trial 0 of lapa.radio.layout_seed)",
        description=("BS at (-50, 0, 10) m and 15 devices uniform in Region I (7) and Region II "
                     "(8) at z = 0, each with its 3-D distance and path loss (eq. 39); the layout "
                     "every LAPA training figure uses in trial 0."),
        xlabel="x (m)", panels=(Panel("y", "y (m)"),), compute=layout_frame,
        check=layout_claims),
)
