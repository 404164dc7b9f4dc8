"""The claims of DP as a perk: on the analytic figures (analytic) and on the training
figures (training)."""
