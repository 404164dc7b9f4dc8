"""The claims of OTA-FD's training figures: X1 (x1) and X2-X5, X7 with X1's FD-vs-FL claim (x2_x7)."""
