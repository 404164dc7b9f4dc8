"""The generic schemes' parameters, declared once (airfl.params.declare): each kind may be the `scheme`
of a curve in any training experiment's `curves` (`DECLARATION.curve_schemes`, assembled into
`$defs.curve`), and `AUDIT` is params.yaml `audit.generic`, the settings of this wing's audited
DP mechanisms (a list is a grid). A light module (stdlib only): every job validates
params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import ByProfile, Declaration, Int, ListOf, Num, Obj, OneOf, Ref

# a positive number, or a list of them (a grid: one audit each)
_POSITIVE_OR_GRID = (Ref(name="positive"), ListOf(items=Ref(name="positive"), min_items=1))

DECLARATION = Declaration(curve_schemes={
    "ideal_fedavg": Obj(),
    "ota_truncated_inversion": Obj(fields={
        "snr_db": Num(description="mean receive SNR E_s Lambda_edge / N0 of a device at the cell "
                                  "edge", required=True),
        "truncation_threshold": Ref(description="a device transmits iff |h|^2 >= threshold * "
                                                "Lambda_edge", name="positive", required=True),
        "clip_norm": Ref(description="L2 clip C of every update before transmission",
                         name="positive", required=True)}),
    "digital_quantized": Obj(fields={
        "snr_db": Num(description="mean receive SNR E_s Lambda_edge / N0 of a device at the cell "
                                  "edge, dB", required=True),
        "bits": Int(description="bits r per coordinate of the unbiased stochastic quantizer "
                                "(payload 64 + d r bits)", minimum=1, maximum=32, required=True),
        "rate_bps_hz": Ref(description="fixed transmission rate R, bit/s/Hz; a slot is lost when "
                                       "log2(1 + SNR) < R", name="positive", required=True)}),
    "gaussian_dp": Obj(fields={
        "noise_multiplier": Ref(description="noise multiplier z: the server adds N(0, (z C)^2 I) "
                                            "to the sum of clipped updates", name="positive",
                                required=True),
        "clip_norm": Ref(description="L2 clip C of every update", name="positive",
                         required=True),
        "sampling_rate": Ref(description="probability q that a device takes part in a round "
                                         "(Poisson sampling)", name="probability", required=True),
        "delta": Ref(description="delta of the (eps, delta) reported", name="dp_delta",
                     required=True)}),
})

AUDIT = Obj(description="settings of the generic schemes audited (a curve's parameters; a list is "
                        "a grid).", fields={
    "gaussian_dp": Obj(description="DP-FedAvg's Gaussian mechanism (a curve's gaussian_dp "
                                   "parameters)", required=True, fields={
        "noise_multiplier": OneOf(description="noise multiplier z (a list: one audit each)",
                                  options=_POSITIVE_OR_GRID, required=True),
        "clip_norm": Ref(description="L2 clip C", name="positive", required=True),
        "sampling_rate": Ref(description="participation probability q", name="probability",
                             required=True),
        "delta": Ref(description="delta at which the audit's epsilon is compared", name="dp_delta",
                     required=True),
        "num_devices": Int(description="devices N of the audited round", minimum=2,
                           required=True),
        "multi_round": Obj(description="the T-round audit (q = 1 only); T = the quick baselines' "
                                       "round count", fields={
            "noise_multiplier": OneOf(description="noise multiplier z of the T-round audit (a "
                                                  "list: one audit each)",
                                      options=_POSITIVE_OR_GRID, required=True),
            "rounds": ByProfile(description="releases summed per draw; a number or {quick, paper}",
                                of=Int(minimum=1), required=True),
            "draws": ByProfile(description="draws per neighbour; a number or {quick, paper}",
                               of=Int(minimum=100), required=True)})}),
    "ota_truncated_inversion": Obj(description="over-the-air FedAvg's receiver noise as a DP "
                                               "mechanism (a curve's ota_truncated_inversion "
                                               "parameters)", required=True, fields={
        "snr_db": OneOf(description="edge SNR, dB (a list: one audit each)",
                        options=(Num(), ListOf(items=Num(), min_items=1)), required=True),
        "truncation_threshold": Ref(description="a device transmits iff |h|^2 >= threshold * "
                                                "Lambda_edge", name="positive", required=True),
        "clip_norm": Ref(description="L2 clip C", name="positive", required=True),
        "delta": Ref(description="delta at which the audit's epsilon is compared", name="dp_delta",
                     required=True),
        "num_devices": Int(description="devices N of the audited round", minimum=2,
                           required=True),
        "dim": Int(description="model dimension d of the audited release", minimum=1,
                   required=True)}),
})
