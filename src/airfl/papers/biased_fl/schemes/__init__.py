"""Biased FL's schemes: the proposed OTA scheme and the round primitives its baselines share
(ota), the six OTA baselines of Fig. 2(b,c) (ota_baselines), the proposed digital scheme and
what its baselines share (digital), the six digital baselines of Fig. 3(b,c)
(digital_baselines), and every scheme's declared parameters (params)."""
