"""params.yaml's `lapa` block and `audit.lapa` (AUDIT: the settings of the wing's audited DP
mechanisms), declared once (airfl.params.declare). A light module (stdlib only): every job
validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import Bool, ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "lapa": Ref(description="LAPA: dynamic privacy allocation for wireless FL (radio, allocation, "
                            "training and Fig. 7's noise control).", name="lapa", required=True),
}

DEFS = {
    "lapa_pair": ListOf(description="[low, high], metres", items=Num(), min_items=2, max_items=2),
    "lapa_size_range": ListOf(description="[low, high]: device sizes |D_k| drawn uniformly from "
                                          "these integers (inclusive)",
                              items=Int(minimum=1), min_items=2, max_items=2),
    "lapa_scale": Obj(description="rounds, trials and evaluation of LAPA's training figures in "
                                  "one profile", fields={
        "rounds": Int(description="communication rounds T", minimum=2, required=True),
        "trials": Int(description="independent trials (seeds) averaged per curve", minimum=1,
                      required=True),
        "eval_every": Int(description="evaluate every n rounds", minimum=1, required=True),
        "test_subset": Int(description="evaluate on the first n test images (null: all)",
                           minimum=1, nullable=True, required=True),
        "train_eval_subset": Int(description="training loss measured on this many training "
                                             "samples (fixed, seeded)", minimum=1,
                                 required=True)}),
    "lapa": Obj(description="LAPA: radio, allocation and training "
                            "figures", fields={
        "radio": Obj(description="layout, path loss and channel calibration",
                     required=True, fields={
            "layout_seed": Int(description="seed of the device layout and fading: one layout per "
                                           "(layout_seed, trial), shared by Fig. 3 and every "
                                           "training figure", minimum=0, required=True),
            "bs_position": ListOf(description="base station (x, y, z), m (Sec. V-A: (-50, 0, 10))",
                                  items=Num(), min_items=3, max_items=3, required=True),
            "region_devices": ListOf(description="devices in Region I and in Region II (Sec. V-A: "
                                                 "7 and 8)", items=Int(minimum=0), min_items=2,
                                     max_items=2, required=True),
            "region1_x": Ref(description="Region I's x range, m", name="lapa_pair", required=True),
            "region2_x": Ref(description="Region II's x range, m", name="lapa_pair",
                             required=True),
            "region_y": Ref(description="both regions' y range, m", name="lapa_pair",
                            required=True),
            "antennas": Int(description="base-station receive antennas (SIMO)", minimum=1,
                            required=True),
            "carrier_hz": Num(description="carrier frequency of the path loss (eq. 39), Hz",
                              gt=0, required=True),
            "pl_exponent": Num(description="path-loss exponent of eq. 39", gt=0, required=True),
            "gain_bs_dbi": Num(description="base-station antenna gain, dBi", required=True),
            "gain_device_dbi": Num(description="device antenna gain, dBi", required=True),
            "noise_w": Num(description="receiver noise power, W", gt=0, required=True),
            "max_power_w": Num(description="device transmit power P_0, W (its value cancels in "
                                           "the calibration)", gt=0, required=True),
            "median_snr_db": Num(description="calibration: the median device's symbol SNR at "
                                             "P_0, dB", required=True)}),
        "alloc": Ref(description="LAPA's PID-like round budget and Gompertz device split",
                     name="lapa_allocation", required=True),
        "training": Obj(description="Figs. 4-5 run block (quick: shrunk to "
                                    "the CI budget)", required=True, fields={
            "dataset": Enum(description="training and test set of Figs. 4-7 (Fig. 4(b) and the "
                                        "(b) panels also train Fashion-MNIST)",
                            values=("mnist", "fashion_mnist"), required=True),
            "input_normalization": Obj(description="MNIST inputs (x/255 - mean)/std",
                                       required=True, fields={
                "mean": ListOf(description="per-channel mean", items=Num(), min_items=1,
                               required=True),
                "std": ListOf(description="per-channel standard deviation", items=Num(gt=0),
                              min_items=1, required=True)}),
            "fmnist_lr": ByProfile(description="learning rate of the Fashion-MNIST runs (the "
                                               "paper: 0.008)", of=Num(gt=0), required=True),
            "fmnist_normalization": Obj(description="Fashion-MNIST inputs (x/255 - mean)/std",
                                        required=True, fields={
                "mean": ListOf(description="per-channel mean", items=Num(), min_items=1,
                               required=True),
                "std": ListOf(description="per-channel standard deviation", items=Num(gt=0),
                              min_items=1, required=True)}),
            "model": Enum(description="cnn_mnist_bn (the paper's CNN with its BatchNorm layer, "
                                      "Sec. V-A) or cnn_mnist (without it)",
                          values=("cnn_mnist_bn", "cnn_mnist"), required=True),
            "partition_per": Ref(description="one data split per experiment or per trial",
                                 name="partition_per", required=True),
            "num_iid": Int(description="IID devices of the default mix (the other 15 - n hold two "
                                       "classes each)", minimum=0, maximum=15, required=True),
            "size_range": ByProfile(description="device sizes |D_k|, per profile",
                                    of=Ref(name="lapa_size_range"), required=True),
            "batch_fraction": Num(description="mini-batch size as a fraction of the mean local "
                                              "data size", maximum=1, gt=0, required=True),
            "local_steps": ByProfile(description="local SGD steps per round", of=Int(minimum=1),
                                     required=True),
            "lr": ByProfile(description="local learning rate of the MNIST runs", of=Num(gt=0),
                            required=True),
            "clip": Num(description="gradient clip C (the sensitivity 2 lam C / |D_k|, eq. 18)",
                        gt=0, required=True),
            "delta": Num(description="delta of the Gaussian mechanism, c = sqrt(2 ln(1.25/delta))",
                         gt=0, lt=1, required=True),
            "renormalize": Bool(description="eq. 22's softmax over the selected devices (true: "
                                            "weights sum to 1) or the paper's full-K denominator "
                                            "(false)", required=True),
            "ser_thresholds": ListOf(description="Fig. 4: symbol-error-rate thresholds of device "
                                                 "selection (eq. 22; uncoded BPSK)",
                                     items=Num(gt=0, lt=0.5), min_items=1, required=True),
            "nu_grid": ByProfile(description="Fig. 5: noise levels nu, sigma_init = nu C / "
                                             "sqrt(q)", of=ListOf(items=Num(gt=0), min_items=1),
                                 required=True),
            "precision": Ref(description="arithmetic of local training", name="precision"),
            # Fig. 6's panels besides the default 5 + 10: IID devices of each (the experiments
            # exist for these five only); Figs. 6(b) / 7(b) on Fashion-MNIST; Pilot B
            "fig6_mixes": ByProfile(description="Fig. 6: IID-device counts of the panels run "
                                                "besides the default mix",
                                    of=ListOf(items=Enum(values=(0, 3, 7, 9, 15)), unique=True),
                                    required=True),
            "fmnist_privacy": ByProfile(description="run Figs. 6(b) and 7(b) on Fashion-MNIST",
                                        of=Bool(), required=True),
            "pilot_b": ByProfile(description="run Pilot B, the LAPA run at Fig. 7's eps^T whose "
                                             "budget trajectory DDPG uses (false: Pilot A's "
                                             "trajectory rescaled)", of=Bool(), required=True)}),
        "control": Obj(description="Fig. 7's dynamic noise control: power limits, bound constants,"
                                   " P1's direct searches and the DDPG agent",
                       required=True, fields={
            "p_min_w": Num(description="total power lower limit P_min, W (eq. 28c)", gt=0,
                           required=True),
            "p_max_w": Num(description="total power upper limit P_max, W (eq. 28c)", gt=0,
                           required=True),
            "floor_fraction": Num(description="smallest device power P_floor as a fraction of "
                                              "P_0 (eq. 30's action map)", gt=0, lt=1,
                                  required=True),
            "mu": Num(description="bound constant mu of eq. 24", gt=0, required=True),
            "smooth": Num(description="smoothness L of eq. 24", gt=0, required=True),
            "dissimilarity": Num(description="gradient dissimilarity delta of eq. 24", minimum=1,
                                 required=True),
            "line_points": Int(description="uniform powers tried by P1's line search", minimum=2,
                               required=True),
            "random_samples": ByProfile(description="random feasible actions tried for P1",
                                        of=Int(minimum=1), required=True),
            "ddpg": Obj(description="the DDPG agent solving P1 (eq. 30)", required=True, fields={
                "episodes": ByProfile(description="training episodes", of=Int(minimum=1),
                                      required=True),
                "steps": ByProfile(description="steps per episode", of=Int(minimum=1),
                                   required=True),
                "hidden": ByProfile(description="hidden layer widths of actor and critic",
                                    of=ListOf(items=Int(minimum=1), min_items=1), required=True),
                "lr_actor": Num(description="actor learning rate", gt=0, required=True),
                "lr_critic": Num(description="critic learning rate", gt=0, required=True),
                "gamma": Num(description="discount factor", minimum=0, maximum=1, required=True),
                "tau": ByProfile(description="soft target-update rate",
                                 of=Num(maximum=1, gt=0), required=True),
                "batch": ByProfile(description="replay mini-batch size", of=Int(minimum=1),
                                   required=True),
                "buffer": Int(description="replay buffer capacity (transitions)", minimum=1,
                              required=True),
                "warmup": ByProfile(description="random-action steps before learning starts",
                                    of=Int(minimum=0), required=True),
                "expl_sigma": Num(description="initial std of the Gaussian exploration noise",
                                  minimum=0, required=True),
                "expl_decay": Num(description="exploration std multiplied by this per episode",
                                  maximum=1, gt=0, required=True),
                "expl_min": Num(description="smallest exploration std", minimum=0,
                                required=True)})}),
        "scale": ByProfile(description="rounds, trials and evaluation per profile",
                           of=Ref(name="lapa_scale"), always=True, required=True)}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="LAPA's uniform-DP round (the radio, allocation and training settings are "
                        "lapa's).", fields={
    "dim": ByProfile(description="model dimension d (sets sigma_init = nu C / sqrt(d)); a number "
                                 "or {quick, paper}", of=Int(minimum=1), required=True),
    "channel": Enum(description="ideal (noise-free decoding) or practical (the channel noise on "
                                "a decoded gradient adds to the DP noise)",
                    values=("ideal", "practical"), required=True)})
