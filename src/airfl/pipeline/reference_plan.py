"""`airfl reference-results plan-check`: the plan (`airfl plan`'s model, pipeline/plan.py)
against the CPU time of the paper-scale runs published under reference/.

A manifest records its run's command, params, machine and CPU time (`cpu_s`: every process the
run started, Snakemake's own included, `reference_results.run`). The manifests of one run (same
paper, command and date: one `publish`) share those times, so the check is per run: the jobs
the command's targets need (`plan.needed_jobs` over the paper's DAG at the manifest's profile
and `--set` overrides, planned with today's code and unit costs), their planned core-seconds
against the run's `cpu_s`, and a verdict against `FACTOR`.

Which runs compare. A run's `cpu_s` is the cost of the plan's jobs only when the run made every
one of them ("fresh"). The manifests say so: a manifest with `partial` (its reason, written by
`reference-results publish --partial` or by `run`, which records it when outputs of the
targets' jobs existed before it started and Snakemake was not told to remake them with
`-F`/`--forceall`, `reference_results.reused_outputs`) is excluded with that reason; a manifest without it is a fresh run by its
publisher's account. A run is also left out, with the reason, when it recorded no CPU time, when
its command is not a Snakemake run, when its manifests no longer match the declarations
(`reference_results.check_manifest`: the plan would price other work), or when a target is
made by no job of today's DAG (its jobs no longer exist).

What the measured side holds that the plan does not: Snakemake's own process (its DAG build,
~5 s of CPU at the paper profile for one figure's targets on the unit costs' CPU), and the jobs'
work beyond the plan's model (an analytic job is costed at its stage's fixed cost, the median
quick analytic job, whatever its figure computes).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airfl.runtime.io import read_json

FACTOR = 2.5
"""A run is within the plan when planned / measured is in [1 / FACTOR, FACTOR]: the factor the
quick-profile plan test states for a train job's measured CPU time (tests/pipeline/test_plan.py,
FACTOR_QUICK: CPU time of one thread varies ~1.5x between loads on the shared machine)."""


@dataclass
class RunCheck:
    """One published run: its figures, its recorded CPU time and what the plan says for it."""

    paper: str
    profile: str
    figures: list[str]
    command: str
    date: str
    measured_s: float | None
    planned_s: float | None = None
    jobs: int = 0
    excluded: str | None = None        # why the run is not compared (None: it is)
    by_stage: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.excluded or not self.measured_s or self.planned_s is None:
            return None
        return self.planned_s / self.measured_s

    @property
    def verdict(self) -> str:
        if self.excluded:
            return "excluded"
        ratio = self.ratio
        return "within" if 1 / FACTOR <= ratio <= FACTOR else "outside"


def runs(root: Path | None = None) -> list[tuple[list[Path], dict[str, Any]]]:
    """The published runs: (its manifests, the first one's content), grouped by paper, profile,
    command and date (one `publish` stamps all its figures alike)."""
    from airfl.pipeline.reference_results import manifests
    from airfl.pipeline.reference_layout import ROOT

    grouped: dict[str, tuple[list[Path], dict[str, Any]]] = {}
    for path in manifests(ROOT if root is None else root):
        manifest = read_json(path)
        key = json.dumps([manifest["paper"], manifest["params"]["profile"],
                          manifest["command"], manifest["date"]])
        grouped.setdefault(key, ([], manifest))[0].append(path)
    return list(grouped.values())


def command_targets(command: str, papers: list[str]) -> list[str] | None:
    """The targets of a recorded Snakemake command (the words before `--config` that are a
    path or a paper), None when the command is not a Snakemake run."""
    words = shlex.split(command)
    if not words or Path(words[0]).name != "snakemake":
        return None
    if "--config" in words:
        words = words[:words.index("--config")]
    return [w for w in words[1:] if not w.startswith("-") and ("/" in w or w in papers)]


def check_run(paths: list[Path], manifest: dict[str, Any], units,
              plans: dict[str, Any]) -> RunCheck:
    """Plan one published run's targets at its params and set it beside its CPU time (module
    docstring: what excludes a run). `plans`: params and jobs already built, shared between
    runs of one paper (`reference_results.check_manifest`'s cache)."""
    from airfl.pipeline import plan
    from airfl.pipeline.dag import paper_targets
    from airfl.pipeline.reference_results import needs_panels, check_manifest, load, paper_jobs
    from airfl.pipeline.registry import papers

    figures = sorted(read_json(p)["figure"] for p in paths)
    config = manifest["params"]
    result = RunCheck(manifest["paper"], config["profile"], figures, manifest["command"],
                      manifest["date"], manifest.get("cpu_s"))
    partial = [read_json(p).get("partial") for p in paths]
    if any(partial):
        result.excluded = f"partial run: {next(p for p in partial if p)}"
        return result
    if not result.measured_s:
        result.excluded = "no CPU time recorded"
        return result
    targets = command_targets(manifest["command"], papers())
    if not targets:
        result.excluded = "its command is not a Snakemake run of named targets"
        return result
    problems = [line for p in paths for line in check_manifest(p, dry_run=False, plans=plans)]
    if problems:
        result.excluded = f"not comparable with today's declarations: {problems[0]}"
        return result
    key = json.dumps([result.paper, needs_panels(result.paper, figures), config["profile"],
                      config.get("overrides") or {}], sort_keys=True)   # check_manifest's key
    if key not in plans:
        params = load(config["profile"], config.get("overrides"))
        plans[key] = (params, paper_jobs(result.paper, params, figures))
    params, all_jobs = plans[key]
    if any(t in papers() for t in targets):                 # a paper target: its figures
        targets = [o for t in targets for o in
                   (paper_targets(t, params) if t in papers() else [t])]
    made = {out for job in all_jobs for out in job.outs + [p.path for p in job.plots]
            + job.metrics}
    missing = [t for t in targets if t not in made]
    if missing:
        result.excluded = f"its jobs no longer exist: no job of today's DAG makes {missing[0]}"
        return result
    costs = [plan.job_cost(job, params, units) for job in plan.needed_jobs(all_jobs, targets)]
    result.planned_s = sum(c.core_s for c in costs)
    result.jobs = len(costs)
    for cost in costs:
        result.by_stage[cost.stage] = result.by_stage.get(cost.stage, 0.0) + cost.core_s
    return result


def check(root: Path | None = None, units_path: Path | str | None = None) -> list[RunCheck]:
    """Every published run, planned and compared (or excluded with its reason)."""
    from airfl.pipeline.unit_costs import UNIT_COSTS, UnitCosts

    units = UnitCosts.load(UNIT_COSTS if units_path is None else units_path)
    plans: dict[str, Any] = {}
    return [check_run(paths, manifest, units, plans) for paths, manifest in runs(root)]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} s"


def render(results: list[RunCheck]) -> str:
    """The table: per run its paper, jobs, planned and measured CPU seconds, ratio, verdict
    and figures; then each excluded run's reason."""
    lines = [f"airfl reference-results plan-check: each published run's CPU time against "
             f"the plan of its targets (today's code and unit costs); within: planned / "
             f"measured in [1/{FACTOR:g}, {FACTOR:g}]",
             f"{'paper':<10} {'profile':<7} {'jobs':>5} {'planned':>10} {'measured':>10} "
             f"{'ratio':>6} {'verdict':<9} figures"]
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        lines.append(f"{r.paper:<10} {r.profile:<7} {r.jobs or '-':>5} "
                     f"{_seconds(r.planned_s):>10} {_seconds(r.measured_s):>10} {ratio:>6} "
                     f"{r.verdict:<9} {' '.join(r.figures)}")
    for r in results:
        if r.excluded:
            lines.append(f"excluded: {r.paper} {' '.join(r.figures)}: {r.excluded}")
    compared = [r for r in results if not r.excluded]
    outside = [r for r in compared if r.verdict == "outside"]
    lines.append(f"{len(results)} runs, {len(compared)} compared, {len(outside)} outside the "
                 f"factor, {len(results) - len(compared)} excluded")
    return "\n".join(lines)


def main(strict: bool = False) -> int:
    """Print the table; exit 1 with `strict` when a compared run is outside the factor."""
    results = check()
    print(render(results))
    return 1 if strict and any(r.verdict == "outside" for r in results) else 0
