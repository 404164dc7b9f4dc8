"""The core's part of params.yaml, declared once (airfl.params.declare): profile, seed, device, threads,
data, the audit block's shared settings, and the generic building blocks every wing may use
(`$defs`: scale, partition, channel, a training experiment, ...). Each installed wing adds its
own keys and types from its declaration; airfl.pipeline.params assembles the whole schema and
`airfl schema` writes it to workflow/schemas/params.schema.yaml. A light module (stdlib only):
every job validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import (Bool, ByProfile, Declaration, Enum, Int, ListOf, MapOf, Num, Obj,
                                  Ref, Str)

_POSITIVE = Ref(name="positive")

PROPERTIES = {
    "profile": Enum(description="quick shrinks rounds, trials and data so the whole DAG runs on 2 "
                                "CPU cores; paper reproduces the papers' settings.",
                    values=("quick", "paper"), required=True),
    "seed": Int(description="base seed; every random stream is derived from (seed, experiment, "
                            "trial, round, stream).", minimum=0, required=True),
    "device": Enum(description="torch device for training; auto takes cuda when present.",
                   values=("cpu", "cuda", "auto"), default="cpu"),
    "threads": Int(description="torch/BLAS threads per job (1 when Snakemake runs jobs in "
                               "parallel).", minimum=1, default=1),
    "trials_per_job": Int(
        description="train a curve's trials in jobs of this many contiguous trials (a job of "
                    "trials `first-last`, stage `trials`), merged into the curve's run table "
                    "before the figure, byte-identical to one job: jobs sized for a cluster's "
                    "wall-time limit or a GPU host. null: every trial of a curve in one job. A "
                    "curve whose trials run in lockstep (full-batch gradient uploads: Biased FL) "
                    "stays one job.", minimum=1, nullable=True, default=None),
    "confirm_cost_above_core_hours": Num(
        description="a run whose `airfl plan` estimate exceeds this many core-hours prints the "
                    "estimate and stops before its first job until confirmed: raise the bound "
                    "(e.g. `--config confirm_cost_above_core_hours=2000`) or pass `airfl --yes`; "
                    "null never asks.", gt=0, nullable=True, default=24.0),
    "data": Obj(description="where datasets are read from and whether they may be downloaded.",
                required=True, fields={
        "root": Str(description="folder with datasets in torchvision's layout.", required=True),
        "mirror": Str(description="local folder in torchvision's layout to copy datasets from "
                                  "when offline (else env AIRFL_DATA_MIRROR).",
                      nullable=True, default=None),
        "download": Bool(description="try to download missing datasets from their public URLs.",
                         default=True)}),
    "privacy": Obj(description="the privacy stage's accounting (stage `privacy`).", default={},
                   fields={
        "delta": Ref(description="delta of a curve's (epsilon, delta) when the curve declares "
                                 "none of its own (schemes whose paper states RDP only, as CDPB, "
                                 "or that add no DP noise of their own).",
                     name="probability", default=1.0e-5)}),
    "audit": Obj(description="privacy audit of every registered DP mechanism (stage "
                             "`audit`); each wing that registers audits adds its settings as "
                             "audit.<wing> (its declaration's AUDIT).", fields={
        "draws": ByProfile(description="draws per neighbour of a batched mechanism (linear "
                                       "release, fixed roles).",
                           of=Int(minimum=100), always=True, required=True),
        "loop_draws": ByProfile(description="draws per neighbour of a mechanism drawn one "
                                            "aggregation call a draw (random participation, "
                                            "fading, coins).",
                                of=Int(minimum=100), always=True, required=True),
        "alpha": Num(description="1 - confidence of the Clopper-Pearson intervals (0.05 = 95 %).",
                     gt=0, lt=0.5, required=True)}),
}

# `model` is filled with its default (geometry) where a block leaves it out: not `required`
_CHANNEL_BRANCHES = {
    "if": {"properties": {"model": {"const": "rayleigh_mean_gain"}}, "required": ["model"]},
    "then": {"required": ["mean_gain"]},
    "else": {"required": ["radius_m", "pathloss"]},
}

DEFS = {
    "positive": Num(description="a number > 0", gt=0),
    # declared once for the two blocks that set it: the lapa wing's (lapa.alloc) and the arena's
    # LAPA entrants' (arena.lapa)
    "lapa_allocation": Obj(description="LAPA's PID-like round budget and Gompertz device split "
                                       "(its paper gives no values)", fields={
        "kp": Num(description="proportional gain K_p of LAPA's PID-like error (eq. 11)",
                  minimum=0, required=True),
        "ks": Num(description="integral gain K_s of LAPA's PID-like error (eq. 11)", minimum=0,
                  required=True),
        "window": Int(description="past rounds sampled for LAPA's error (eq. 11)", minimum=2,
                      required=True),
        "beta": Num(description="steepness beta of LAPA's Gompertz map (eq. 15)", gt=0,
                    required=True),
        "reduction": Enum(description="reading of LAPA's eq. 10 |.| of a gradient change: mean "
                                      "absolute coordinate (mean_abs), L2 norm (l2) or L2 "
                                      "relative to the earlier gradient (l2_rel)",
                          values=("mean_abs", "l2", "l2_rel"), required=True),
        "invert_share": Bool(description="ablation: eps_k proportional to 1/f instead of f "
                                         "(eq. 16)", required=True)}),
    "probability": Num(description="a probability in (0, 1]", gt=0, maximum=1),
    # (eps, delta)-DP's delta is a failure probability strictly below 1: delta = 1 guarantees
    # nothing (every mechanism is (0, 1)-DP) and the conversions take log(1/delta)
    "dp_delta": Num(description="(eps, delta)-DP's delta, in (0, 1)", gt=0, lt=1),
    "scale": Obj(description="how long and how often an experiment runs in one profile.", fields={
        "rounds": Int(description="communication rounds T of every trial.", minimum=1,
                      required=True),
        "trials": Int(description="independent trials (seeds) averaged per curve.", minimum=1,
                      required=True),
        "eval_every": Int(description="evaluate the metrics a figure or claim reads every n "
                                      "rounds (and at round 0 and the last round).", minimum=1,
                      default=1),
        "test_subset": Int(description="evaluate on the first n test images (null = the whole "
                                       "test set).", minimum=1, nullable=True, default=None),
        "train_eval_subset": Int(description="training loss is measured on this many training "
                                             "samples of the devices (fixed, seeded), in the "
                                             "runs a figure or claim reads it from.",
                                 minimum=1, default=2000)}),
    "partition": Obj(description="how the training set is split across the devices "
                                 "(airfl.data.partitioners).", fields={
        "kind": Enum(description="iid (uniform at random), shards (sort-and-shard label skew, "
                                 "classes_per_device shards each), one_class (device m holds class "
                                 "m mod C), dirichlet (Dirichlet(alpha) class proportions), mixed "
                                 "(num_iid IID devices, the rest two-class, sizes in size_range) or "
                                 "per_class_one_class (one_class over the first per_class images "
                                 "of every class)", values=("iid", "shards", "one_class", "dirichlet", "mixed",
                             "per_class_one_class"), required=True),
        "balanced": Bool(description="iid: the same number of samples of every class per device"),
        "class_pure": Bool(description="shards: every shard lies inside one class (true, the "
                                       "default) or equal shards along the label-sorted order "
                                       "(false, McMahan et al.'s literal scheme)"),
        "pool_per_class": Int(description="draw from the first n images of every class (file "
                                          "order)", minimum=1),
        "classes_per_device": Int(description="shards: shards (so classes) per device",
                                  minimum=1),
        "alpha": Ref(description="dirichlet: concentration alpha (small: strong label skew; "
                                 "large: close to IID)", name="positive"),
        "min_size": Int(description="dirichlet: redraw until every device holds at least this "
                                    "many samples (default 10)", minimum=1),
        "samples_per_device": Int(description="iid, one_class, per_class_one_class: samples per "
                                              "device (absent: the pool split evenly)", minimum=1),
        "per_class": Int(description="per_class_one_class: use the first n images of every "
                                     "class (file order)", minimum=1),
        "num_iid": Int(description="mixed: number of IID devices (the others hold two classes "
                                   "each)", minimum=0),
        "size_range": ListOf(description="mixed: [low, high], device sizes |D_k| drawn uniformly "
                                         "from these integers (inclusive)",
                             items=Int(minimum=1), min_items=2, max_items=2)}),
    "partition_per": Enum(description="experiment (also where absent): every trial trains on "
                                      "the experiment's one data split; trial: each trial draws "
                                      "its own split from (seed, experiment, trial), where the "
                                      "paper's seeds redraw it (pipeline.partitioning)",
                          values=("experiment", "trial")),
    "channel": Obj(description="the wireless channel of a training experiment: large-scale "
                               "gains from a device layout and path loss, or one mean gain.",
                   extra=_CHANNEL_BRANCHES, fields={
        "model": Enum(description="how a trial's statistical CSI is built "
                                  "(pipeline.trial.CHANNEL_MODELS): geometry (devices placed in a "
                                  "disc, path loss; needs radius_m and pathloss) or "
                                  "rayleigh_mean_gain (i.i.d. Rayleigh, E|h|^2 = mean_gain for "
                                  "every device, no layout)",
                      values=("geometry", "rayleigh_mean_gain"), default="geometry"),
        "mean_gain": Ref(description="rayleigh_mean_gain: E|h|^2 of every device (linear)",
                         name="positive"),
        "radius_m": Ref(description="geometry: cell radius in metres; devices lie in the disc "
                                    "around the server", name="positive"),
        "min_radius_m": Num(description="geometry: smallest device distance in metres",
                            minimum=0, default=1.0),
        "placement": Enum(description="geometry: uniform (uniform in the disc, one draw per "
                                      "trial) or quantile (deterministic equal-area radii)",
                          values=("uniform", "quantile"), default="uniform"),
        "pathloss": Obj(description="geometry: the path-loss law giving each device's mean gain",
                        fields={
            "model": Enum(description="log_distance (PL0 + 10 n log10(d / 1 m)) or free_space "
                                      "(Friis at carrier_hz)",
                          values=("log_distance", "free_space"), required=True),
            "pl0_db": Num(description="log_distance: path loss at 1 m, dB", default=30.0),
            "exponent": Ref(description="log_distance: path-loss exponent n", name="positive"),
            "carrier_hz": Ref(description="free_space: carrier frequency, Hz",
                              name="positive")}),
        "bandwidth_hz": Ref(description="system bandwidth B, Hz (noise power and digital rates)",
                            name="positive", default=1.0e6)}),
    # arithmetic of local training, one value per training experiment block
    "precision": Enum(description="arithmetic of local training: fp32 (exact, default; on CUDA "
                                  "TF32 off), tf32 (CUDA only: TF32 tensor-core matmuls and "
                                  "convolutions; refused on CPU) or bf16 "
                                  "(bfloat16 autocast forward and backward of the CNN models; "
                                  "fp32 master weights, loss, gradients, SGD update and "
                                  "evaluation; deterministic)",
                      values=("fp32", "tf32", "bf16"), default="fp32"),
    "input_normalization": Obj(description="model inputs (x/255 - mean)/std, one mean and one std "
                                           "per image channel; null or absent: x/255",
                               nullable=True, fields={
        "mean": Ref(description="per-channel mean subtracted from x/255", name="number_list",
                    required=True),
        "std": ListOf(description="per-channel standard deviation dividing (x/255 - mean)",
                      items=_POSITIVE, min_items=1, required=True)}),
    "training_experiment": Obj(description="a generic federated training experiment: data, "
                                           "split, model, local training, channel, the curves "
                                           "drawn and their scale per profile.", fields={
        "dataset": Enum(description="training and test set", values=("mnist", "fashion_mnist",
                                                                     "cifar10", "cifar100"),
                        required=True),
        "input_normalization": Ref(name="input_normalization"),
        "num_devices": Int(description="number of devices N", minimum=1, required=True),
        "partition": Ref(name="partition", required=True),
        "partition_per": Ref(description="one data split per experiment or per trial",
                             name="partition_per"),
        "model": Obj(description="the model trained", required=True, fields={
            "name": Enum(description="softmax (multinomial logistic regression), cnn_mnist, "
                                     "fedavg_cnn (McMahan et al.'s CNN) or resnet18_gn (ResNet-18 "
                                     "with GroupNorm)",
                         values=("softmax", "cnn_mnist", "fedavg_cnn", "resnet18_gn"),
                         required=True),
            "l2": Num(description="weight of the regulariser (l2/2)||w||^2 in every loss",
                      minimum=0, default=0.0),
            "engine": Enum(description="how the CNNs' local steps run over the devices: vmap "
                                       "(torch.func, all devices in one call), loop (one call "
                                       "per device) or auto (loop on CPU, vmap on CUDA)",
                           values=("auto", "vmap", "loop"), default="auto")}),
        "training": Obj(description="local SGD and the server step", required=True, fields={
            "local_steps": Int(description="local SGD steps per device per round", minimum=1,
                               required=True),
            "batch_size": Int(description="mini-batch size of a local step", minimum=1,
                              required=True),
            "lr": Ref(description="local learning rate (step size)", name="positive",
                      required=True),
            "server_lr": Ref(description="server step size applied to the aggregated update "
                                         "(1: the model moves by the aggregate)",
                             name="positive", default=1.0)}),
        "channel": Ref(name="channel", required=True),
        "curves": MapOf(description="the figure's curves: curve name -> its scheme and the "
                                    "scheme's parameters", values=Ref(name="curve"),
                        key_pattern="^[a-z][a-z0-9_]*$", min_properties=1, required=True),
        "scale": ByProfile(description="rounds, trials and evaluation per profile",
                           of=Ref(name="scale"), always=True, required=True)}),
    "number_list": ListOf(description="a non-empty list of numbers", items=Num(), min_items=1),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)
