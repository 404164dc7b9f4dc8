"""Snakemake job priorities from measured job times: the longest jobs start first.

Why: Snakemake knows nothing of how long a job runs, and on 2
cores the Biased FL paper profile's +60 dB UQOS tune (~600 s of ~2,050 s of job walls) started
~500 s into the run, leaving one core idle for its last ~90 s. Starting the longest jobs first
(the longest-processing-time rule of list scheduling, which keeps a 2-core makespan within 7/6
of the optimum) removes that tail. The measured seconds come from a run's own Snakemake log
(benchmarks/snakemake_job_times.py --priorities), stored in workflow/job_seconds.json; a job not
listed gets 0. Priorities change only the order in which ready jobs start, never an output, so
a stale table costs time, not results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

__all__ = ["job_key", "load_job_seconds", "log_job_key", "priority"]


def log_job_key(rule: str, wildcards_line: str) -> str:
    """'<rule> <name>=<value>, ...': how a Snakemake log names a job, from its `rule` line and
    the text of its `wildcards:` line (the table's keys)."""
    return f"{rule} {wildcards_line}"


def job_key(rule: str, wildcards: Mapping[str, Any]) -> str:
    """`log_job_key` of a job's wildcards (in the order of the rule's output pattern, as the
    log prints them)."""
    return log_job_key(rule, ", ".join(f"{name}={value}" for name, value in wildcards.items()))


def load_job_seconds(path: Path | str) -> dict[str, float]:
    """{job_key: seconds} of the table at `path` (written by snakemake_job_times.py
    --priorities); empty when there is no table."""
    path = Path(path)
    if not path.exists():
        return {}
    table = json.loads(path.read_text())
    jobs = table.get("jobs") if isinstance(table, dict) else None
    if not isinstance(jobs, dict) or not all(
            isinstance(v, (int, float)) and v >= 0 for v in jobs.values()):
        raise ValueError(f"{path}: expected {{\"jobs\": {{job: seconds >= 0}}}}")
    return {str(k): float(v) for k, v in jobs.items()}


def priority(seconds: Mapping[str, float], rule: str, wildcards: Mapping[str, Any]) -> int:
    """The job's Snakemake priority: its measured seconds, rounded (0 if never measured)."""
    return int(round(seconds.get(job_key(rule, wildcards), 0.0)))
