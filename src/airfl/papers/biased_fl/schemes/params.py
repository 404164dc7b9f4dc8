"""Every Biased FL scheme's parameters, declared once (airfl.params.declare, one `Obj` per kind): the
schemes fill their defaults from here, and the wing's params schema generates
`$defs.biased_fl_curve` from them (`curve_schema`). `OTA_PARAMS` / `DIGITAL_PARAMS` /
`PARAMS_SCHEMA` are the JSON schemas (draft 2020-12) the declarations generate, one per kind, as
the schemes validate with. A light module (no torch): every job validates params.yaml.
"""

from __future__ import annotations

from typing import Any

from airfl.params.declare import Enum, Int, Num, Obj, Str

# ----- OTA schemes (ota.py, ota_baselines.py) ----------------------------------------------------


_G = Num(description="gradient-norm bound G_max used in the design and truncation rule", gt=0,
         required=True)
_ETA = Num(description="learning step size eta entering the design", gt=0, default=0.05)
_MU = Num(description="strong-convexity constant mu", gt=0, default=0.01)
_OTA_NOISE = Enum(description="receiver noise per real entry (paper eq. 6: z_t ~ CN(0, N0 I), the "
                              "gradient real): real_full: N(0, N0), the d N0/alpha^2 of Lemma 1 "
                              "(our default reading); real_part: the PS keeps Re(y_t), N(0, N0/2), "
                              "half the noise power. The designs use N0 either way",
                  values=("real_full", "real_part"), default="real_full")
_SCA_MAX_ITER = Int(description="most SCA iterations of the design", minimum=1, default=200)
_SCA_SOLVER = Enum(description="convex solver (cvxpy) of each SCA step",
                   values=("CLARABEL", "SCS"), default="CLARABEL")

_BBFL = {
    "radius_m": Num(description="disc radius rho_max (m)", gt=0, required=True),
    "rho_in_frac": Num(description="BB-FL's interior radius rho_in as a fraction of rho_max: "
                                   "devices within it form S_in", gt=0, maximum=1, default=0.7),
    "g_th": Num(description="power-cutoff threshold of [16] on the path-loss-normalised fading "
                            "|h|^2/Lambda: a scheduled device transmits iff it is >= g_th, "
                            "probability exp(-g_th) for every device (value not in the paper: ours)",
                gt=0, default=0.1),
    "power_constraint": Enum(description="average: [16]'s average-energy constraint, receive "
                                         "level min_S qbar / E1(g_th); peak: every transmission "
                                         "within d E_s when ||g|| <= G, receive level g_th "
                                         "min_S qbar",
                             values=("average", "peak"), default="average"),
}


def _ota(**fields) -> Obj:
    return Obj(fields={"G": _G, "ota_noise": _OTA_NOISE, **fields})


OTA_KINDS: dict[str, Obj] = {
    "biased_ota": _ota(
        variant=Enum(description="opt: SCA (eq. 21); nv: min noise variance (eq. 22); zb: zero "
                                 "bias", values=("opt", "nv", "zb"), default="opt"),
        eta=_ETA, mu=_MU,
        kappa=Num(description="data-heterogeneity constant kappa of the bias term", minimum=0,
                  default=0.01),
        sca_max_iter=_SCA_MAX_ITER,
        sca_tol=Num(description="relative change of the true Psi", gt=0, default=1.0e-9),
        sca_solver=_SCA_SOLVER,
        diameter=Num(description="D of Theorem 1; when given, the design reports the init term "
                                 "at t = rounds", gt=0)),
    "opc_ota_comp": _ota(),
    "lcpc_ota_comp": _ota(),
    "opc_ota_fl": _ota(
        kappa_peak=Num(description="peak/average energy ratio", gt=0, default=4.0),
        eta0_grid=Int(description="points of the grid searched for the receive scaling eta0",
                      minimum=2, default=60),
        eta=_ETA, mu=_MU),
    "vanilla_ota_fl": _ota(),
    "bbfl_interior": _ota(**_BBFL),
    "bbfl_alternative": _ota(**_BBFL, q_alt=Num(
        description="probability of scheduling all devices in a round", minimum=0, maximum=1,
        default=0.5)),
}


# ----- digital schemes (digital.py, digital_baselines.py) ----------------------------------------


_POS = {"gt": 0}
_K = Int(description="devices scheduled per round (our default 5; searched in the paper profile)", minimum=1,
         default=5)
_RMAX = Int(description="largest bit width per entry (paper §V-D: r <= 16)", minimum=1,
            maximum=16, default=16)
_LAT_FIXED = Enum(description="capacity_on_success: L/(B C_t) when decoded (paper §V-D), L/(B R) "
                              "on outage (our reading); fixed_rate: L/(B R) always; capacity: L/(B C_t) "
                              "always", values=("capacity_on_success", "fixed_rate", "capacity"),
                  default="capacity_on_success")
_BUDGET = {
    "T_BC_s": Num(description="per-round latency budget, s; null: median over Monte-Carlo draws of the time "
                              "K best-channel devices need for r_max bits (our reading of paper Sec. V-D: r ~ 16)",
                  gt=0, nullable=True, default=None),
    "mc_draws": Int(description="Monte-Carlo channel draws of the T_BC rule", minimum=1,
                    default=4000),
    "design_seed": Int(description="seed of the T_BC draws: numpy_generator(design_seed, "
                                   "design_key, 'trial', trial, 'design')", minimum=0, default=0),
    "design_key": Str(description="name of the T_BC draws' random stream (the experiment id "
                                  "where the panel runs it)", default="biased_fl_digital"),
}

DIGITAL_KINDS: dict[str, Obj] = {
    "biased_digital": Obj(fields={
        "variant": Enum(description="opt: SCA (24); zb_opt: zero bias; zb_qnv: zero-bias min "
                                    "quantization noise",
                        values=("opt", "zb_opt", "zb_qnv"), default="opt"),
        "G": Num(description="G_max in the design (paper Fig. 3: 50 kappa)", **_POS, default=0.5),
        "eta": Num(description="step size eta entering Psi", **_POS, default=0.05),
        "mu": Num(description="strong-convexity constant mu", **_POS, default=0.01),
        "kappa": Num(description="data-heterogeneity constant kappa of the bias term", minimum=0,
                     default=0.01),
        "T_max_s": Num(description="average round-latency budget, s (23b)", **_POS, default=0.25),
        "r_max": _RMAX,
        "sca_max_iter": _SCA_MAX_ITER,
        "sca_tol": Num(description="relative decrease of the true relaxed objective", **_POS,
                       default=1.0e-9),
        "sca_solver": _SCA_SOLVER,
        "latency_mode": Enum(description="capacity: L/(B C_t) (default; paper Sec. V-D: capacity for all schemes) or fixed_rate: L/(B R_m)",
                             values=("capacity", "fixed_rate"), default="capacity")}),
    "best_channel": Obj(fields={"K": _K, "r_max": _RMAX, **_BUDGET}),
    "best_channel_norm": Obj(fields={
        "K": _K, "K_prime": Int(description="best-channel pre-selection size, K <= K' <= N",
                                minimum=1, default=7),
        "r_max": _RMAX, **_BUDGET}),
    "proportional_fairness": Obj(fields={
        "K": _K, "T_PF_s": Num(description="per-round latency budget, s", **_POS, default=0.5),
        "r_max": _RMAX}),
    "uqos": Obj(fields={
        "K": _K, "R": Num(description="common fixed rate (bit/s/Hz)", **_POS, default=0.2),
        "r_U": Int(description="common bit width per entry", minimum=1, maximum=16, default=8),
        "latency_mode": _LAT_FIXED}),
    "qml": Obj(fields={
        "K": _K, "eps0_rel": Num(description="eps_0 = eps0_rel G^2", **_POS, default=0.01),
        "G": Num(description="gradient-norm bound G_max of eps_0", **_POS, default=0.5),
        "r_max": _RMAX}),
    "fedtoe": Obj(fields={
        "K": _K, "p_out": Num(description="common outage probability", gt=0, lt=1, default=0.1),
        "T_TOE_s": Num(description="per-round latency budget, s", **_POS, default=0.5),
        "r_max": _RMAX, "latency_mode": _LAT_FIXED}),
}


def _kind_schema(declared: Obj, scheme: dict[str, Any], typed: bool) -> dict[str, Any]:
    """One kind's JSON schema as its scheme validates with: the declared keys plus `scheme`."""
    schema = declared.schema()
    out: dict[str, Any] = {"type": "object"} if typed else {}
    out.update({"additionalProperties": False, "required": schema.get("required", []),
                "properties": {"scheme": scheme, **schema["properties"]}})
    return out


OTA_PARAMS: dict[str, dict] = {kind: _kind_schema(declared, {}, typed=False)
                               for kind, declared in OTA_KINDS.items()}
DIGITAL_PARAMS: dict[str, dict] = {kind: _kind_schema(declared, {"const": kind}, typed=True)
                                   for kind, declared in DIGITAL_KINDS.items()}
PARAMS_SCHEMA: dict[str, dict] = {**OTA_PARAMS, **DIGITAL_PARAMS}
PANEL_DEFAULTS = ("G", "kappa", "eta", "T_max_s", "radius_m")
RADIO_DEFAULTS = ("ota_noise",)


def curve_schema() -> dict[str, Any]:
    """The JSON schema of one Biased FL curve in params.yaml: one if/then per scheme kind, from
    PARAMS_SCHEMA; keys the panel or the problem supplies are optional there."""
    supplied = {*PANEL_DEFAULTS, *RADIO_DEFAULTS, "mu", "design_seed", "design_key"}
    branches = []
    for kind, fragment in sorted(PARAMS_SCHEMA.items()):
        properties = {k: v for k, v in fragment["properties"].items() if k != "scheme"}
        then = {"additionalProperties": False, "properties": {"scheme": {}, **properties}}
        required = [k for k in fragment.get("required", []) if k not in supplied]
        if required:
            then["required"] = required
        branches.append({"if": {"properties": {"scheme": {"const": kind}}}, "then": then})
    return _sorted({"type": "object", "required": ["scheme"],
                    "properties": {"scheme": {"enum": sorted(PARAMS_SCHEMA)}}, "allOf": branches})


def _sorted(node: Any) -> Any:
    """Keys in name order at every level: the order in which validation fills a curve's defaults
    (what Snakemake compares to decide a rerun and the design records)."""
    if isinstance(node, dict):
        return {k: _sorted(node[k]) for k in sorted(node)}
    if isinstance(node, list):
        return [_sorted(v) for v in node]
    return node
