"""Biased FL under wireless heterogeneity (Ul Abrar, Michelusi; arXiv 2503.06078).

Spec: shared/specs/biased_fl.md (its Errata override the text). Wing contents: the problem and
reference optimum (problem.py), OTA and digital designs (ota_design.py, digital_design.py), the
proposed schemes and the twelve SOTA baselines (ota_schemes.py, digital_schemes.py).
"""
