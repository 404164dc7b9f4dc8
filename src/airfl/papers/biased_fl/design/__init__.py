"""Biased FL's designs, chosen once before training from statistical CSI: the OTA design of
Sec. IV-A (ota) and the digital design of Sec. IV-B (digital: the SCA; digital_model: the
relaxed problem's closed-form pieces; digital_surrogate: the convex surrogate (24))."""
