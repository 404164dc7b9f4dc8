"""params.yaml's `biased_fl` block, declared once (airfl.params.declare); `$defs.biased_fl_curve` is
generated from the schemes' parameter declarations (schemes/params.py). A light module (stdlib
only): every job validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import (ByProfile, Declaration, Enum, Int, ListOf, MapOf, Num, Obj,
                                  OneOf, Ref, Str)

PROPERTIES = {
    "biased_fl": Ref(description="Biased FL over heterogeneous wireless networks: OTA (Fig. 2) "
                                 "and digital (Fig. 3) panels.", name="biased_fl", required=True),
}

DEFS = {
    "biased_fl_scale": Obj(description="trials and evaluation schedule of a Biased FL panel in "
                                       "one profile", fields={
        "trials": Int(description="independent trials (seeds) averaged per curve", minimum=1,
                      required=True),
        "eval_every": Int(description="evaluate every n rounds", minimum=1, default=1),
        "eval_every_s": Ref(description="evaluate whenever the uplink time crosses a multiple "
                                        "(overrides eval_every)", name="positive")}),
    "tuning_setting": Obj(description="how a panel's step size and baseline parameters are "
                                      "chosen in one profile", fields={
        "mode": Enum(description="fixed: the panel's eta; grid: baseline search",
                     values=("fixed", "grid"), required=True),
        "eta_factors": ListOf(description="eta = factor x 2/(mu + L)", items=Ref(name="positive"),
                              min_items=1, default=[1.0, 0.5, 0.25, 0.125, 0.0625]),
        "selection_trials": Int(description="grid: trials each candidate runs before the choice",
                                minimum=1, default=3),
        "eta_search": Enum(description="all: every eta of the grid; descending: from the largest "
                                       "down until the mean final gap rises (the same choice "
                                       "when the gap is unimodal in eta; pipeline/tuning.py); "
                                       "absent: all (no default is filled in, so the run "
                                       "blocks of profiles without it keep their bytes)",
                           values=("all", "descending")),
        "param_grid": MapOf(description="baseline grids: curve -> {param: [values]} (all "
                                        "combinations) or a list of {param: value} combinations; "
                                        "searched at the panel's eta before the eta grid, on the "
                                        "selection trials, by the lowest mean final sub-optimality"
                                        " gap (BB-FL Interior, which trains on the interior "
                                        "devices only: by the relative change of its objective "
                                        "over them; ties: accuracy)",
                            values=OneOf(options=(
                                                     MapOf(values=ListOf(min_items=1),
                                                           min_properties=1),
                                                     ListOf(items=MapOf(min_properties=1),
                                                            min_items=1))),
                            key_pattern="^[a-z][a-z0-9_]*$")}),
    "tuning": ByProfile(description="step-size and parameter search, per profile",
                        of=Ref(name="tuning_setting"), always=True),
    "biased_fl_panel": Obj(description="one panel (figure) of Biased FL: its geometry, step size, "
                                       "design constants, curves and scale", fields={
        "radius_m": Ref(description="disc radius rho_max (m): 3000 OTA, 1200 digital",
                        name="positive", required=True),
        "max_rounds": Int(description="OTA: T = 500 rounds; digital: a cap (the horizon ends the "
                                      "run)", minimum=1, required=True),
        "horizon_s": Ref(description="digital: training-time horizon (150 s)", name="positive"),
        "eta": Ref(description="step size (quick: 0.05 for every scheme)",
                   name="positive", required=True),
        "G": Ref(description="gradient bound used by designs and truncation (20, 5, 0.5)",
                 name="positive", required=True),
        "kappa": Num(description="design heterogeneity constant (0.01)", minimum=0, required=True),
        "T_max_s": Ref(description="digital average round-latency budget (0.25 s)",
                       name="positive"),
        "offset_only_curves": ListOf(description="curves left out of the panel itself and run only"
                                                 " in its SNR-offset copies: their design leaves "
                                                 "no device transmitting at the panel's SNR "
                                                 "(NoTransmissionError)", items=Str(), unique=True,
                                     default=[]),
        "tuning": Ref(description="step-size and baseline search per profile", name="tuning",
                      required=True),
        "curves": MapOf(description="curve name -> its scheme and the scheme's parameters",
                        values=Ref(name="biased_fl_curve"), key_pattern="^[a-z][a-z0-9_]*$",
                        min_properties=1, required=True),
        "scale": ByProfile(description="trials and evaluation schedule per profile",
                           of=Ref(name="biased_fl_scale"), always=True, required=True)}),
    "biased_fl": Obj(description="the Biased FL paper's setting and panels", fields={
        "problem": Obj(description="the learning problem (softmax regression, Sec. V)",
                       required=True, fields={
            "dataset": Enum(description="training and test set (the paper: MNIST)",
                            values=("mnist", "fashion_mnist"), required=True),
            "per_class": Int(description="first n training images of each class (100)", minimum=1,
                             required=True),
            "mu": Ref(description="L2 regulariser inside the loss (0.01)", name="positive",
                      required=True),
            "test_subset": ByProfile(description="evaluate on the first n test images (null: all "
                                                 "10,000)", of=Int(minimum=1, nullable=True),
                                     always=True, required=True)}),
        "radio": Obj(description="the radio setting of Sec. V (both OTA and digital)",
                     required=True, fields={
            "num_devices": Int(description="one class per device", minimum=1, maximum=10,
                               required=True),
            "power_dbm": Num(description="transmit power P_tx, dBm (the paper: 0 dBm; E_s = P/B)",
                             required=True),
            "n0_dbm_per_hz": Num(description="noise power spectral density N0 at the PS, dBm/Hz "
                                             "(the paper: -161)", required=True),
            "bandwidth_hz": Ref(description="bandwidth B, Hz (the paper: 1 MHz)", name="positive",
                                required=True),
            "pl0_db": Num(description="path loss at the 1 m reference distance, dB (the paper: 50)",
                          required=True),
            "exponent": Ref(description="log-distance path-loss exponent (the paper: 2.2)",
                            name="positive", required=True),
            "placement": Enum(description="quantile: r_m = rho_max sqrt((m - 0.5)/N), device m at "
                                          "the m-th radius; uniform: seeded uniform in the disc",
                              values=("quantile", "uniform"), required=True),
            "snr_offset_db": Num(description="multiplies E_s by 10^(offset/10), dB (0: the "
                                             "paper's literal E_s = P/B)",
                                 required=True),
            "ota_noise": Enum(description="OTA receiver noise per real entry, passed to every OTA "
                                          "curve: real_full: N(0, N0); real_part: the real part "
                                          "of the CN(0, N0) noise of paper eq. 6, N(0, N0/2)",
                              values=("real_full", "real_part"), default="real_full")}),
        "fig2a": Ref(description="Fig. 2(a): the OTA design variants (opt, nv, zb)",
                     name="biased_fl_panel", required=True),
        "fig2b": Ref(description="Figs. 2(b, c): the optimised OTA design against OTA baselines",
                     name="biased_fl_panel", required=True),
        "fig3a": Ref(description="Fig. 3(a): the digital design variants (opt, zb_opt, zb_qnv)",
                     name="biased_fl_panel", required=True),
        "fig3b": Ref(description="Figs. 3(b, c): the optimised digital design against digital "
                                 "baselines", name="biased_fl_panel", required=True),
        "snr_sensitivity": Obj(description="the variant panels (2(a), 3(a)) again at E_s x "
                                           "10^(offset/10)", required=True, fields={
            "snr_offsets_db": ListOf(description="SNR offsets, dB, each a copy of the panels",
                                     items=Num(), min_items=1, required=True),
            "sota_trials": ByProfile(description="trials of Figs. 2(b,c)/3(b,c) at +30 and +60 dB "
                                                 "(schedule and step-size search: the panel's)",
                                     of=Int(minimum=1), always=True, required=True),
            "tuning": Ref(description="step-size search of the offset copies per profile",
                          name="tuning", required=True),
            "scale": ByProfile(description="trials and evaluation schedule of the offset copies",
                               of=Ref(name="biased_fl_scale"), always=True, required=True)})}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)
