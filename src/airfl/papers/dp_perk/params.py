"""params.yaml's `dp_perk` block and `audit.dp_perk` (AUDIT: the settings of the wing's audited
DP mechanisms), declared once (airfl.params.declare). A light module (stdlib only): every job
validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "dp_perk": Ref(description="DP as a perk (AirFL-DP): over-the-air FL with a multi-antenna "
                               "base station whose receiver noise provides the DP.",
                   name="dp_perk", required=True),
}

DEFS = {
    "positive_list": ListOf(description="a non-empty list of numbers > 0",
                            items=Ref(name="positive"), min_items=1),
    "dp_perk": Obj(description="DP as a perk: analytic "
                               "setting and training figures", fields={
        "analytic": Obj(description="the paper's setting; keys of "
                                    "airfl.papers.dp_perk.analytic_figures.DEFAULTS",
                        required=True, fields={
            "seed": Int(description="base seed of the analytic trials' channel draws", minimum=0,
                        required=True),
            "trials": Int(description="channel realisations averaged (Sec. V-A: 10)", minimum=1,
                          required=True),
            "dim": Int(description="model dimension d (Sec. V-A: 582,026, FedAvgCNN)", minimum=1,
                       required=True),
            "clip_factor": Ref(description="clip c = sqrt(clip_factor d) (Sec. V-A: 0.012)",
                               name="positive", required=True),
            "n_devices": Int(description="number of devices n (Sec. V-A: 50)", minimum=1,
                             required=True),
            "sample_ratio": Ref(description="fraction r of devices active per round, K = r n "
                                            "(Sec. V-A: 0.9)", name="probability", required=True),
            "antennas": Int(description="base-station antennas m (Sec. V-A: 100)", minimum=1,
                            required=True),
            "rounds": Int(description="communication rounds T (Sec. V-A: 50)", minimum=1,
                          required=True),
            "lr": Ref(description="learning rate eta (Sec. V-A: 0.005)", name="positive",
                      required=True),
            "local_steps": Int(description="local steps Q as the text states (Sec. V-A: 5)",
                               minimum=1, required=True),
            "power_w": Ref(description="device transmit power budget P, W (Sec. V-A: 2 mW)",
                           name="positive", required=True),
            "sigma2_w": Ref(description="receiver noise power sigma^2 per antenna, W "
                                        "(-173 dBm/Hz over 20 MHz)", name="positive",
                            required=True),
            "carrier_hz": Ref(description="carrier frequency f_c of the free-space path loss, Hz "
                                          "(Sec. V-A: 2.4 GHz)", name="positive", required=True),
            "radius_m": Ref(description="cell radius r_max, m; r_i = r_max sqrt(U)",
                            name="positive", required=True),
            "min_distance_m": Ref(description="device distances are clamped to at least this, m",
                                  name="positive", required=True),
            "eps_tilde": Ref(description="normalised privacy target eps/sqrt(d) (Sec. V-A: 0.1)",
                             name="positive", required=True),
            "delta": Ref(description="delta of the (eps, delta) target", name="dp_delta",
                         required=True),
            "smooth_L": Ref(description="smoothness L in the bound's Phi and B (not given in "
                                        "the paper)", name="positive", required=True),
            "domain_D": Ref(description="model-domain diameter D of Prop. III.1 (inf: unbounded, "
                                        "the linear composition (65))", name="positive",
                            required=True, allow_infinity=True),
            "distance_mode": Enum(description="per_device (one distance r_i per device), shared "
                                              "(one distance per trial for all devices) or edge "
                                              "(every device at r_max)",
                                  values=("per_device", "shared", "edge"), required=True),
            "zf_columns": Enum(description="zero-forcing over the K active devices of the round "
                                           "(active) or all n devices (all; needs m >= n)",
                               values=("active", "all"), required=True),
            "beamformers": ListOf(description="receive beamformers drawn: zf (u = 1) and zf_opt "
                                              "(ZF with optimised phases)",
                                  items=Enum(values=("zf", "zf_opt")), min_items=1,
                                  required=True),
            "noise_model": Enum(description="complex_real_part (the BS keeps the real part: "
                                            "variance ||w||^2 sigma^2/2 per coordinate) or "
                                            "real_full (variance ||w||^2 sigma^2, as the proof's "
                                            "(57))", values=("complex_real_part", "real_full"),
                                 required=True),
            "fig2_B": Num(description="Fig. 2: the bound's B (D chosen so that T* = B)", minimum=1,
                          required=True),
            "fig2_rounds_max": Int(description="Fig. 2: largest T on the x axis", minimum=1,
                                   required=True),
            "fig2_D_variants": Ref(description="Fig. 2: domain diameters D of the context curves "
                                               "(inf allowed)", name="number_list",
                                   required=True, allow_infinity=True),
            "realistic_D": Ref(description="a domain diameter D realistic for a CNN, for the "
                                           "claim on B", name="positive", required=True),
            "epochs_local_steps": Int(description="local steps Q of the epochs mode (5 epochs x "
                                                  "120 batches)", minimum=1, required=True),
            "diag_eps_tilde": Ref(description="eps_tilde values of the allocation diagnostics "
                                              "(q_t, pi_t over rounds)", name="number_list",
                                  required=True),
            "diag_power_w": Ref(description="powers P, W, of the allocation diagnostics",
                                name="number_list", required=True),
            "fig3_eps_tilde": Ref(description="eps_tilde values of the privacy table (Fig. 3's)",
                                  name="number_list", required=True),
            "threshold_eps_tilde": Ref(description="eps_tilde grid of the perk-threshold curves "
                                                   "(Fig. 5's)", name="number_list",
                                       required=True),
            "fig6_power_w": Ref(description="powers P, W, of the analytic forecast of Fig. 6",
                                name="number_list", required=True)}),
        "training": Obj(description="Figs. 3-6 (quick: a smaller setting): one value or {quick: "
                                    "..., paper: ...}", required=True, fields={
            "dataset": Enum(description="training and test set (the paper: Fashion-MNIST)",
                            values=("mnist", "fashion_mnist"), required=True),
            "input_normalization": Ref(name="input_normalization", required=True),
            "precision": Ref(description="arithmetic of local training", name="precision"),
            "model": ByProfile(description="the model trained (the paper: FedAvgCNN, d = "
                                           "582,026; mlp32: 784-32-10)",
                               of=Enum(values=("softmax", "mlp32", "cnn_mnist", "fedavg_cnn")),
                               required=True),
            "num_devices": ByProfile(description="number of devices n", of=Int(minimum=1),
                                     required=True),
            "samples_per_device": ByProfile(description="training samples per device",
                                            of=Int(minimum=1), required=True),
            "noniid_pool_per_class": ByProfile(description="non-IID split: draw from the first n "
                                                           "images of every class (null: all)",
                                               of=Int(minimum=1, nullable=True), required=True),
            "antennas": ByProfile(description="base-station antennas m", of=Int(minimum=1),
                                  required=True),
            "local_mode": Enum(description="epochs: authors' code; steps: the paper's "
                                           "literal Q", values=("epochs", "steps"), required=True),
            "local_epochs": ByProfile(description="local epochs per round (epochs mode)",
                                      of=Int(minimum=1), required=True),
            "local_steps": ByProfile(description="local steps Q per round (steps mode)",
                                     of=Int(minimum=1), required=True),
            "batch_size": ByProfile(description="mini-batch size of a local step",
                                    of=Int(minimum=1), required=True),
            "lr": ByProfile(description="local learning rate eta", of=Ref(name="positive"),
                            required=True),
            "beamformer": Enum(description="receive beamformer of the training runs: zf, zf_opt, "
                                           "sca or sdr", values=("zf", "zf_opt", "sca", "sdr"),
                               required=True),
            "dp_noise_convention": Enum(description="sigma^2 the accountant divides by: paper (as "
                                                    "(21)-(23)) or strict (the variance per real "
                                                    "coordinate the receiver really adds)",
                                        values=("paper", "strict"), required=True),
            "accountant": Enum(description="paper (Phi at start round tau = T-1, (67)-(68)) or "
                                           "pabi_all_tau (the min of (66) over every start round)",
                               values=("paper", "pabi_all_tau"), required=True),
            "fig3_eps_tilde": ByProfile(description="Fig. 3: eps_tilde values trained (non-IID "
                                                    "and IID)", of=Ref(name="positive_list"),
                                        required=True),
            "fig5_eps_tilde": ByProfile(description="Fig. 5: further eps_tilde values trained on "
                                                    "the IID split", of=Ref(name="positive_list"),
                                        required=True),
            "fig6_eps_tilde": ByProfile(description="Fig. 6: the eps_tilde of the power sweep",
                                        of=Ref(name="positive"), required=True),
            "fig6_power_w": ByProfile(description="Fig. 6: transmit powers P, W",
                                      of=Ref(name="positive_list"), required=True),
            "scale": ByProfile(description="rounds, trials and evaluation per profile",
                               of=Ref(name="scale"), always=True, required=True)})}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="AirFL-DP audit at Fig. 3's eps_tilde grid of the profile (the radio and "
                        "training settings are dp_perk's).", fields={
    "dim": ByProfile(description="model dimension d (sets the clip c = sqrt(0.012 d)); a number or"
                                 " {quick, paper}", of=Int(minimum=1), required=True)})
