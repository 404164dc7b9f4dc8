"""params.yaml's `lapa` block and `audit.lapa` (AUDIT: the settings of the wing's audited DP
mechanisms), declared once (airfl.declare). A light module (stdlib only): every job
validates params.yaml.
"""

from __future__ import annotations

from airfl.declare import Bool, ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "lapa": Ref(name="lapa", required=True),
}

DEFS = {
    "lapa_pair": ListOf(items=Num(), min_items=2, max_items=2),
    "lapa_size_range": ListOf(items=Int(minimum=1), min_items=2, max_items=2),
    "lapa_scale": Obj(fields={
        "rounds": Int(minimum=2, required=True),
        "trials": Int(minimum=1, required=True),
        "eval_every": Int(minimum=1, required=True),
        "test_subset": Int(minimum=1, nullable=True, required=True),
        "train_eval_subset": Int(minimum=1, required=True)}),
    "lapa": Obj(description="LAPA: radio, allocation and training "
                            "figures", fields={
        "radio": Obj(description="layout, path loss and channel calibration",
                     required=True, fields={
            "layout_seed": Int(minimum=0, required=True),
            "bs_position": ListOf(items=Num(), min_items=3, max_items=3, required=True),
            "region_devices": ListOf(items=Int(minimum=0), min_items=2, max_items=2, required=True),
            "region1_x": Ref(name="lapa_pair", required=True),
            "region2_x": Ref(name="lapa_pair", required=True),
            "region_y": Ref(name="lapa_pair", required=True),
            "antennas": Int(minimum=1, required=True),
            "carrier_hz": Num(gt=0, required=True),
            "pl_exponent": Num(gt=0, required=True),
            "gain_bs_dbi": Num(required=True),
            "gain_device_dbi": Num(required=True),
            "noise_w": Num(gt=0, required=True),
            "max_power_w": Num(gt=0, required=True),
            "median_snr_db": Num(required=True)}),
        "alloc": Obj(description="LAPA's PID-like round budget and Gompertz device split",
                     required=True, fields={
            "kp": Num(minimum=0, required=True),
            "ks": Num(minimum=0, required=True),
            "window": Int(minimum=2, required=True),
            "beta": Num(gt=0, required=True),
            "reduction": Enum(values=("mean_abs", "l2", "l2_rel"), required=True),
            "invert_share": Bool(required=True)}),
        "training": Obj(description="Figs. 4-5 run block (quick: shrunk to "
                                    "the CI budget)", required=True, fields={
            "dataset": Enum(values=("mnist", "fashion_mnist"), required=True),
            "input_normalization": Obj(required=True, fields={
                "mean": ListOf(items=Num(), min_items=1, required=True),
                "std": ListOf(items=Num(gt=0), min_items=1, required=True)}),
            "fmnist_lr": ByProfile(of=Num(gt=0), required=True),
            "fmnist_normalization": Obj(required=True, fields={
                "mean": ListOf(items=Num(), min_items=1, required=True),
                "std": ListOf(items=Num(gt=0), min_items=1, required=True)}),
            "model": Enum(values=("cnn_mnist_bn", "cnn_mnist"), required=True),
            "partition_per": Ref(name="partition_per", required=True),
            "num_iid": Int(minimum=0, maximum=15, required=True),
            "size_range": ByProfile(of=Ref(name="lapa_size_range"), required=True),
            "batch_fraction": Num(maximum=1, gt=0, required=True),
            "local_steps": ByProfile(of=Int(minimum=1), required=True),
            "lr": ByProfile(of=Num(gt=0), required=True),
            "clip": Num(gt=0, required=True),
            "delta": Num(gt=0, lt=1, required=True),
            "renormalize": Bool(required=True),
            "ser_thresholds": ListOf(items=Num(gt=0, lt=0.5), min_items=1, required=True),
            "nu_grid": ByProfile(of=ListOf(items=Num(gt=0), min_items=1), required=True),
            "precision": Ref(name="precision"),
            # Fig. 6's panels besides the default 5 + 10: IID devices of each (the experiments
            # exist for these five only); Figs. 6(b) / 7(b) on Fashion-MNIST; Pilot B
            "fig6_mixes": ByProfile(of=ListOf(items=Enum(values=(0, 3, 7, 9, 15)), unique=True),
                                    required=True),
            "fmnist_privacy": ByProfile(of=Bool(), required=True),
            "pilot_b": ByProfile(of=Bool(), required=True)}),
        "control": Obj(description="Fig. 7's dynamic noise control: power limits, bound constants,"
                                   " P1's direct searches and the DDPG agent",
                       required=True, fields={
            "p_min_w": Num(gt=0, required=True),
            "p_max_w": Num(gt=0, required=True),
            "floor_fraction": Num(gt=0, lt=1, required=True),
            "mu": Num(gt=0, required=True),
            "smooth": Num(gt=0, required=True),
            "dissimilarity": Num(minimum=1, required=True),
            "line_points": Int(minimum=2, required=True),
            "random_samples": ByProfile(of=Int(minimum=1), required=True),
            "ddpg": Obj(required=True, fields={
                "episodes": ByProfile(of=Int(minimum=1), required=True),
                "steps": ByProfile(of=Int(minimum=1), required=True),
                "hidden": ByProfile(of=ListOf(items=Int(minimum=1), min_items=1), required=True),
                "lr_actor": Num(gt=0, required=True),
                "lr_critic": Num(gt=0, required=True),
                "gamma": Num(minimum=0, maximum=1, required=True),
                "tau": ByProfile(of=Num(maximum=1, gt=0), required=True),
                "batch": ByProfile(of=Int(minimum=1), required=True),
                "buffer": Int(minimum=1, required=True),
                "warmup": ByProfile(of=Int(minimum=0), required=True),
                "expl_sigma": Num(minimum=0, required=True),
                "expl_decay": Num(maximum=1, gt=0, required=True),
                "expl_min": Num(minimum=0, required=True)})}),
        "scale": ByProfile(of=Ref(name="lapa_scale"), always=True, required=True)}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="LAPA's uniform-DP round (the radio, allocation and training settings are "
                        "lapa's).", fields={
    "dim": ByProfile(description="model dimension d (sets sigma_init = nu C / sqrt(d)); a number "
                                 "or {quick, paper}", of=Int(minimum=1), required=True),
    "channel": Enum(values=("ideal", "practical"), required=True)})
