"""Job priorities from the plan's cost of each job (airfl.pipeline.job_priority)."""

from __future__ import annotations

import json

import pytest

from airfl.pipeline import plan
from airfl.pipeline.cost_guard import light_cost, planned_job
from airfl.pipeline.job_priority import JobPriorities
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import all_experiments, papers


@pytest.fixture()
def at_root(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)                # workflow/unit_costs.json, params.yaml
    return repo_root


def test_a_jobs_priority_is_its_planned_seconds(at_root):
    """The paper profile's longest planned job (DP as a perk's Fig. 3(a) vanilla curve, ~17 h)
    gets its planned seconds as priority, far above a dataset job's fixed cost; a collect
    target runs nothing and gets 0."""
    params = load_params("params.yaml", {"profile": "paper"})
    units = plan.UnitCosts.load(plan.UNIT_COSTS)
    priorities = JobPriorities(params, plan.UNIT_COSTS)
    wildcards = {"paper": "dp_perk", "figure": "fig3a", "curve": "vanilla"}
    planned = light_cost(planned_job("train", wildcards), params, units).core_s
    assert planned > 3600
    assert priorities.priority("train", wildcards) == round(planned)
    assert priorities.priority("data", {"dataset": "mnist"}) == round(units.stage("data"))
    assert priorities.priority("all", {}) == 0


def test_every_papers_training_jobs_get_a_priority_from_the_current_unit_costs(at_root,
                                                                               tmp_path):
    """Every experiment's first curve (every paper) gets a positive priority; a unit-cost table
    whose client steps cost 10x gives those jobs (~10x) higher priorities: nothing stored to go
    stale. No table: every job 0 (Snakemake's own order)."""
    params = load_params("params.yaml", {"profile": "quick"})
    jobs = [("train", {"paper": e.paper, "figure": e.figure, "curve": curve})
            for e in all_experiments()
            for curve in list(e.params(params).get("curves", {}))[:1]]
    assert {w["paper"] for _, w in jobs} >= set(papers()) - {"generic"}
    priorities = JobPriorities(params, plan.UNIT_COSTS)
    before = {json.dumps(w): priorities.seconds(rule, w) for rule, w in jobs}
    assert all(seconds > 0 for seconds in before.values()), before
    table = json.loads((at_root / plan.UNIT_COSTS).read_text())
    for model in table["models"].values():
        model["client_step_s"] = {b: 10 * s for b, s in model["client_step_s"].items()}
    dearer = tmp_path / "unit_costs.json"
    dearer.write_text(json.dumps(table))
    after = JobPriorities(params, dearer)
    assert sum(after.seconds(r, w) for r, w in jobs) > 2 * sum(before.values())
    assert JobPriorities(params, tmp_path / "none.json").priority(*jobs[0]) == 0
