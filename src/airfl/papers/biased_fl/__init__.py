"""Biased FL under wireless heterogeneity (Ul Abrar, Michelusi; arXiv 2503.06078).

Spec: shared/specs/biased_fl.md (its Errata override the text). Wing contents: the problem and
reference optimum (problem.py), OTA and digital designs (ota_design.py, digital_design.py), the
proposed schemes and the twelve SOTA baselines (ota_schemes.py, digital_schemes.py).
"""

from airfl.core.wing import Wing


def _curve_defs() -> dict:
    from airfl.papers.biased_fl.scheme_params import curve_schema

    return {"biased_fl_curve": curve_schema()}


_OTA, _DIGITAL = f"{__name__}.ota_schemes", f"{__name__}.digital_schemes"
WING = Wing(name="biased_fl", package=__name__, catalogue=f"{__name__}.experiments",
            schema_defs=_curve_defs, schemes={
                "biased_ota": f"{_OTA}:BiasedOta", "opc_ota_comp": f"{_OTA}:OpcOtaComp",
                "lcpc_ota_comp": f"{_OTA}:LcpcOtaComp", "bbfl_interior": f"{_OTA}:BbflInterior",
                "bbfl_alternative": f"{_OTA}:BbflAlternative",
                "vanilla_ota_fl": f"{_OTA}:VanillaOtaFl", "opc_ota_fl": f"{_OTA}:OpcOtaFl",
                "biased_digital": f"{_DIGITAL}:BiasedDigital",
                "best_channel": f"{_DIGITAL}:BestChannel",
                "proportional_fairness": f"{_DIGITAL}:ProportionalFairness",
                "best_channel_norm": f"{_DIGITAL}:BestChannelNorm", "uqos": f"{_DIGITAL}:Uqos",
                "qml": f"{_DIGITAL}:Qml", "fedtoe": f"{_DIGITAL}:FedToe"})
