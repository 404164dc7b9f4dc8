"""Biased FL under wireless heterogeneity (Ul Abrar, Michelusi; arXiv 2503.06078).

Wing contents: the problem and
reference optimum (problem.py), OTA and digital designs (design/ota.py, design/digital.py with
design/digital_model.py, design/digital_surrogate.py), the proposed schemes (schemes/ota.py,
schemes/digital.py) and the twelve SOTA baselines (schemes/ota_baselines.py,
schemes/digital_baselines.py), their parameters (schemes/params.py), the exact bit allocation of
two digital baselines (bit_allocation.py), the training figures' run blocks (run_blocks.py), the
catalogue (experiments.py) and its claims' checks (claims.py).
"""

from airfl.core.wing import Wing


def _curve_defs() -> dict:
    from airfl.papers.biased_fl.schemes.params import curve_schema

    return {"biased_fl_curve": curve_schema()}


_OTA, _DIGITAL = f"{__name__}.schemes.ota", f"{__name__}.schemes.digital"
_OTA_BASE, _DIGITAL_BASE = f"{_OTA}_baselines", f"{_DIGITAL}_baselines"
WING = Wing(name="biased_fl", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            schema_defs=_curve_defs, schemes={
                "biased_ota": f"{_OTA}:BiasedOta", "opc_ota_comp": f"{_OTA_BASE}:OpcOtaComp",
                "lcpc_ota_comp": f"{_OTA_BASE}:LcpcOtaComp", "bbfl_interior": f"{_OTA_BASE}:BbflInterior",
                "bbfl_alternative": f"{_OTA_BASE}:BbflAlternative",
                "vanilla_ota_fl": f"{_OTA_BASE}:VanillaOtaFl", "opc_ota_fl": f"{_OTA_BASE}:OpcOtaFl",
                "biased_digital": f"{_DIGITAL}:BiasedDigital",
                "best_channel": f"{_DIGITAL_BASE}:BestChannel",
                "proportional_fairness": f"{_DIGITAL_BASE}:ProportionalFairness",
                "best_channel_norm": f"{_DIGITAL_BASE}:BestChannelNorm", "uqos": f"{_DIGITAL_BASE}:Uqos",
                "qml": f"{_DIGITAL_BASE}:Qml", "fedtoe": f"{_DIGITAL_BASE}:FedToe"})
