"""LAPA's figures: Fig. 3 (layout, analytic, from `lapa.radio`) and the training
figures 4 (aggregation strategies, MNIST), 5 (privacy strategies vs the initial noise level),
7 (dynamic noise control at DDPG's power vs average power) and 2 (diagnostic: the LAPA noise
requirement against the channel noise, T_th marked), one experiment so they share the partition
and common random numbers; Fig. 7's power and privacy level come from the derivation `ddpg`
(power.py) on the Pilot A run (and on Pilot B where it runs: `lapa.training.pilot_b`, paper
profile). Fig. 6's other panels (`lapa.training.fig6_mixes`) are experiments of their own (one
partition each); Figs. 6(b) and 7(b) on Fashion-MNIST (`lapa.training.fmnist_privacy`, paper
profile) are the experiment FMNIST_PRIVACY and its own mix panels. Which of them a profile runs
is each experiment's `enabled`. Claims: the paper's statements in Sec. V.
"""

from __future__ import annotations

from typing import Any

from airfl.core.experiments import AnalyticFigure, Claim, Derivation, Experiment, FigureSpec, Panel
from airfl.papers.lapa import claims as cl
from airfl.papers.lapa import power
from airfl.papers.lapa.analytic_figures import layout_claims, layout_frame
from airfl.papers.lapa.run_blocks import (FIG6_MIX_CHOICES, PILOT_B, compose, compose_fmnist,
                                          compose_fmnist_privacy, compose_mix,
                                          fmnist_privacy_enabled, mix_enabled)
from airfl.figures.styles import register_styles

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
                 "ARB at average power (B4, reconstructed)": ("#17becf", "D")},
                proposed=("Wasserstein (Config 1)", "Config 2, SER 0.1", "Config 2, SER 0.01",
                          "Config 2, SER 0.001", "LAPA (Config 3)",
                          "Config 5: LAPA + switching at DDPG's p*"))
FIG7 = {"config5": "Config 5: LAPA + switching at DDPG's p*",
        "lapa_avgp": "LAPA + switching at average power",
        "arb_avgp": "ARB at average power (B4, reconstructed)"}


def strategy_label(curve: str, params: dict[str, Any]) -> str:
    """Fig. 5's legend: the privacy strategy (one line over the noise levels)."""
    return STRATEGY[params["privacy"]]


def curve_label(curve: str, params: dict[str, Any]) -> str:
    if curve == PILOT_B:
        return "Pilot B: LAPA at Fig. 7's ε^T (ideal channel)"
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
              f"accuracy (Sec. V-B, {dataset}).",
              lambda frame: cl.fig4_ordering(frame, dataset)),
        Claim(f"{name}_ser_order", "Stricter SER thresholds lose accuracy: 1e-1 > 1e-2 > 1e-3.",
              cl.fig4_ser_order),
        Claim(f"{name}_gaps", f"Paper's differences in points ({dataset}): {gaps} (soft: same "
              "sign, within a factor of 2).", cl.fig4_gaps(dataset)))


#: the Fig. 7 panels' P1 claim (DDPG against direct searches at equal work, claims.fig7_ddpg_vs_direct)
P1_STATEMENT = ("DDPG's power p* solves P1 (eq. 28) no worse than a line search over uniform "
                "power and a random search over feasible actions given the same number of "
                "objective evaluations, per trial (Sec. IV-C: DDPG solves P1); T_th predicted vs "
                "realised.")
#: the Fig. 7 panels' run-table columns: the summary's, P1's values (DDPG's and the direct
#: searches' at equal evaluations) and the predicted T_th
FIG7_COLUMNS = (*cl.SUMMARY_COLUMNS, *cl.P1_SEARCHES.values(), "t_th_predicted")

ROUNDS = dict(x="round", xlabel="Communication round t", y="test_accuracy",
              ylabel="Test accuracy", columns=cl.SUMMARY_COLUMNS)   # the summary table's columns

#: Fig. 6 panels (a: MNIST, b: Fashion-MNIST), every mix the experiments exist for; those with
#: their own partition are picked per profile by `lapa.training.fig6_mixes` (quick: the
#: 0 + 15 and 15 + 0; paper: 0, 3, 7, 9, 15), each costing 4 runs. The 5 + 10 panels come from
#: TRAINING's Fig. 5 runs (a) and FMNIST_PRIVACY's nu = 4 runs (b). Claims read the panels of
#: the experiments the profile runs (stages/claims.py).
FIG6_PANELS = tuple(f"fig6_iid{n}" for n in sorted((*FIG6_MIX_CHOICES, 5)))
FIG6B_PANELS = tuple(f"fig6b_iid{n}" for n in sorted((*FIG6_MIX_CHOICES, 5)))


def _fig6_claims(name: str, panels: tuple[str, ...]) -> tuple[Claim, ...]:
    """Fig. 6's four claims over one dataset's panels, in the paper's words (Sec. V-C)."""
    return (
        Claim(f"{name}_lapa_best_dp", "'Regardless of the degree of data heterogeneity, the LAPA "
              "algorithm proposed in this paper consistently outperforms Benchmark 3 and "
              "Benchmark 4' (Sec. V-C).", cl.fig6_lapa_best_dp, panels),
        Claim(f"{name}_gap_shrinks", "'When the learning rate is fixed, as the proportion of IID "
              "devices increases, the performance of the LAPA-based strategy gradually approaches "
              "that of the non-DP strategy'.", cl.fig6_gap_shrinks, panels),
        Claim(f"{name}_all_iid", "'When all device data distributions are IID, the convergence "
              "rate under LAPA even slightly exceeds that of the non-DP case (although with "
              "continued training, the final accuracy remains slightly lower than the non-DP "
              "case)' (soft).", cl.fig6_all_iid, panels),
        Claim(f"{name}_robust", "'As the proportion of IID devices decreases, the data-adaptive "
              "privacy mechanism demonstrates stronger adaptability, showing good robustness "
              "against variations in data heterogeneity': LAPA's margin over B3/B4 does not "
              "shrink and is largest at 0 + 15 or 3 + 12.", cl.fig6_robust, panels))


def _fig7_claims(name: str, dataset: str) -> tuple[Claim, ...]:
    """Fig. 7's claims on one dataset's panel (Sec. V-D), orderings first."""
    sentence = ("'on the MNIST dataset, Configuration 5 achieves a 1.465% improvement compared "
                "to its average power setting, and a 5.872% improvement compared to the average "
                "power setting of Benchmark 4'" if dataset == "mnist" else
                "'On the Fashion-MNIST, the improvements are 0.910% and 2.705%, respectively'")
    gaps = ", ".join(f"{a} − {b} = {v:+.3f}" for (a, b), v in cl.FIG7_PAPER[dataset].items())
    return (
        Claim(f"{name}_ordering", "Configuration 5 > its average power setting > the average "
              f"power setting of Benchmark 4 (Sec. V-D: {sentence}).",
              lambda frame: cl.fig7_ordering(frame, dataset), name),
        Claim(f"{name}_over_arb", "Config 5 >= ARB at average power (quick "
              "acceptance 5).", cl.fig7_over_arb, name),
        Claim(f"{name}_gaps", f"Paper's differences in points ({dataset}): {gaps} (soft: same "
              "sign, within a factor of 2).", cl.fig7_gaps(dataset), name))


def _ddpg_derivations() -> tuple[Derivation, ...]:
    """Fig. 7's steps between trainings: Pilot B's level from Pilot A (only where
    Pilot B runs), then DDPG on Pilot B's trajectory (or Pilot A's rescaled, quick)."""
    return (Derivation("fig7_level", sources=(power.PILOT,), targets=(PILOT_B,),
                       compute=power.level),
            Derivation("ddpg", sources=(power.PILOT, PILOT_B), optional=(PILOT_B,),
                       targets=power.TARGETS, compute=power.compute))

TRAINING = Experiment(
    paper="lapa", figure="fig4", config_key="lapa.training",
    title="Fig. 4(a): aggregation strategies under a noisy channel (MNIST)",
    description=("FedAvg, BEDA (FedAdp), Wasserstein-softmax weights (Config 1) and SER-threshold "
                 "selection (Config 2, BPSK) over LAPA's practical channel (15 devices at P_0, "
                 "median symbol SNR +1.5 dB), no DP, 5 IID + 10 two-class devices. Where no "
                 "device meets an SER threshold in a trial, the single best device is kept and "
                 "trains alone (our reading; the run records' and CSV's `ser_fallback` mark it, "
                 "the Fig. 4 claims name the trials). ARB (our reconstruction of [27]) sets no "
                 "direction before two windows of 5 progress statistics, so its first 10 rounds "
                 "spend uniform DP's split eps^T/(T K) (`arb_as_uniform` per round): in a run of "
                 "15 rounds ARB differs from uniform DP in its last 5 only. Quick profile: "
                 "T = 15, 5 local steps, 2 trials, 1000 test images, noise levels ν = 4 and 16 "
                 "(CI budget: shrunk)."),
    figure_spec=FigureSpec(**ROUNDS, curves=_panel("in_fig4")),
    extra_figures=(
        FigureSpec(**ROUNDS, name="fig5_rounds", curves=_panel("in_fig5"),
                   title="Fig. 5 runs: test accuracy vs round (ideal channel; ARB reconstructed)"),
        FigureSpec(x="param_sigma_init2", y="test_accuracy", final=True, name="fig5",
                   curves=_panel("in_fig5"), label=strategy_label,
                   xlabel="Initial artificial noise level σ_init² (W); no DP at 0",
                   ylabel="Final test accuracy",
                   title="Fig. 5: final accuracy vs initial noise level (ARB reconstructed)"),
        FigureSpec(**{**ROUNDS, "columns": FIG7_COLUMNS},
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
    derivations=_ddpg_derivations(),
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
        Claim("fig5_arb_over_uniform", "ARB is clearly above uniform DP (report-only; ARB is our "
              "reconstruction).",
              cl.fig5_over_uniform("arb"), "fig5_rounds"),
        Claim("fig5_lapa_ge_arb", "LAPA >= ARB at every noise level (Sec. V-D).",
              cl.fig5_lapa_ge_arb, "fig5_rounds"),
        Claim("fig5_lapa_closest", "LAPA comes closest to no DP: gap <= 1.5 points at ν <= 4 "
              "and the smallest of the three DP strategies at every level.",
              cl.fig5_lapa_closest, "fig5_rounds"),
        *_fig7_claims("fig7", "mnist"),
        *_fig6_claims("fig6", FIG6_PANELS),
        Claim("summary_table", "Summary table: final accuracy (mean ± sd over trials, "
              "last 5 rounds) per figure and curve with eps^T, the realised max_k "
              "eps_k^{tot,eff}, T_th and the excluded devices (a report, not a claim).",
              cl.summary, ("fig4", "fig4b", "fig5_rounds", *FIG6_PANELS, "fig7",
                           *FIG6B_PANELS, "fig7b")),
        Claim("fig7_p1", P1_STATEMENT, cl.fig7_ddpg_vs_direct, "fig7"),
    ))

FMNIST = Experiment(
    paper="lapa", figure="fig4b", config_key="lapa.training",
    title="Fig. 4(b): aggregation strategies under a noisy channel (Fashion-MNIST)",
    description=("The six curves of Fig. 4(a) on Fashion-MNIST (lam = fmnist_lr). Quick profile: "
                 "T = 15, 5 local steps, 2 trials, 1000 test images (CI budget)."),
    figure_spec=FigureSpec(**ROUNDS), label=curve_label, compose=compose_fmnist,
    claims=_fig4_claims("fig4b", "fashion_mnist"))

FMNIST_PRIVACY = Experiment(
    paper="lapa", figure="fig7b", config_key="lapa.training",
    title="Fig. 7(b): dynamic noise control (Fashion-MNIST; ARB reconstructed)",
    description=("Configuration 5 (LAPA + switching at DDPG's p*), LAPA + switching at p_bar and "
                 "ARB at p_bar over the practical channel at the Fig. 7 privacy level, calibrated on "
                 "this experiment's Pilot A (LAPA, ν = 4, ideal channel) and, where it runs, "
                 "Pilot B; the ν = 4 runs also draw Fig. 6(b)'s 5 + 10 panel "
                 "(lam = fmnist_lr; runs where lapa.training.fmnist_privacy is on). ARB's first "
                 "10 rounds spend uniform DP's split (`arb_as_uniform`)."),
    figure_spec=FigureSpec(**{**ROUNDS, "columns": FIG7_COLUMNS}, curves=_panel("in_fig7")),
    extra_figures=(
        FigureSpec(**ROUNDS, name="fig6b_iid5", label=strategy_label,
                   curves=lambda c, p: c in cl.FIG6_CURVES,
                   title="Fig. 6(b), 5 IID + 10 non-IID: privacy strategies at ν = 4 "
                         "(Fashion-MNIST, ideal channel)"),),
    derivations=_ddpg_derivations(), label=curve_label, compose=compose_fmnist_privacy,
    shared_keys=("lapa.radio", "lapa.alloc", "lapa.scale", "lapa.control"),
    enabled=fmnist_privacy_enabled,
    claims=(*_fig7_claims("fig7b", "fashion_mnist"),
            Claim("fig7b_p1", P1_STATEMENT, cl.fig7_ddpg_vs_direct, "fig7b"),
            *_fig6_claims("fig6b", FIG6B_PANELS)))


def _fig6(num_iid: int, fashion: bool = False) -> Experiment:
    """One Fig. 6 panel with its own partition: (a) MNIST or (b) Fashion-MNIST."""
    panel, data = ("b", "Fashion-MNIST") if fashion else ("a", "MNIST")
    return Experiment(
        paper="lapa", figure=f"fig6{'b' if fashion else ''}_iid{num_iid}",
        config_key="lapa.training",
        title=f"Fig. 6({panel}), {num_iid} IID + {15 - num_iid} non-IID: privacy strategies at "
              f"ν = 4 ({data})",
        description=(f"LAPA, no DP, uniform DP (B3) and ARB (B4, reconstructed) at ν = 4 over the "
                     f"ideal channel with {num_iid} IID devices (drawn first: our reading) and "
                     f"{15 - num_iid} two-class devices; λ fixed across panels (Sec. V-C). "
                     "ARB's first 10 rounds spend uniform DP's split (our ARB: no direction "
                     "before two windows of 5 progress statistics; `arb_as_uniform`)."),
        figure_spec=FigureSpec(**ROUNDS, label=strategy_label), label=curve_label,
        compose=compose_mix(num_iid, fashion), enabled=mix_enabled(num_iid, fashion))


EXPERIMENTS = (TRAINING, FMNIST, *(_fig6(n) for n in FIG6_MIX_CHOICES), FMNIST_PRIVACY,
               *(_fig6(n, fashion=True) for n in FIG6_MIX_CHOICES))

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
