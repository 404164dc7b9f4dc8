"""params.yaml's `cdpb` block and `audit.cdpb` (AUDIT: the settings of the wing's audited DP
mechanisms), declared once (airfl.params.declare). A light module (stdlib only): every job
validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "cdpb": Ref(description="CDPB, client-driven power balancing for OTA-FL with Renyi DP: the "
                            "analytic figures and the training of Figs. 4 and 8.", name="cdpb",
                required=True),
}

#: the model and data settings Figs. 4 and 8 both read (after each one's `dataset`)
_MODEL_AND_DATA = {
    "model": ByProfile(description="the model trained (the paper: ResNet-18 with GroupNorm)",
                       of=Enum(values=("softmax", "mlp32", "cnn_mnist", "fedavg_cnn",
                                       "resnet18_gn")), required=True),
    "offline_substitute": Ref(name="cdpb_substitute"),
    "precision": Ref(description="arithmetic of local training", name="precision"),
    "samples_per_device": ByProfile(description="null: every sample of the partition",
                                    of=Int(minimum=1, nullable=True), required=True),
}

#: the local-training settings Figs. 4 and 8 both train with
_LOCAL_TRAINING = {
    "local_steps": ByProfile(description="local SGD steps per client per round", of=Int(minimum=1),
                             required=True),
    "batch_size": ByProfile(description="mini-batch size of a local step", of=Int(minimum=1),
                            required=True),
    "lr": ByProfile(description="local learning rate", of=Ref(name="positive"), required=True),
    "weight_decay": ByProfile(description="L2 weight decay of local SGD", of=Num(minimum=0),
                              required=True),
    "simulation": Enum(description="efficient: the Gaussian noise terms of a round merged into "
                                   "one draw (equal in distribution); clientwise: every client's "
                                   "transmission simulated", values=("efficient", "clientwise"),
                       required=True),
    "noise_variance": Enum(description="reading of sigma_q^2 in the simulation: total (power over "
                                       "the d coordinates, paper (11), (13), (19)) or "
                                       "per_coordinate (Theorem 1's Gaussian-mechanism variance; "
                                       "exceeds the power budget (11) d-fold)",
                           values=("total", "per_coordinate"), required=True),
}

DEFS = {
    "cdpb_substitute": Obj(description="dataset and model an offline run trains when the figure's "
                                     "dataset is neither under data.root nor in the mirror (the "
                                     "caption and CSV say so)", fields={
        "dataset": Enum(description="dataset trained instead", values=("mnist", "fashion_mnist"),
                        required=True),
        "model": Enum(description="model trained instead", values=("softmax", "cnn_mnist",
                                                                   "fedavg_cnn"), required=True)}),
    "cdpb": Obj(description="the CDPB paper's settings", fields={
        "fig8": Obj(description="CDPB Fig. 8 training under a changing channel distribution "
                                "(our reconstruction)", required=True, fields={
            "dataset": ByProfile(description="training and test set (the paper: CIFAR-10)",
                                 of=Enum(values=("mnist", "fashion_mnist", "cifar10", "cifar100")),
                                 required=True),
            **_MODEL_AND_DATA,
            "K": Int(description="number of clients K (IID)", minimum=1, required=True),
            "P": Ref(description="per-client power budget P (normalised units)", name="positive",
                     required=True),
            "gamma_bar": Ref(description="acceptable convergence error gamma_bar of the design "
                                         "(25b)", name="positive", required=True),
            "h_bar_range": ListOf(description="[low, high]: at every change the mean channel "
                                              "gain h_bar is drawn uniformly from this interval",
                                  items=Ref(name="positive"), min_items=2, max_items=2,
                                  required=True),
            "periods": Obj(description="rounds between channel changes (and design "
                                       "recomputations) of each panel", required=True, fields={
                "fig8a": Int(description="Fig. 8(a): rounds between changes", minimum=1,
                             required=True),
                "fig8b": Int(description="Fig. 8(b): rounds between changes", minimum=1,
                             required=True)}),
            **_LOCAL_TRAINING,
            "scale": ByProfile(description="rounds, trials and evaluation per profile",
                               of=Ref(name="scale"), always=True, required=True)}),
        "fig4": Obj(description="CDPB Fig. 4 training; values may be {quick: ..., paper: "
                                "...}", required=True, fields={
            "dataset": ByProfile(description="quick default: fashion_mnist",
                                 of=Enum(values=("mnist", "fashion_mnist", "cifar10", "cifar100")),
                                 required=True),
            **_MODEL_AND_DATA,
            **_LOCAL_TRAINING,
            "strategies": ListOf(description="the power-control strategies trained (Sec. V): "
                                             "CDPB-i, CDPB-n, CDPB at rho_gamma (gamma_bar), "
                                             "h_min channel inversion, independent sampling (IS), "
                                             "Noise-Free",
                                 items=Enum(values=("cdpb_i", "cdpb_n", "gamma_bar", "hmin", "is",
                                                    "noise_free")),
                                 min_items=1, unique=True, required=True),
            "scale": ByProfile(description="rounds, trials and evaluation per profile",
                               of=Ref(name="scale"), always=True, required=True)}),
        "analytic": Obj(description="CDPB's analytic figures (App. B); normalised units W "
                                    "= 1", required=True, fields={
            "K": Int(description="number of clients", minimum=1, required=True),
            "P": Ref(description="per-client power budget", name="positive", required=True),
            "h_bar": Ref(description="mean channel power gain E[h]", name="positive",
                         required=True),
            "W": Ref(description="update norm bound (1: normalised units)", name="positive",
                     required=True),
            "M": Ref(description="smoothness constant M (assumption A1)", name="positive",
                     required=True),
            "G": Ref(description="gradient second-moment bound G (assumption A3)",
                     name="positive", required=True),
            "mu": Ref(description="strong convexity", name="positive", required=True),
            "alpha": Num(description="Renyi order", gt=1, required=True),
            "sigma_z2": Num(description="receiver noise variance", minimum=0, required=True),
            "lam1": Num(description="weight lambda_1 of the convergence error gamma in the "
                                    "utility G (Sec. V: 1)", minimum=0, required=True),
            "lam2": Num(description="weight lambda_2 of the RDP eps in the utility G (Sec. V: "
                                    "1e-5)", minimum=0, required=True),
            "gamma_bar": Ref(description="convergence target", name="positive", required=True),
            "eps_bar": Ref(description="RDP budget", name="positive", required=True),
            "q_IS": Num(description="IS sampling probability", maximum=1, gt=0, required=True),
            "rdp_bound": Enum(description="per-round RDP bound: paper_thm1 (Theorem 1 as printed), "
                                          "wang_thm9 (Lemma 3 / (34), Wang et al. 2019 Thm. 9), "
                                          "no_amplification (the Gaussian mechanism before "
                                          "subsampling, App. A) or dimension_corrected (the "
                                          "subsampled Gaussian with per-coordinate noise "
                                          "sigma_q^2/d and sensitivity sqrt(rho) W; diagnostic)",
                              values=("paper_thm1", "wang_thm9", "no_amplification",
                                      "dimension_corrected"),
                              required=True),
            "stage2_mode": Enum(description="Algorithm 3's Stage II: constrained (each tau keeps "
                                            "gamma <= gamma_bar and eps <= eps_bar) or literal "
                                            "(the paper's unconstrained argmin, which overshoots "
                                            "eps_bar)", values=("constrained", "literal"),
                                required=True),
            "stage2_solver": Enum(description="Stage II's rho: numeric (grid + bounded Brent) or "
                                              "paper (Theorem 3 for CDPB-i, Algorithm 2 for "
                                              "CDPB-n)", values=("numeric", "paper"),
                                  required=True),
            "stage1_rho_gamma": Enum(description="Stage I's rho_gamma: closed (Lemma 1, (28)/(29)) "
                                                 "or numeric", values=("closed", "numeric"),
                                     required=True),
            "fig2a_points": Int(description="Fig. 2(a): rho grid points on (0, rho_max]",
                                minimum=2, required=True),
            "fig2a_tau": Int(description="Fig. 2(a): the fixed number of rounds tau",
                             minimum=1, required=True),
            "fig2b_rounds": Int(description="Fig. 2(b): largest tau", minimum=1, required=True),
            "fig3_rounds": Int(description="Fig. 3: largest tau", minimum=1, required=True),
            "fig5_rounds": Int(description="Fig. 5: rounds of the cumulative RDP curves",
                               minimum=1, required=True),
            "fig6_gamma_bar": Ref(description="Fig. 6(a): gamma_bar values on the x axis",
                                  name="number_list", required=True),
            "fig6_K": ListOf(description="Fig. 6(b): numbers of clients K on the x axis",
                             items=Int(minimum=1), min_items=1, required=True),
            "fig7_K": ListOf(description="Fig. 7(a): numbers of clients K on the x axis",
                             items=Int(minimum=1), min_items=1, required=True),
            "fig7_P": Ref(description="Fig. 7(b): power budgets P on the x axis",
                          name="number_list", required=True),
            "fig9_rounds": Int(description="Fig. 9: largest tau", minimum=1, required=True),
            "mixed_betas": ListOf(description="CDPB-mixed's beta values (probability that an "
                                              "unreliable client sends noise) of Fig. 9",
                                  items=Num(minimum=0, maximum=1), min_items=1, required=True),
            "fig9b_betas": ListOf(description="beta values on the x axis of Fig. 9(b), "
                                              "G(rho_opt, tau_opt) against beta",
                                  items=Num(minimum=0, maximum=1), min_items=1,
                                  required=True)})}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="CDPB-n / -i / -mixed audit (the setting is cdpb.analytic).", fields={
    "dim": Int(description="model dimension d (quick: small, the draws cost O(K d) each)",
               minimum=1, required=True),
    "delta": Ref(description="delta at which the audit's epsilon is compared", name="dp_delta",
                 required=True),
    "beta": Num(description="CDPB-mixed's beta in the quick profile (paper - every "
                            "cdpb.analytic.mixed_betas)", minimum=0, maximum=1, required=True),
    "noise_variance": ListOf(description="readings of sigma_q^2 audited, in every profile.",
                             items=Enum(values=("total", "per_coordinate")), min_items=1,
                             required=True)})
