"""OTA-FD's catalogue: X1 on CNN-MNIST (x1), the training figures X2-X5 and X7 that take X1's
setting (x2_x7) and X6's closed forms (x6)."""

from airfl.papers.ota_fd.experiments.x1 import X1
from airfl.papers.ota_fd.experiments.x2_x7 import EXPERIMENTS as X2_X7
from airfl.papers.ota_fd.experiments.x6 import ANALYTIC

EXPERIMENTS = (X1,) + X2_X7
__all__ = ["ANALYTIC", "EXPERIMENTS"]
