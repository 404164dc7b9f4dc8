"""Generic schemes shared by the papers' figures (baselines any training experiment may use as a
curve's `scheme`): a wing of schemes only, found by the registry like every other wing.

params.py declares each kind's parameters (`curve_schemes`, assembled into the generic curve type
of params.yaml) and the audit settings (params.yaml `audit.generic`).
"""

from airfl.core.wing import Wing

WING = Wing(name="generic", package=__name__, params=f"{__name__}.params", schemes={
    "ideal_fedavg": f"{__name__}.ideal:IdealFedAvg",
    "ota_truncated_inversion": f"{__name__}.ota:OtaTruncatedInversion",
    "digital_quantized": f"{__name__}.digital:DigitalQuantized",
    "gaussian_dp": f"{__name__}.dp:GaussianDpFedAvg",
}, audits={"gaussian_dp": f"{__name__}.audit:gaussian_dp",
           "ota_truncated_inversion": f"{__name__}.audit:ota_truncated_inversion"},
   labels={"ideal_fedavg": "Ideal FedAvg", "ota_truncated_inversion": "OTA-FL",
           "digital_quantized": "Digital FL", "gaussian_dp": "FedAvg + DP"})
