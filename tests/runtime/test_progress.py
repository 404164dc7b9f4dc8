"""Progress lines in a job's log: plain lines at a readable rate, never a bar's carriage
returns (a tqdm bar in a log file is one unreadable line)."""

from __future__ import annotations

import pandas as pd

from airfl.pipeline.stages.train import summary
from airfl.runtime.progress import DEFAULT_INTERVAL_S, INTERVAL_ENV, Progress, interval_s


def test_every_step_gets_a_line_at_interval_zero(monkeypatch, capsys):
    monkeypatch.setenv(INTERVAL_ENV, "0")
    log = Progress("lapa/fig4 fedavg, trial 1", 4)
    for done in range(1, 5):
        log.update(done)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(", ")[1].split(":")[1].strip() for line in lines] == \
        ["round 1/4 (25 %)", "round 2/4 (50 %)", "round 3/4 (75 %)", "round 4/4 (100 %)"]
    assert all(line.startswith("lapa/fig4 fedavg, trial 1: round ") for line in lines)


def test_a_loop_shorter_than_the_interval_writes_nothing(monkeypatch, capsys):
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert interval_s() == DEFAULT_INTERVAL_S == 30.0
    log = Progress("x", 1000)
    for done in range(1, 1001):
        log.update(done)
    assert capsys.readouterr().err == ""


def test_a_bad_interval_falls_back_to_the_default(monkeypatch):
    for value in ("soon", "-1"):
        monkeypatch.setenv(INTERVAL_ENV, value)
        assert interval_s() == DEFAULT_INTERVAL_S


def test_the_train_summary_names_trials_rounds_and_final_metrics():
    nan = float("nan")
    frame = pd.DataFrame({"trial": [0, 0, 0, 1, 1, 1], "round": [0, 1, 2, 0, 1, 2],
                          "time_s": [0, 1, 2, 0, 1.5, 3.0],
                          "test_accuracy": [0.1, nan, 0.8, 0.1, 0.6, nan],
                          "train_loss": [2.0, 1.0, 0.5, 2.0, 1.0, 0.7]})
    assert summary(frame) == ("2 trials, 2 rounds, 2.5 s simulated, final test_accuracy 0.7 "
                              "(mean of 2), final train_loss 0.6 (mean of 2)")
