"""Job priorities from measured seconds (airfl.pipeline.job_priority)."""

from __future__ import annotations

import json
import re

import pytest

from airfl.pipeline.job_priority import job_key, load_job_seconds, log_job_key, priority


def test_a_job_is_keyed_as_the_snakemake_log_names_it():
    wildcards = {"paper": "biased_fl", "figure": "fig3b_snr60", "curve": "uqos"}
    assert job_key("tune", wildcards) == "tune paper=biased_fl, figure=fig3b_snr60, curve=uqos"
    assert log_job_key("tune", "paper=biased_fl, figure=fig3b_snr60, curve=uqos") == \
        job_key("tune", wildcards)


def test_priority_is_the_measured_seconds_and_zero_when_unmeasured(tmp_path):
    path = tmp_path / "job_seconds.json"
    assert load_job_seconds(path) == {}                                    # no table: no order
    path.write_text(json.dumps({"measured": "run.log", "jobs": {"tune a=1": 594.6}}))
    seconds = load_job_seconds(path)
    assert priority(seconds, "tune", {"a": "1"}) == 595
    assert priority(seconds, "tune", {"a": "2"}) == 0 and priority(seconds, "train", {"a": "1"}) == 0
    for bad in ({"jobs": {"tune a=1": -1}}, {"jobs": ["tune a=1"]}, ["tune a=1"]):
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match="job: seconds"):
            load_job_seconds(path)


def test_the_committed_table_names_tune_and_train_jobs(repo_root):
    """workflow/job_seconds.json is benchmarks/snakemake_job_times.py --priorities of a
    paper-profile run: every key is a tune or train job with its three wildcards."""
    seconds = load_job_seconds(repo_root / "workflow" / "job_seconds.json")
    assert seconds and max(seconds.values()) > 100
    pattern = re.compile(r"^(tune|train) paper=[a-z_]+, figure=[a-z0-9_]+, curve=[a-z0-9_]+$")
    assert all(pattern.match(key) for key in seconds)
