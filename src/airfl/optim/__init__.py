"""Reusable solvers shared by the wings' designs (the SCA loop)."""
