"""Snakemake job priorities from the plan's cost of each job: the longest jobs start first.

Why: Snakemake knows nothing of how long a job runs, and on 2 cores the Biased FL paper
profile's +60 dB UQOS tune (~600 s of ~2,050 s of job walls) started ~500 s into the run,
leaving one core idle for its last ~90 s. Starting the longest jobs first (the
longest-processing-time rule of list scheduling, which keeps a 2-core makespan within 7/6 of the
optimum) removes that tail.

A job's priority is its planned CPU seconds (`airfl plan`'s model, `plan.job_cost` through the
cost guard's `light_cost`: the job known by its rule and wildcards, costed at the run's params
from the measured unit costs in workflow/unit_costs.json), so every paper's jobs get one, at the
run's profile and `--config` settings, from the unit costs as they are now: nothing to refresh
by hand, nothing to go stale. Priorities change only the order in which ready jobs start, never
an output. Without a unit-cost table every job gets 0 (Snakemake's default order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

__all__ = ["JobPriorities"]


class JobPriorities:
    """Each job's Snakemake priority, its planned core-seconds rounded (`priority`), for one
    run's params; each job costed once (Snakemake asks per job, at most a few times)."""

    def __init__(self, params: dict[str, Any], units_path: Path | str):
        from airfl.pipeline.unit_costs import UnitCosts

        self.params = params
        self.units = UnitCosts.load(units_path) if Path(units_path).exists() else None
        self._seconds: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def seconds(self, rule: str, wildcards: Mapping[str, Any]) -> float:
        """The job's planned CPU seconds on one thread (0: a collect target, which runs
        nothing, or no unit costs)."""
        from airfl.pipeline.cost_guard import light_cost, planned_job

        key = (rule, tuple((str(k), str(v)) for k, v in wildcards.items()))
        if key not in self._seconds:
            job = planned_job(rule, dict(key[1])) if self.units is not None else None
            self._seconds[key] = 0.0 if job is None else \
                light_cost(job, self.params, self.units).core_s
        return self._seconds[key]

    def priority(self, rule: str, wildcards: Mapping[str, Any]) -> int:
        """The job's Snakemake priority: its planned seconds, rounded."""
        return int(round(self.seconds(rule, wildcards)))
