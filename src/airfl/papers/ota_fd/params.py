"""params.yaml's `ota_fd` block and `audit.ota_fd` (AUDIT: the settings of the wing's audited
DP mechanisms), declared once (airfl.params.declare). A light module (stdlib only): every job
validates params.yaml.

The `ota_fd_*` scalar types are one value for both profiles or {quick: ..., paper: ...}
(ByProfile). A training experiment (`ota_fd_experiment`): X1 names its whole setting (`_X1_NAMES`
required); X2-X7 inherit X1's setting keys and override some; the curve keys are each
experiment's own (run_blocks.py).
"""

from __future__ import annotations

from airfl.params.declare import (Any_, AllOf, Bool, ByProfile, Declaration, Enum, Int, ListOf,
                                  Num, Obj, Ref)

PROPERTIES = {
    "ota_fd": Ref(description="DP over-the-air federated distillation (OTA-FD): the shared "
                              "setting, the closed-form analysis X6 and the training experiments "
                              "X1-X5, X7.", name="ota_fd", required=True),
}

_X1_NAMES = ("dataset", "model", "precision", "num_devices", "dominant", "others", "data_fraction",
             "methods", "dp_methods", "eps_full", "full_batch", "local_steps", "batch_size", "eta0",
             "rounds", "trials", "eval_every", "test_subset", "train_eval_subset")

DEFS = {
    "ota_fd_int": ByProfile(description="an integer >= 1, per profile", of=Int(minimum=1)),
    "ota_fd_int_or_null": ByProfile(description="an integer >= 1 or null, per profile",
                                    of=Int(minimum=1, nullable=True)),
    "ota_fd_positive": ByProfile(description="a number > 0, per profile", of=Num(gt=0)),
    "ota_fd_fraction": ByProfile(description="a fraction in (0, 1], per profile",
                                 of=Num(maximum=1, gt=0)),
    "ota_fd_bool": ByProfile(description="true or false, per profile", of=Bool()),
    "ota_fd_eps_list": ByProfile(description="privacy budgets eps > 0, per profile",
                                 of=ListOf(items=Num(gt=0), min_items=1)),
    "ota_fd_ablations": ListOf(description="benchmarks run at benchmark_eps_full against the "
                                           "proposed design: digital FD with local DP, uniform "
                                           "weights, full-power artificial noise, per-class "
                                           "sensitivity", items=Enum(values=("fd_digital_ldp", "otafd_uniformw", "otafd_an",
                                                  "otafd_per_class")),
                             unique=True),
    "ota_fd_methods": ListOf(description="run once (otafl_dp at the FL budgets of setting.fl)",
                             items=Enum(values=("local_only", "fd_noiseless", "fd_ota_nodp",
                                                "otafl_dp", "fl_noiseless")),
                           unique=True),
    "ota_fd_dp_methods": ListOf(description="run at every eps of eps_full (or once with "
                                            "eps_uniform)",
                                items=Enum(values=("otafd_prop", "fd_digital_ldp",
                                                   "otafd_uniformw")),
                              unique=True),
    "ota_fd_interval": ListOf(description="[low, high], each device's value drawn uniformly "
                                          "from it", items=Num(gt=0), min_items=2, max_items=2),
    "ota_fd_experiment": Obj(description="an OTA-FD training experiment: X1 names every setting "
                                         "key, X2-X7 override some and name their own curves",
                             fields={
        "dataset": ByProfile(description="training and test set",
                             of=Enum(values=("mnist", "fashion_mnist", "cifar10"))),
        "model": ByProfile(description="cnn_mnist_k3 (21,680 parameters) or resnet18_bn "
                                       "(ResNet-18 with BatchNorm, 11,173,962 parameters)",
                           of=Enum(values=("cnn_mnist_k3", "resnet18_bn"))),
        "offline_substitute": Obj(description="trained instead when the dataset is not here (the "
                                              "caption says so)", fields={
            "dataset": Enum(description="dataset trained instead", values=("mnist",
                                                                           "fashion_mnist"),
                            required=True),
            "model": Enum(description="model trained instead", values=("cnn_mnist_k3",),
                          required=True)}),
        "precision": Ref(description="arithmetic of local training", name="precision"),
        "num_devices": Int(description="wireless devices (WDs) M, one dominant class each "
                                       "(class i mod K); at most 42, so the full-scale split "
                                       "fits in the training set", minimum=1, maximum=42),
        "dominant": Int(description="samples of the WD's own class at full scale", minimum=1),
        "others": Int(description="samples of every other class at full scale", minimum=0),
        "data_fraction": Ref(description="s: every local dataset scaled by s (same class ratio); "
                                         "budgets are scaled so the DP noise matches the full "
                                         "run's", name="ota_fd_fraction"),
        "methods": ByProfile(description="methods run once", of=Ref(name="ota_fd_methods")),
        "dp_methods": ByProfile(description="DP methods run at every eps of eps_full",
                                of=Ref(name="ota_fd_dp_methods")),
        "eps_full": Ref(description="full-scale privacy budgets eps of the DP curves (curves "
                                    "are named by them)", name="ota_fd_eps_list"),
        "eps_uniform": Ref(description="per-device budgets eps_i drawn uniformly from this "
                                       "interval (one run instead of eps_full)",
                           name="ota_fd_interval"),
        "delta_uniform": Ref(description="per-device delta_i drawn uniformly from this interval",
                             name="ota_fd_interval"),
        "ablations": ByProfile(description="benchmarks run at benchmark_eps_full",
                               of=Ref(name="ota_fd_ablations")),
        "benchmark_eps_full": Ref(description="the full-scale eps of the ablations",
                                  name="ota_fd_positive"),
        "fixed_T": ByProfile(description="fixed round counts T of the proposed method (the "
                                         "fixed-T sweep against Prop. 2's T*)",
                             of=ListOf(items=Int(minimum=1), unique=True)),
        "snr_grid": ByProfile(description="receive SNRs of the SNR sweep, dB",
                              of=ListOf(items=Num(minimum=-50, maximum=80), unique=True)),
        "eta0_grid": ByProfile(of=ListOf(items=Num(gt=0), unique=True), description=(
            "eta_0 calibration runs of noiseless FD (calibration.py); empty: the fixed eta0 "
            "trains")),
        "full_batch": Ref(description="FedSGD: one full-batch step per round (true) or "
                                      "local_steps mini-batch steps (false)",
                          name="ota_fd_bool"),
        "local_steps": Ref(description="local steps E per round", name="ota_fd_int"),
        "batch_size": Ref(description="mini-batch size of a local step", name="ota_fd_int"),
        "eta0": Ref(description="step size eta_0 of eta_t = eta_0 / sqrt(t + 1), FD and FL alike",
                    name="ota_fd_positive"),
        "rounds": Ref(description="communication rounds T", name="ota_fd_int"),
        "trials": Ref(description="independent trials (seeds) averaged per curve",
                      name="ota_fd_int"),
        "eval_every": Ref(description="evaluate every n rounds", name="ota_fd_int"),
        "test_subset": Ref(description="evaluate on the first n test images (null: all)",
                           name="ota_fd_int_or_null"),
        "train_eval_subset": Ref(description="training loss measured on this many training "
                                             "samples", name="ota_fd_int")}),
    "ota_fd": Obj(description="DP over-the-air federated distillation", fields={
        "analysis": Obj(description="X6: the closed forms of Theorem 1 and Props. 1-2 alone "
                                    "(numpy; full scale in both profiles)", required=True,
                        fields={
            "num_devices": Int(description="wireless devices M", minimum=1, required=True),
            "K": Int(description="classes K", minimum=2, required=True),
            "dominant": Int(description="samples of a device's dominant class", minimum=1,
                            required=True),
            "minor": Int(description="samples of every other class", minimum=1, required=True),
            "power": Num(description="peak transmit power P_i of every device", gt=0,
                         required=True),
            "snr_db": Num(description="SNR P_i / sigma_n^2, dB", minimum=-50, maximum=80,
                          required=True),
            "delta": Num(description="delta of every device's (eps, delta) budget", gt=0, lt=1,
                         required=True),
            "sensitivity_mode": Enum(description="paper (Lemma 1: sensitivity / B_i) or "
                                                 "per_class (/ B_i^k)",
                                     values=("paper", "per_class"), required=True),
            "fading_quantile": Num(description="the channel enters at this quantile of min_i "
                                               "|h_i|^2 P_i (0.5: the median)", gt=0, lt=1,
                                   required=True),
            "eta0": Num(description="Theorem 1's step size eta_0 (not stated in the paper)",
                        gt=0, required=True),
            "gamma": Num(description="Theorem 1's distillation weight gamma", gt=0,
                         required=True),
            "L1": Num(description="Theorem 1's smoothness constant L_1", gt=0, required=True),
            "L2": Num(description="Theorem 1's constant L_2", gt=0, required=True),
            "fmax": Num(description="Theorem 1's initial loss bound f_max (ln 10 for 10 "
                                    "classes)", gt=0, required=True),
            "T_max": Int(description="largest round count searched (Prop. 2)", minimum=2,
                         maximum=10000000, required=True),
            "eps_grid": ListOf(description="budgets eps of the round-count curve T*(eps)",
                               items=Num(gt=0), min_items=2, required=True),
            "nu_eps": ListOf(description="budgets eps of the noise-level curves nu(T) and of the "
                                         "Case II map", items=Num(gt=0), min_items=1,
                             required=True),
            "seed": Int(description="seed of the fading draws of the Case II map", minimum=0,
                        required=True),
            "draws": Int(description="Rayleigh draws of the Case II map", minimum=1,
                         maximum=100000, required=True),
            "snr_grid": ListOf(description="SNRs of the Case II map, dB",
                               items=Num(minimum=-50, maximum=80), min_items=2, required=True),
            "case_T": Int(description="round count T of the Case II map", minimum=1,
                          required=True)}),
        "setting": Obj(description="the radio and privacy setting every training experiment "
                                   "shares", required=True, fields={
            "power": Num(description="peak transmit power P_i of every device", gt=0,
                         required=True),
            "snr_db": Num(description="SNR P_i / sigma_n^2, dB", minimum=-50, maximum=80,
                          required=True),
            "delta": Num(description="delta of every device's (eps, delta) budget", gt=0, lt=1,
                         required=True),
            "gamma": Num(description="weight gamma of the distillation term in the local loss",
                         minimum=0, required=True),
            "clip_S": Num(description="gradient-norm clip, Assumption 3's S", gt=0,
                          required=True),
            "sensitivity_mode": Enum(description="paper (Lemma 1: sensitivity / B_i) or "
                                                 "per_class (/ B_i^k)",
                                     values=("paper", "per_class"), required=True),
            "an_mode": Enum(description="artificial noise: none (P2 = 0) or full_power (the "
                                        "artificial-noise member of Prop. 1's family)",
                            values=("none", "full_power"), required=True),
            "fl": Obj(description="the FL benchmarks (budgets stated in Appendix E; the mechanism is "
                                  "our reconstruction)",
                      required=True, fields={
                "clip_C": Num(description="clip C of each device's whole FL update (sensitivity 2C)", gt=0,
                              required=True),
                "eps_uniform": Ref(description="per-device eps_i drawn uniformly from this "
                                               "interval", name="ota_fd_interval",
                                   required=True),
                "delta_uniform": Ref(description="per-device delta_i drawn uniformly from this "
                                                 "interval", name="ota_fd_interval",
                                     required=True)})}),
        "x1": AllOf(description="X1: CNN-MNIST, every method; its setting is every other "
                                "experiment's unless that one overrides a key",
                    options=(Ref(name="ota_fd_experiment"),
                             Any_(extra={"required": list(_X1_NAMES)})), required=True),
        "x2": Ref(description="X2: ResNet-18 on CIFAR-10 with per-device budgets",
                  name="ota_fd_experiment", required=True),
        "x3": Ref(description="X3: the eps sweep of OTA-FD against digital FD with local DP and "
                              "OTA-FL", name="ota_fd_experiment", required=True),
        "x4": Ref(description="X4: the fixed-T sweep against Prop. 2's T*",
                  name="ota_fd_experiment", required=True),
        "x5": Ref(description="X5: the SNR sweep", name="ota_fd_experiment", required=True),
        "x7": Ref(description="X7: the ablations at one budget against the proposed design",
                  name="ota_fd_experiment", required=True)}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="OTA-FD's DP soft-label round (the setting and split are ota_fd's).",
            fields={
    "draws": Obj(description="draws per neighbour (each sums T rounds' releases).", required=True,
                 fields={
        "quick": Int(description="draws in the quick profile", minimum=100, required=True),
        "paper": Int(description="draws in the paper profile", minimum=100, required=True)}),
    "eps": ListOf(description="target eps_i over T rounds (Theorem 2)", items=Ref(name="positive"),
                  min_items=1, required=True),
    "T": Int(description="rounds the design is made for", minimum=1, required=True)})
