"""params.yaml's `dp_perk` block and `audit.dp_perk` (AUDIT: the settings of the wing's audited
DP mechanisms), declared once (airfl.declare). A light module (stdlib only): every job
validates params.yaml.
"""

from __future__ import annotations

from airfl.declare import ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "dp_perk": Ref(name="dp_perk", required=True),
}

DEFS = {
    "positive_list": ListOf(items=Ref(name="positive"), min_items=1),
    "dp_perk": Obj(description="DP as a perk: analytic "
                               "setting and training figures", fields={
        "analytic": Obj(description="the paper's setting; keys of "
                                    "airfl.papers.dp_perk.analytic_figures.DEFAULTS",
                        required=True, fields={
            "seed": Int(minimum=0, required=True),
            "trials": Int(minimum=1, required=True),
            "dim": Int(minimum=1, required=True),
            "clip_factor": Ref(name="positive", required=True),
            "n_devices": Int(minimum=1, required=True),
            "sample_ratio": Ref(name="probability", required=True),
            "antennas": Int(minimum=1, required=True),
            "rounds": Int(minimum=1, required=True),
            "lr": Ref(name="positive", required=True),
            "local_steps": Int(minimum=1, required=True),
            "power_w": Ref(name="positive", required=True),
            "sigma2_w": Ref(name="positive", required=True),
            "carrier_hz": Ref(name="positive", required=True),
            "radius_m": Ref(name="positive", required=True),
            "min_distance_m": Ref(name="positive", required=True),
            "eps_tilde": Ref(name="positive", required=True),
            "delta": Ref(name="dp_delta", required=True),
            "smooth_L": Ref(name="positive", required=True),
            # D = inf: unbounded
            "domain_D": Ref(name="positive", required=True, allow_infinity=True),
            "distance_mode": Enum(values=("per_device", "shared", "edge"), required=True),
            "zf_columns": Enum(values=("active", "all"), required=True),
            "beamformers": ListOf(items=Enum(values=("zf", "zf_opt")), min_items=1, required=True),
            "noise_model": Enum(values=("complex_real_part", "real_full"), required=True),
            "fig2_B": Num(minimum=1, required=True),
            "fig2_rounds_max": Int(minimum=1, required=True),
            "fig2_D_variants": Ref(name="number_list", required=True, allow_infinity=True),
            "realistic_D": Ref(name="positive", required=True),
            "epochs_local_steps": Int(minimum=1, required=True),
            "diag_eps_tilde": Ref(name="number_list", required=True),
            "diag_power_w": Ref(name="number_list", required=True),
            "fig3_eps_tilde": Ref(name="number_list", required=True),
            "threshold_eps_tilde": Ref(name="number_list", required=True),
            "fig6_power_w": Ref(name="number_list", required=True)}),
        "training": Obj(description="Figs. 3-6 (quick: a smaller setting): one value or {quick: "
                                    "..., paper: ...}", required=True, fields={
            "dataset": Enum(values=("mnist", "fashion_mnist"), required=True),
            "input_normalization": Ref(name="input_normalization", required=True),
            "precision": Ref(name="precision"),
            "model": ByProfile(of=Enum(values=("softmax", "mlp32", "cnn_mnist", "fedavg_cnn")),
                               required=True),
            "num_devices": ByProfile(of=Int(minimum=1), required=True),
            "samples_per_device": ByProfile(of=Int(minimum=1), required=True),
            "noniid_pool_per_class": ByProfile(of=Int(minimum=1, nullable=True), required=True),
            "antennas": ByProfile(of=Int(minimum=1), required=True),
            "local_mode": Enum(description="epochs: authors' code; steps: the paper's "
                                           "literal Q", values=("epochs", "steps"), required=True),
            "local_epochs": ByProfile(of=Int(minimum=1), required=True),
            "local_steps": ByProfile(of=Int(minimum=1), required=True),
            "batch_size": ByProfile(of=Int(minimum=1), required=True),
            "lr": ByProfile(of=Ref(name="positive"), required=True),
            "beamformer": Enum(values=("zf", "zf_opt", "sca", "sdr"), required=True),
            "dp_noise_convention": Enum(values=("paper", "strict"), required=True),
            "accountant": Enum(values=("paper", "pabi_all_tau"), required=True),
            "fig3_eps_tilde": ByProfile(of=Ref(name="positive_list"), required=True),
            "fig5_eps_tilde": ByProfile(of=Ref(name="positive_list"), required=True),
            "fig6_eps_tilde": ByProfile(of=Ref(name="positive"), required=True),
            "fig6_power_w": ByProfile(of=Ref(name="positive_list"), required=True),
            "scale": ByProfile(of=Ref(name="scale"), always=True, required=True)})}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="AirFL-DP audit at Fig. 3's eps_tilde grid of the profile (the radio and "
                        "training settings are dp_perk's).", fields={
    "dim": ByProfile(description="model dimension d (sets the clip c = sqrt(0.012 d)); a number or"
                                 " {quick, paper}", of=Int(minimum=1), required=True)})
