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

What it costs Snakemake's start (every run and dry run asks for every job's priority): a
training job's cost reads its experiment's composed block, shared with the rules
(`dag.Context.block`, passed as `blocks`) rather than composed again per job; an audit job's
cost builds its wing's audit points (a torch import and, for CDPB, 14 mechanisms: ~1-3 s of
CPU for the 8 audit jobs), so its seconds are kept in `.snakemake/airfl_audit_costs.json`
(only where Snakemake's folder exists, as `code_deps` keeps its imports) under a key of
everything they follow from: the job, the run's params, the unit-cost table's bytes, the code of
the audit stage and its wing (the digest Snakemake's rules rerun it by) and of the plan's cost
modules. A changed input is a new key, so a kept value is never stale; a cold start costs them
once.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, Callable, Mapping

__all__ = ["JobPriorities", "AUDIT_CACHE"]

#: where Snakemake keeps its own state; the audit jobs' seconds are only kept where it exists
AUDIT_CACHE = Path(".snakemake") / "airfl_audit_costs.json"


class JobPriorities:
    """Each job's Snakemake priority, its planned core-seconds rounded (`priority`), for one
    run's params; each job costed once (Snakemake asks per job, at most a few times).
    `blocks`: an experiment's composed block at these params (`dag.Context.block`);
    `code_digest`: a job's code digest (`dag.Context.code_digest`), which keys the kept audit
    costs (without it, audit jobs are costed every time)."""

    def __init__(self, params: dict[str, Any], units_path: Path | str,
                 blocks: Callable | None = None, code_digest: Callable | None = None):
        from airfl.pipeline.unit_costs import UnitCosts

        self.params = params
        path = Path(units_path)
        self.units = UnitCosts.load(path) if path.exists() else None
        self._units_digest = hashlib.sha256(path.read_bytes()).hexdigest() \
            if self.units is not None else None
        self.blocks = blocks
        self.code_digest = code_digest
        self._seconds: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._params_digest: str | None = None

    def seconds(self, rule: str, wildcards: Mapping[str, Any]) -> float:
        """The job's planned CPU seconds on one thread (0: a collect target, which runs
        nothing, or no unit costs)."""
        from airfl.pipeline.cost_guard import light_cost, planned_job

        key = (rule, tuple((str(k), str(v)) for k, v in wildcards.items()))
        if key not in self._seconds:
            job = planned_job(rule, dict(key[1])) if self.units is not None else None
            if job is None:
                self._seconds[key] = 0.0
            elif job.stage == "audit" and self.code_digest is not None:
                self._seconds[key] = self._kept_audit(job)
            else:
                self._seconds[key] = light_cost(job, self.params, self.units,
                                                self.blocks).core_s
        return self._seconds[key]

    def priority(self, rule: str, wildcards: Mapping[str, Any]) -> int:
        """The job's Snakemake priority: its planned seconds, rounded."""
        return int(round(self.seconds(rule, wildcards)))

    def _kept_audit(self, job) -> float:
        """An audit job's planned seconds, from the kept ones when its key is there (module
        docstring), else costed and kept."""
        from airfl.pipeline.cost_guard import light_cost

        key = hashlib.sha256(json.dumps([
            job.stage, list(job.args), self._params_hash(), self._units_digest,
            self.code_digest(job.stage, tuple(job.args)), _cost_code_digest()]).encode()
        ).hexdigest()
        kept = _read_kept()
        if key not in kept:
            kept[key] = light_cost(job, self.params, self.units, self.blocks).core_s
            _keep(kept)
        return float(kept[key])

    def _params_hash(self) -> str:
        if self._params_digest is None:
            from airfl.runtime.io import json_form

            text = json.dumps(json_form(self.params), sort_keys=True, separators=(",", ":"))
            self._params_digest = hashlib.sha256(text.encode()).hexdigest()
        return self._params_digest


@cache
def _cost_code_digest() -> str:
    """A digest of the plan's cost modules (how an audit job's seconds are computed), read
    without importing them (the audit stage's module imports what a dry run need not)."""
    from importlib.util import find_spec

    text = b"".join(Path(find_spec(f"airfl.pipeline.{name}").origin).read_bytes()
                    for name in ("audit_cost", "cost_guard", "plan", "unit_costs",
                                 "train_cost", "stages.audit"))
    return hashlib.sha256(text).hexdigest()


def _read_kept() -> dict[str, float]:
    try:
        kept = json.loads(AUDIT_CACHE.read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _keep(kept: dict[str, float]) -> None:
    """Write the kept audit seconds where Snakemake's folder exists (atomically)."""
    if AUDIT_CACHE.parent.is_dir():
        from airfl.runtime.io import atomic_path

        with atomic_path(AUDIT_CACHE) as tmp:
            tmp.write_text(json.dumps(kept, sort_keys=True))
