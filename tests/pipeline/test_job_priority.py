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


AUDITS = [("arena", "airfl_dp"), ("arena", "dp_fedavg"), ("cdpb", "cdpb"),
          ("dp_perk", "airfl_dp"), ("generic", "gaussian_dp"),
          ("generic", "ota_truncated_inversion"), ("lapa", "uniform_dp"), ("ota_fd", "otafd")]


def _every_papers_jobs(params):
    trains = [("train", {"paper": e.paper, "figure": e.figure, "curve": curve})
              for e in all_experiments() if e.is_enabled(params)
              for curve in list(e.params(params).get("curves", {}))[:2]]
    return trains + [("audit_mechanism", {"paper": w, "mechanism": m}) for w, m in AUDITS]


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_priorities_from_the_dags_blocks_and_kept_audit_costs_are_the_plans_own(
        at_root, tmp_path, monkeypatch, profile):
    """Snakemake's priorities read the DAG's composed blocks and keep the audit jobs' seconds in
    .snakemake (job_priority's docstring): the same priority for every job as the plan costing
    each from scratch, cold (nothing kept: costed and kept) and warm (read back, nothing costed
    again); a changed parameter is a new key, costed afresh."""
    from airfl.pipeline import dag, job_priority

    params = load_params("params.yaml", {"profile": profile})
    units = (at_root / plan.UNIT_COSTS).resolve()
    jobs = _every_papers_jobs(params)
    plain = JobPriorities(params, units)
    expected = {json.dumps([r, w]): plain.priority(r, w) for r, w in jobs}
    (tmp_path / ".snakemake").mkdir()        # the kept costs go here; the code stays at the root
    monkeypatch.setattr(job_priority, "AUDIT_CACHE", tmp_path / ".snakemake" / "costs.json")
    for state in ("cold", "warm"):
        ctx = dag.Context(params)
        shared = JobPriorities(params, units, ctx.block, ctx.code_digest)
        if state == "warm":            # a kept audit cost is read, never costed again
            monkeypatch.setattr("airfl.pipeline.audit_cost.audit_work",
                                lambda *a, **k: pytest.fail("an audit job costed again"))
        assert {json.dumps([r, w]): shared.priority(r, w) for r, w in jobs} == expected, state
        assert len(json.loads(job_priority.AUDIT_CACHE.read_text())) == len(AUDITS)
    monkeypatch.undo()
    monkeypatch.chdir(at_root)
    monkeypatch.setattr(job_priority, "AUDIT_CACHE", tmp_path / ".snakemake" / "costs.json")
    cdpb_audit = params["audit"]["cdpb"]
    more = {**params, "audit": {**params["audit"], "cdpb": {
        **cdpb_audit, "noise_variance": cdpb_audit["noise_variance"][:1]}}}
    ctx = dag.Context(more)
    fewer = JobPriorities(more, units, ctx.block, ctx.code_digest)
    cdpb = ("audit_mechanism", {"paper": "cdpb", "mechanism": "cdpb"})
    assert fewer.seconds(*cdpb) == JobPriorities(more, units).seconds(*cdpb)
    assert len(json.loads(job_priority.AUDIT_CACHE.read_text())) == len(AUDITS) + 1


def test_the_code_digest_from_the_dags_blocks_is_the_one_composed_per_job(at_root):
    from airfl.pipeline import dag

    params = load_params("params.yaml", {"profile": "quick"})
    ctx = dag.Context(params)
    for e in all_experiments():
        if not e.is_enabled(params):
            continue
        for curve in list(e.params(params).get("curves", {}))[:2]:
            for stage in ("design", "train"):
                assert ctx.code_digest(stage, (e.id, curve)) == \
                    dag.code_digest(stage, [e.id, curve], params)
