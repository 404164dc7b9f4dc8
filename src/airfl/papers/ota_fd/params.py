"""params.yaml's `ota_fd` block and `audit.ota_fd` (AUDIT: the settings of the wing's audited
DP mechanisms), declared once (airfl.declare). A light module (stdlib only): every job
validates params.yaml.

The `ota_fd_*` scalar types are one value for both profiles or {quick: ..., paper: ...}
(ByProfile). A training experiment (`ota_fd_experiment`): X1 names its whole setting (`_X1_NAMES`
required); X2-X7 inherit X1's setting keys and override some; the curve keys are each
experiment's own (setup.py).
"""

from __future__ import annotations

from airfl.declare import (Any_, AllOf, Bool, ByProfile, Declaration, Enum, Int, ListOf, Num, Obj,
                          Ref)

PROPERTIES = {
    "ota_fd": Ref(name="ota_fd", required=True),
}

_X1_NAMES = ("dataset", "model", "precision", "num_devices", "dominant", "others", "data_fraction",
             "methods", "dp_methods", "eps_full", "full_batch", "local_steps", "batch_size", "eta0",
             "rounds", "trials", "eval_every", "test_subset", "train_eval_subset")

DEFS = {
    "ota_fd_int": ByProfile(of=Int(minimum=1)),
    "ota_fd_int_or_null": ByProfile(of=Int(minimum=1, nullable=True)),
    "ota_fd_positive": ByProfile(of=Num(gt=0)),
    "ota_fd_fraction": ByProfile(of=Num(maximum=1, gt=0)),
    "ota_fd_bool": ByProfile(of=Bool()),
    "ota_fd_eps_list": ByProfile(of=ListOf(items=Num(gt=0), min_items=1)),
    "ota_fd_ablations": ListOf(items=Enum(values=("fd_digital_ldp", "otafd_uniformw", "otafd_an",
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
    "ota_fd_interval": ListOf(items=Num(gt=0), min_items=2, max_items=2),
    "ota_fd_experiment": Obj(fields={
        "dataset": ByProfile(of=Enum(values=("mnist", "fashion_mnist", "cifar10"))),
        "model": ByProfile(of=Enum(values=("cnn_mnist_k3", "resnet18_bn"))),
        "offline_substitute": Obj(description="trained instead when the dataset is not here (the "
                                              "caption says so)", fields={
            "dataset": Enum(values=("mnist", "fashion_mnist"), required=True),
            "model": Enum(values=("cnn_mnist_k3",), required=True)}),
        "precision": Ref(name="precision"),
        "num_devices": Int(description="the one-dominant-class MNIST split is feasible up to 42", minimum=1, maximum=42),
        "dominant": Int(description="samples of the WD's own class at full scale", minimum=1),
        "others": Int(description="samples of every other class at full scale", minimum=0),
        "data_fraction": Ref(name="ota_fd_fraction"),
        "methods": ByProfile(of=Ref(name="ota_fd_methods")),
        "dp_methods": ByProfile(of=Ref(name="ota_fd_dp_methods")),
        "eps_full": Ref(name="ota_fd_eps_list"),
        "eps_uniform": Ref(name="ota_fd_interval"),
        "delta_uniform": Ref(name="ota_fd_interval"),
        "ablations": ByProfile(of=Ref(name="ota_fd_ablations")),
        "benchmark_eps_full": Ref(name="ota_fd_positive"),
        "fixed_T": ByProfile(of=ListOf(items=Int(minimum=1), unique=True)),
        "snr_grid": ByProfile(of=ListOf(items=Num(minimum=-50, maximum=80), unique=True)),
        "eta0_grid": ByProfile(of=ListOf(items=Num(gt=0), unique=True), description=(
            "eta_0 calibration runs of noiseless FD (calibration.py); empty: the fixed eta0 "
            "trains")),
        "full_batch": Ref(name="ota_fd_bool"),
        "local_steps": Ref(name="ota_fd_int"),
        "batch_size": Ref(name="ota_fd_int"),
        "eta0": Ref(name="ota_fd_positive"),
        "rounds": Ref(name="ota_fd_int"),
        "trials": Ref(name="ota_fd_int"),
        "eval_every": Ref(name="ota_fd_int"),
        "test_subset": Ref(name="ota_fd_int_or_null"),
        "train_eval_subset": Ref(name="ota_fd_int")}),
    "ota_fd": Obj(description="DP over-the-air federated distillation", fields={
        "analysis": Obj(required=True, fields={
            "num_devices": Int(minimum=1, required=True),
            "K": Int(minimum=2, required=True),
            "dominant": Int(minimum=1, required=True),
            "minor": Int(minimum=1, required=True),
            "power": Num(gt=0, required=True),
            "snr_db": Num(minimum=-50, maximum=80, required=True),
            "delta": Num(gt=0, lt=1, required=True),
            "sensitivity_mode": Enum(values=("paper", "per_class"), required=True),
            "fading_quantile": Num(gt=0, lt=1, required=True),
            "eta0": Num(gt=0, required=True),
            "gamma": Num(gt=0, required=True),
            "L1": Num(gt=0, required=True),
            "L2": Num(gt=0, required=True),
            "fmax": Num(gt=0, required=True),
            "T_max": Int(minimum=2, maximum=10000000, required=True),
            "eps_grid": ListOf(items=Num(gt=0), min_items=2, required=True),
            "nu_eps": ListOf(items=Num(gt=0), min_items=1, required=True),
            "seed": Int(minimum=0, required=True),
            "draws": Int(minimum=1, maximum=100000, required=True),
            "snr_grid": ListOf(items=Num(minimum=-50, maximum=80), min_items=2, required=True),
            "case_T": Int(minimum=1, required=True)}),
        "setting": Obj(required=True, fields={
            "power": Num(gt=0, required=True),
            "snr_db": Num(minimum=-50, maximum=80, required=True),
            "delta": Num(gt=0, lt=1, required=True),
            "gamma": Num(minimum=0, required=True),
            "clip_S": Num(gt=0, required=True),
            "sensitivity_mode": Enum(values=("paper", "per_class"), required=True),
            "an_mode": Enum(values=("none", "full_power"), required=True),
            "fl": Obj(description="the FL benchmarks (budgets stated in Appendix E, setting not named)",
                      required=True, fields={
                "clip_C": Num(gt=0, required=True),
                "eps_uniform": Ref(name="ota_fd_interval", required=True),
                "delta_uniform": Ref(name="ota_fd_interval", required=True)})}),
        "x1": AllOf(options=(Ref(name="ota_fd_experiment"),
                             Any_(extra={"required": list(_X1_NAMES)})), required=True),
        "x2": Ref(name="ota_fd_experiment", required=True),
        "x3": Ref(name="ota_fd_experiment", required=True),
        "x4": Ref(name="ota_fd_experiment", required=True),
        "x5": Ref(name="ota_fd_experiment", required=True),
        "x7": Ref(name="ota_fd_experiment", required=True)}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="OTA-FD's DP soft-label round (the setting and split are ota_fd's).",
            fields={
    "draws": Obj(description="draws per neighbour (each sums T rounds' releases).", required=True,
                 fields={
        "quick": Int(minimum=100, required=True),
        "paper": Int(minimum=100, required=True)}),
    "eps": ListOf(description="target eps_i over T rounds (Theorem 2)", items=Ref(name="positive"),
                  min_items=1, required=True),
    "T": Int(description="rounds the design is made for", minimum=1, required=True)})
