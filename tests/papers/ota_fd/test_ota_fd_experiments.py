"""OTA-FD's catalogue (experiments/__init__.py): every training experiment has its privacy jobs."""


import numpy as np


M, K, T, DELTA = 10, 10, 40, 1e-8
COUNTS = np.full((M, K), 2.0)
COUNTS[np.arange(M), np.arange(M) % K] = 222.0        # the quick MNIST split (222 + 9 x 2)


def test_every_training_experiment_has_privacy_jobs():
    from airfl.papers.ota_fd.experiments import EXPERIMENTS
    assert all(e.privacy for e in EXPERIMENTS)
