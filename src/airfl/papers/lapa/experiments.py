"""LAPA's figures (spec §9): Fig. 3 (layout, analytic, from `lapa.radio`) and the training
figures 4 (aggregation strategies, MNIST), 5 (privacy strategies vs the initial noise level),
7 (dynamic noise control at DDPG's power vs average power) and 2 (diagnostic: the LAPA noise
requirement against the channel noise, T_th marked), one experiment so they share the partition
and common random numbers; Fig. 7's power and privacy level come from the derivation `ddpg`
(power.py) on the Pilot A run. Claims of spec §9 / §11.2.
"""

from __future__ import annotations

from typing import Any

from airfl.experiments import AnalyticFigure, Claim, Derivation, Experiment, FigureSpec, Panel
from airfl.papers.lapa import claims as cl
from airfl.papers.lapa import power
from airfl.papers.lapa.layout import layout_claims, layout_frame
from airfl.papers.lapa.training import compose, compose_fmnist, compose_mix
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
                 "ARB (B4, reconstructed)": ("#17becf", "D"), "No DP (Config 4)": ("#000000", "o"),
                 "Config 5: LAPA + switching at DDPG's p*": ("#d62728", "*"),
                 "LAPA + switching at average power": ("#1f77b4", "o"),
                 "ARB at average power (B4, reconstructed)": ("#17becf", "D")})
FIG7 = {"config5": "Config 5: LAPA + switching at DDPG's p*",
        "lapa_avgp": "LAPA + switching at average power",
        "arb_avgp": "ARB at average power (B4, reconstructed)"}


def strategy_label(curve: str, params: dict[str, Any]) -> str:
    """Fig. 5's legend: the privacy strategy (one line over the noise levels)."""
    return STRATEGY[params["privacy"]]


def curve_label(curve: str, params: dict[str, Any]) -> str:
    if params.get("in_fig7"):
        return FIG7[curve]
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
              ylabel="Test accuracy", columns=cl.SUMMARY_COLUMNS)   # the summary table's columns

#: Fig. 6 panels with their own partition (the 5 + 10 panel is TRAINING's fig6_iid5). Quick:
#: spec 11.2's {0 + 15, 5 + 10, 15 + 0}; the paper's 3, 7 and 9 IID panels are one entry each
#: in FIG6_MIXES and cost 4 runs each.
FIG6_MIXES = (0, 15)
FIG6_PANELS = tuple(f"fig6_iid{n}" for n in sorted((*FIG6_MIXES, 5)))

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
        FigureSpec(**{**ROUNDS, "columns": (*cl.SUMMARY_COLUMNS, "p1_value", "t_th_predicted")},
                   name="fig7", curves=_panel("in_fig7"),
                   title="Fig. 7(a): dynamic noise control (MNIST; ARB reconstructed)"),
        FigureSpec(**ROUNDS, name="fig6_iid5", label=strategy_label,
                   curves=lambda c, p: p["in_fig5"] and p.get("nu") in (None, 4),
                   title="Fig. 6(a), 5 IID + 10 non-IID: privacy strategies at ν = 4 (MNIST, "
                         "ideal channel; the Fig. 5 runs)"),
        FigureSpec(x="round", y="noise_ratio", logy=True, name="fig2",
                   curves=lambda c, p: bool(p.get("switching")),
                   markers=(("t_th", "T_th (realised, mean of both curves)"),), columns=("t_th_predicted",),
                   xlabel="Communication round t",
                   ylabel="Σ_k σ_req,k / Σ_k σ_ch,k (switch at ≤ 1)",
                   title="Fig. 2 (diagnostic): LAPA's required noise over the channel noise"),
    ),
    derivations=(Derivation("ddpg", sources=(power.PILOT,), targets=power.TARGETS,
                            compute=power.compute),),
    label=curve_label, compose=compose,
    shared_keys=("lapa.radio", "lapa.alloc", "lapa.scale", "lapa.control"),
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
        Claim("fig7_ordering", "Configuration 5 > its average power setting > the average "
              "power setting of Benchmark 4 (Sec. V-D: 'Configuration 5 achieves a 1.465% "
              "improvement compared to its average power setting, and a 5.872% improvement "
              "compared to the average power setting of Benchmark 4').", cl.fig7_ordering, "fig7"),
        Claim("fig7_over_arb", "Config 5 >= ARB at average power (spec 11.2 quick acceptance 5).",
              cl.fig7_over_arb, "fig7"),
        Claim("fig7_gaps", "Paper's differences in points (MNIST): Config 5 − LAPA(p̄) = +1.465, "
              "Config 5 − ARB(p̄) = +5.872 (soft: same sign, within a factor of 2).",
              cl.fig7_gaps("mnist"), "fig7"),
        Claim("summary_table", "Spec 9's summary table: final accuracy (mean ± sd over trials, "
              "last 5 rounds) per figure and curve with eps^T, the realised max_k "
              "eps_k^{tot,eff}, T_th and the excluded devices (a report, not a claim).",
              cl.summary, ("fig4", "fig4b", "fig5_rounds", *FIG6_PANELS, "fig7")),
        Claim("fig7_p1", "DDPG's power lowers P1's objective: L(p*) <= L(p̄) (spec 9 Fig. 7, "
              "11.2 acceptance 6); T_th predicted vs realised.", cl.fig7_objective, "fig7"),
    ))

FMNIST = Experiment(
    paper="lapa", figure="fig4b", config_key="lapa.training",
    title="Fig. 4(b): aggregation strategies under a noisy channel (Fashion-MNIST)",
    description=("The six curves of Fig. 4(a) on Fashion-MNIST (lam = fmnist_lr). Quick profile: "
                 "T = 15, 5 local steps, 2 trials, 1000 test images (CI budget)."),
    figure_spec=FigureSpec(**ROUNDS), label=curve_label, compose=compose_fmnist,
    claims=_fig4_claims("fig4b", "fashion_mnist"))

def _fig6(num_iid: int) -> Experiment:
    claims = () if num_iid != FIG6_MIXES[0] else (
        Claim("fig6_lapa_best_dp", "Regardless of the degree of heterogeneity, LAPA "
              "'consistently outperforms Benchmark 3 and Benchmark 4' (Sec. V-C).",
              cl.fig6_lapa_best_dp, FIG6_PANELS),
        Claim("fig6_gap_shrinks", "'As the proportion of IID devices increases, the performance "
              "of the LAPA-based strategy gradually approaches that of the non-DP strategy'.",
              cl.fig6_gap_shrinks, FIG6_PANELS),
        Claim("fig6_all_iid", "All IID: 'the convergence rate under LAPA even slightly exceeds "
              "that of the non-DP case' while the final accuracy stays slightly lower (soft).",
              cl.fig6_all_iid, FIG6_PANELS),
        Claim("fig6_robust", "'As the proportion of IID devices decreases, the data-adaptive "
              "privacy mechanism demonstrates stronger adaptability': LAPA's margin over B3/B4 "
              "does not shrink and is largest at 0 + 15 or 3 + 12.", cl.fig6_robust,
              FIG6_PANELS))
    return Experiment(
        paper="lapa", figure=f"fig6_iid{num_iid}", config_key="lapa.training",
        title=f"Fig. 6(a), {num_iid} IID + {15 - num_iid} non-IID: privacy strategies at ν = 4",
        description=(f"LAPA, no DP, uniform DP (B3) and ARB (B4, reconstructed) at ν = 4 over the "
                     f"ideal channel with {num_iid} IID devices (drawn first, Errata 3) and "
                     f"{15 - num_iid} two-class devices; λ fixed across panels (Sec. V-C)."),
        figure_spec=FigureSpec(**ROUNDS, label=strategy_label), label=curve_label,
        compose=compose_mix(num_iid), claims=claims)


EXPERIMENTS = (TRAINING, FMNIST, *(_fig6(n) for n in FIG6_MIXES))

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
