"""Every Biased FL scheme's parameters, declared once as JSON schema fragments (draft 2020-12, one
per kind): the schemes fill their defaults from here, and the wing's params schema generates
`$defs.biased_fl_curve` from them (`curve_schema`). A light module (no torch): every job
validates params.yaml.
"""

from __future__ import annotations

from typing import Any

# ----- OTA schemes (schemes_ota.py, schemes_ota_baselines.py) ---------------------------------


_POS = {"type": "number", "exclusiveMinimum": 0}
_G = {**_POS, "description": "gradient-norm bound G_max used in the design and truncation rule"}
_ETA = {**_POS, "default": 0.05, "description": "learning step size eta entering the design"}
_MU = {**_POS, "default": 0.01, "description": "strong-convexity constant mu"}


_BBFL = {
    "radius_m": {**_POS, "description": "disc radius rho_max (m)"},
    "rho_in_frac": {**_POS, "maximum": 1, "default": 0.7},
    "g_th": {**_POS, "default": 0.1,
             "description": "power-cutoff threshold of [16] on the path-loss-normalised fading "
                            "|h|^2/Lambda: a scheduled device transmits iff it is >= g_th, "
                            "probability exp(-g_th) for every device [A: value not in the paper]"},
    "power_constraint": {"enum": ["average", "peak"], "default": "average",
                         "description": "average: [16]'s average-energy constraint, receive level "
                                        "min_S qbar / E1(g_th); peak: every transmission within "
                                        "d E_s when ||g|| <= G, receive level g_th min_S qbar"},
}


def _ota_kind(required: list[str], properties: dict[str, dict]) -> dict:
    return {"additionalProperties": False, "required": ["G", *required],
            "properties": {"scheme": {}, "G": _G, **properties}}


OTA_PARAMS: dict[str, dict] = {
    "biased_ota": _ota_kind([], {
        "variant": {"enum": ["opt", "nv", "zb"], "default": "opt",
                    "description": "opt: SCA (eq. 21); nv: min noise variance (eq. 22); zb: zero bias"},
        "eta": _ETA, "mu": _MU,
        "kappa": {"type": "number", "minimum": 0, "default": 0.01,
                  "description": "data-heterogeneity constant kappa of the bias term"},
        "sca_max_iter": {"type": "integer", "minimum": 1, "default": 200},
        "sca_tol": {**_POS, "default": 1.0e-9, "description": "relative change of the true Psi"},
        "sca_solver": {"enum": ["CLARABEL", "SCS"], "default": "CLARABEL"},
        "diameter": {**_POS, "description": "D of Theorem 1; when given, the design reports the "
                                            "init term at t = rounds"},
    }),
    "opc_ota_comp": _ota_kind([], {}),
    "lcpc_ota_comp": _ota_kind([], {}),
    "opc_ota_fl": _ota_kind([], {
        "kappa_peak": {**_POS, "default": 4.0, "description": "peak/average energy ratio"},
        "eta0_grid": {"type": "integer", "minimum": 2, "default": 60},
        "eta": _ETA, "mu": _MU,
    }),
    "vanilla_ota_fl": _ota_kind([], {}),
    "bbfl_interior": _ota_kind(["radius_m"], _BBFL),
    "bbfl_alternative": _ota_kind(["radius_m"], {
        **_BBFL,
        "q_alt": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                  "description": "probability of scheduling all devices in a round"},
    }),
}


# ----- digital schemes (schemes_digital.py, schemes_digital_baselines.py) ---------------------


_K = {"type": "integer", "minimum": 1, "default": 5,
      "description": "devices scheduled per round (spec §6.5 quick default 5)"}
_RMAX = {"type": "integer", "minimum": 1, "maximum": 16, "default": 16,
         "description": "largest bit width per entry (paper §V-D: r <= 16)"}
_LAT_FIXED = {"enum": ["capacity_on_success", "fixed_rate", "capacity"],
              "default": "capacity_on_success",
              "description": "capacity_on_success: L/(B C_t) when decoded (paper §V-D), L/(B R) "
                             "on outage [A]; fixed_rate: L/(B R) always; capacity: L/(B C_t) always"}
_BUDGET = {
    "T_BC_s": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
               "description": "per-round budget; null: median over Monte-Carlo draws of the time K "
                              "best-channel devices need for r_max bits (spec §6.4-1 [A])"},
    "mc_draws": {"type": "integer", "minimum": 1, "default": 4000,
                 "description": "Monte-Carlo channel draws of the T_BC rule"},
    "design_seed": {"type": "integer", "minimum": 0, "default": 0,
                    "description": "seed of the T_BC draws: numpy_generator(design_seed, design_key, "
                                   "'trial', trial, 'design')"},
    "design_key": {"type": "string", "default": "biased_fl_digital"},
}


def _digital_kind(kind: str, properties: dict[str, dict]) -> dict:
    return {"type": "object", "additionalProperties": False, "required": [],
            "properties": {"scheme": {"const": kind}, **properties}}


DIGITAL_PARAMS: dict[str, dict] = {
    "biased_digital": _digital_kind("biased_digital", {
        "variant": {"enum": ["opt", "zb_opt", "zb_qnv"], "default": "opt",
                    "description": "opt: SCA (24); zb_opt: zero bias; zb_qnv: zero-bias min "
                                   "quantization noise (spec §5.6)"},
        "G": {**_POS, "default": 0.5, "description": "G_max in the design (paper Fig. 3: 50 kappa)"},
        "eta": {**_POS, "default": 0.05, "description": "step size eta entering Psi"},
        "mu": {**_POS, "default": 0.01},
        "kappa": {"type": "number", "minimum": 0, "default": 0.01},
        "T_max_s": {**_POS, "default": 0.25, "description": "average round-latency budget (23b)"},
        "r_max": _RMAX,
        "sca_max_iter": {"type": "integer", "minimum": 1, "default": 200},
        "sca_tol": {**_POS, "default": 1.0e-9,
                    "description": "relative decrease of the true relaxed objective"},
        "sca_solver": {"enum": ["CLARABEL", "SCS"], "default": "CLARABEL"},
        "latency_mode": {"enum": ["capacity", "fixed_rate"], "default": "capacity",
                         "description": "errata 1: capacity L/(B C_t) (default) or L/(B R_m)"},
    }),
    "best_channel": _digital_kind("best_channel", {"K": _K, "r_max": _RMAX, **_BUDGET}),
    "best_channel_norm": _digital_kind("best_channel_norm", {
        "K": _K, "K_prime": {"type": "integer", "minimum": 1, "default": 7,
                             "description": "best-channel pre-selection size, K <= K' <= N"},
        "r_max": _RMAX, **_BUDGET}),
    "proportional_fairness": _digital_kind("proportional_fairness", {
        "K": _K, "T_PF_s": {**_POS, "default": 0.5, "description": "per-round budget"},
        "r_max": _RMAX}),
    "uqos": _digital_kind("uqos", {
        "K": _K, "R": {**_POS, "default": 0.2, "description": "common fixed rate (bit/s/Hz)"},
        "r_U": {"type": "integer", "minimum": 1, "maximum": 16, "default": 8},
        "latency_mode": _LAT_FIXED}),
    "qml": _digital_kind("qml", {
        "K": _K, "eps0_rel": {**_POS, "default": 0.01, "description": "eps_0 = eps0_rel G^2"},
        "G": {**_POS, "default": 0.5}, "r_max": _RMAX}),
    "fedtoe": _digital_kind("fedtoe", {
        "K": _K, "p_out": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                           "default": 0.1, "description": "common outage probability"},
        "T_TOE_s": {**_POS, "default": 0.5, "description": "per-round budget"},
        "r_max": _RMAX, "latency_mode": _LAT_FIXED}),
}


PARAMS_SCHEMA: dict[str, dict] = {**OTA_PARAMS, **DIGITAL_PARAMS}
PANEL_DEFAULTS = ("G", "kappa", "eta", "T_max_s", "radius_m")


def curve_schema() -> dict[str, Any]:
    """The JSON schema of one Biased FL curve in params.yaml: one if/then per scheme kind, from
    PARAMS_SCHEMA; keys the panel or the problem supplies are optional there."""
    supplied = {*PANEL_DEFAULTS, "mu", "design_seed", "design_key"}
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
