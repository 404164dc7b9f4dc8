"""The claims of CDPB: on the analytic figures (analytic) and on the training figures
Figs. 4 and 8 (training)."""
