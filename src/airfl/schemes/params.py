"""The generic schemes' parameters, declared once (airfl.declare): each kind may be the `scheme`
of a curve in any training experiment's `curves` (`DECLARATION.curve_schemes`, assembled into
`$defs.curve`), and `AUDIT` is params.yaml `audit.generic`, the settings of this wing's audited
DP mechanisms (a list is a grid). A light module (stdlib only): every job validates
params.yaml.
"""

from __future__ import annotations

from airfl.declare import ByProfile, Declaration, Int, ListOf, Num, Obj, OneOf, Ref

_POSITIVE = Ref(name="positive", required=True)
_PROBABILITY = Ref(name="probability", required=True)
_DP_DELTA = Ref(name="dp_delta", required=True)
_POSITIVE_OR_GRID = OneOf(options=(Ref(name="positive"),
                                   ListOf(items=Ref(name="positive"), min_items=1)), required=True)

DECLARATION = Declaration(curve_schemes={
    "ideal_fedavg": Obj(),
    "ota_truncated_inversion": Obj(fields={
        "snr_db": Num(description="mean receive SNR E_s Lambda_edge / N0 of a device at the cell "
                                  "edge", required=True),
        "truncation_threshold": Ref(description="a device transmits iff |h|^2 >= threshold * "
                                                "Lambda_edge", name="positive", required=True),
        "clip_norm": _POSITIVE}),
    "digital_quantized": Obj(fields={
        "snr_db": Num(required=True),
        "bits": Int(minimum=1, maximum=32, required=True),
        "rate_bps_hz": _POSITIVE}),
    "gaussian_dp": Obj(fields={
        "noise_multiplier": _POSITIVE,
        "clip_norm": _POSITIVE,
        "sampling_rate": _PROBABILITY,
        "delta": _DP_DELTA}),
})

AUDIT = Obj(description="settings of the generic schemes audited (a curve's parameters; a list is "
                        "a grid).", fields={
    "gaussian_dp": Obj(required=True, fields={
        "noise_multiplier": _POSITIVE_OR_GRID,
        "clip_norm": _POSITIVE,
        "sampling_rate": _PROBABILITY,
        "delta": _DP_DELTA,
        "num_devices": Int(minimum=2, required=True),
        "multi_round": Obj(description="the T-round audit (q = 1 only); T = the quick baselines' "
                                       "round count", fields={
            "noise_multiplier": _POSITIVE_OR_GRID,
            "rounds": ByProfile(description="releases summed per draw; a number or {quick, paper}",
                                of=Int(minimum=1), required=True),
            "draws": ByProfile(description="draws per neighbour; a number or {quick, paper}",
                               of=Int(minimum=100), required=True)})}),
    "ota_truncated_inversion": Obj(required=True, fields={
        "snr_db": OneOf(options=(Num(), ListOf(items=Num(), min_items=1)), required=True),
        "truncation_threshold": _POSITIVE,
        "clip_norm": _POSITIVE,
        "delta": _DP_DELTA,
        "num_devices": Int(minimum=2, required=True),
        "dim": Int(minimum=1, required=True)}),
})
