"""params.yaml's `cdpb` block and `audit.cdpb` (AUDIT: the settings of the wing's audited DP
mechanisms), declared once (airfl.declare). A light module (stdlib only): every job
validates params.yaml.
"""

from __future__ import annotations

from airfl.declare import ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "cdpb": Ref(name="cdpb", required=True),
}

#: the model and data settings Figs. 4 and 8 both read (after each one's `dataset`)
_MODEL_AND_DATA = {
    "model": ByProfile(of=Enum(values=("softmax", "mlp32", "cnn_mnist", "fedavg_cnn",
                                       "resnet18_gn")), required=True),
    "offline_substitute": Ref(name="cdpb_substitute"),
    "precision": Ref(name="precision"),
    "samples_per_device": ByProfile(description="null: every sample of the partition",
                                    of=Int(minimum=1, nullable=True), required=True),
}

#: the local-training settings Figs. 4 and 8 both train with
_LOCAL_TRAINING = {
    "local_steps": ByProfile(of=Int(minimum=1), required=True),
    "batch_size": ByProfile(of=Int(minimum=1), required=True),
    "lr": ByProfile(of=Ref(name="positive"), required=True),
    "weight_decay": ByProfile(of=Num(minimum=0), required=True),
    "simulation": Enum(values=("efficient", "clientwise"), required=True),
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
        "dataset": Enum(values=("mnist", "fashion_mnist"), required=True),
        "model": Enum(values=("softmax", "cnn_mnist", "fedavg_cnn"), required=True)}),
    "cdpb": Obj(fields={
        "fig8": Obj(description="CDPB Fig. 8 training under a changing channel distribution "
                                "(our reconstruction)", required=True, fields={
            "dataset": ByProfile(of=Enum(values=("mnist", "fashion_mnist", "cifar10", "cifar100")),
                                 required=True),
            **_MODEL_AND_DATA,
            "K": Int(minimum=1, required=True),
            "P": Ref(name="positive", required=True),
            "gamma_bar": Ref(name="positive", required=True),
            "h_bar_range": ListOf(items=Ref(name="positive"), min_items=2, max_items=2,
                                  required=True),
            "periods": Obj(required=True, fields={
                "fig8a": Int(minimum=1, required=True),
                "fig8b": Int(minimum=1, required=True)}),
            **_LOCAL_TRAINING,
            "scale": ByProfile(of=Ref(name="scale"), always=True, required=True)}),
        "fig4": Obj(description="CDPB Fig. 4 training; values may be {quick: ..., paper: "
                                "...}", required=True, fields={
            "dataset": ByProfile(description="quick default: fashion_mnist",
                                 of=Enum(values=("mnist", "fashion_mnist", "cifar10", "cifar100")),
                                 required=True),
            **_MODEL_AND_DATA,
            **_LOCAL_TRAINING,
            "strategies": ListOf(items=Enum(values=("cdpb_i", "cdpb_n", "gamma_bar", "hmin", "is",
                                                    "noise_free")),
                                 min_items=1, unique=True, required=True),
            "scale": ByProfile(of=Ref(name="scale"), always=True, required=True)}),
        "analytic": Obj(description="CDPB's analytic figures (App. B); normalised units W "
                                    "= 1", required=True, fields={
            "K": Int(description="number of clients", minimum=1, required=True),
            "P": Ref(description="per-client power budget", name="positive", required=True),
            "h_bar": Ref(description="mean channel power gain E[h]", name="positive",
                         required=True),
            "W": Ref(description="update norm bound (1: normalised units)", name="positive",
                     required=True),
            "M": Ref(name="positive", required=True),
            "G": Ref(name="positive", required=True),
            "mu": Ref(description="strong convexity", name="positive", required=True),
            "alpha": Num(description="Renyi order", gt=1, required=True),
            "sigma_z2": Num(description="receiver noise variance", minimum=0, required=True),
            "lam1": Num(minimum=0, required=True),
            "lam2": Num(minimum=0, required=True),
            "gamma_bar": Ref(description="convergence target", name="positive", required=True),
            "eps_bar": Ref(description="RDP budget", name="positive", required=True),
            "q_IS": Num(description="IS sampling probability", maximum=1, gt=0, required=True),
            "rdp_bound": Enum(values=("paper_thm1", "wang_thm9", "no_amplification",
                                      "dimension_corrected"),
                              required=True),
            "stage2_mode": Enum(values=("constrained", "literal"), required=True),
            "stage2_solver": Enum(values=("numeric", "paper"), required=True),
            "stage1_rho_gamma": Enum(values=("closed", "numeric"), required=True),
            "fig2a_points": Int(minimum=2, required=True),
            "fig2a_tau": Int(minimum=1, required=True),
            "fig2b_rounds": Int(minimum=1, required=True),
            "fig3_rounds": Int(minimum=1, required=True),
            "fig5_rounds": Int(minimum=1, required=True),
            "fig6_gamma_bar": Ref(name="number_list", required=True),
            "fig6_K": ListOf(items=Int(minimum=1), min_items=1, required=True),
            "fig7_K": ListOf(items=Int(minimum=1), min_items=1, required=True),
            "fig7_P": Ref(name="number_list", required=True),
            "fig9_rounds": Int(minimum=1, required=True),
            "mixed_betas": ListOf(items=Num(minimum=0, maximum=1), min_items=1, required=True),
            "fig9b_betas": ListOf(items=Num(minimum=0, maximum=1), min_items=1, required=True)})}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="CDPB-n / -i / -mixed audit (the setting is cdpb.analytic).", fields={
    "dim": Int(description="model dimension d (quick: small, the draws cost O(K d) each)",
               minimum=1, required=True),
    "delta": Ref(name="dp_delta", required=True),
    "beta": Num(description="CDPB-mixed's beta in the quick profile (paper - every "
                            "cdpb.analytic.mixed_betas)", minimum=0, maximum=1, required=True),
    "noise_variance": ListOf(description="readings of sigma_q^2 audited, in every profile.",
                             items=Enum(values=("total", "per_coordinate")), min_items=1,
                             required=True)})
