"""`airfl plan` costs an audit job by its work (points x 2 worlds x draws x releases at a
measured release-draw, plus the bound and building the points; `airfl.pipeline.plan`), checked
against audits measured here and against the draws the params declare."""

from __future__ import annotations

import time

import pytest

from airfl.pipeline import audit_cost, cost_guard, plan
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_wing
from airfl.pipeline.stages.audit import draws_of
from airfl.privacy.auditing import run_audit

# The stated factor: an audit measured here (CPU time of this process, one thread: the points
# built, every point drawn in both worlds and bounded, as the stage runs them) costs within
# FACTOR of what the plan says for its work. It allows the spread of one thread's CPU time
# between loads on this shared machine (~1.5x, benchmarks/results/unit_costs.md) and the unit
# costs' own measurement at the paper profile's settings (a quick point's release-draw differs
# by up to ~1.3x). Measured when the unit costs were written: plan / measured 1.27 (CDPB) and
# 0.88 (LAPA) for these slices; paper-profile audit jobs run whole by `airfl audit` 0.85-1.23
# (benchmarks/results/audit_costs.md).
FACTOR = 2.5
# Small slices of a loop (CDPB, one aggregation call a draw) and a batched audit (LAPA): each
# measured run takes 1-3 s here.
SLICES = {("cdpb", "cdpb"): {"audit.loop_draws.quick": 300},
          ("lapa", "uniform_dp"): {"audit.draws.quick": 300_000}}


@pytest.fixture()
def units(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    return plan.UnitCosts.load(repo_root / plan.UNIT_COSTS)


def measured_audit_s(params, wing: str, mechanism: str) -> float:
    """CPU seconds of the audit's work as the stage does it (stages.audit.run without writing):
    its points built, each drawn `draws_of` times per world and bounded."""
    factory = get_wing(wing).audit_factory(mechanism)
    factory(params)                                # warm: imports are the job's start-up
    start = time.process_time()
    for index, point in enumerate(factory(params)):
        run_audit(point, draws_of(params, point), 1000 * index, 0.05)
    return time.process_time() - start


@pytest.mark.parametrize("job", sorted(SLICES), ids=lambda j: "/".join(j))
def test_an_audit_costs_what_the_plan_says_within_the_stated_factor(units, job):
    wing, mechanism = job
    params = load_params("params.yaml", {"profile": "quick", **SLICES[job]})
    planned = audit_cost.audit_seconds(params, wing, mechanism, units)
    measured = measured_audit_s(params, wing, mechanism)
    assert 1 / FACTOR <= planned / measured <= FACTOR, (planned, measured)


@pytest.mark.parametrize("wing, mechanism, key, draws", [
    ("cdpb", "cdpb", "audit.loop_draws.paper", 100_000),         # loop draws (as declared)
    ("lapa", "uniform_dp", "audit.draws.paper", 4_000_000),      # batched draws (as declared)
    ("ota_fd", "otafd", "audit.ota_fd.draws.paper", 1_000_000),  # its own, T releases each
])
def test_an_audits_planned_cost_doubles_with_its_declared_draws(units, wing, mechanism, key,
                                                                draws):
    costs = []
    for draws in (draws, 2 * draws):
        params = load_params("params.yaml", {"profile": "paper", key: draws})
        job = plan.PlannedJob("audit", f"audit-{wing}-{mechanism}", (wing, mechanism))
        costs.append(plan.job_cost(job, params, units).core_s)
    fixed = units.stage("audit") + units.audit(f"{wing}/{mechanism}")["factory_s"]
    assert costs[1] / costs[0] > 1.5                       # the draws dominate at this scale
    assert (costs[1] - fixed) / (costs[0] - fixed) == pytest.approx(2.0, rel=0.02)


def test_a_multi_round_draw_costs_its_releases(units):
    """OTA-FD's draw sums T releases: the same draws at twice the rounds cost twice the
    release-draws."""
    costs = []
    for rounds in (30, 60):
        params = load_params("params.yaml", {"profile": "paper", "audit.ota_fd.T": rounds})
        work = audit_cost.audit_work(params, "ota_fd", "otafd")
        costs.append(work.release_draws["batched"])
    assert costs[1] == 2 * costs[0]


def test_the_paper_cdpb_audit_is_costed_at_its_scale_not_a_stage_median(units):
    """The paper profile's CDPB audit: 14 points x 2 x 100,000 aggregation calls, ~0.3-0.5 ms
    each on the measured CPU: a quarter of an hour, not the quick audit job's seconds."""
    params = load_params("params.yaml", {"profile": "paper"})
    job = plan.PlannedJob("audit", "audit-cdpb-cdpb", ("cdpb", "cdpb"))
    work = audit_cost.audit_work(params, "cdpb", "cdpb")
    assert work.release_draws == {"loop": 14 * 2 * 100_000}
    assert work.by_dim == {("loop", 300): 14 * 2 * 100_000}
    assert 600 < plan.job_cost(job, params, units).core_s < 3600


def test_the_cost_guard_costs_an_audit_rule_as_the_plan_does(units):
    params = load_params("params.yaml", {"profile": "paper"})
    job = cost_guard.planned_job("audit_mechanism", {"paper": "cdpb", "mechanism": "cdpb"})
    assert job == plan.PlannedJob("audit", "audit-cdpb-cdpb", ("cdpb", "cdpb"))
    guarded = cost_guard.light_cost(job, params, units)
    assert guarded.core_s == plan.job_cost(job, params, units).core_s > 600
    assert guarded.paper == "cdpb"


def test_the_plan_costs_a_registered_work_without_building_the_points(units, monkeypatch):
    """Where a wing registers its audit's work (the arena: designs are expensive to build),
    `airfl plan` costs it without calling the audit factory; its points sum T releases a draw."""
    from airfl.arena import audit as arena_audit
    from airfl.arena.task import settings

    def never_built(params):
        raise AssertionError("the plan built the arena's points")

    monkeypatch.setattr(arena_audit, "airfl_dp", never_built)
    params = load_params("params.yaml", {"profile": "paper"})
    work = audit_cost.audit_work(params, "arena", "airfl_dp")
    rounds = settings(params)["task"]["scale"]["rounds"]
    draws = params["audit"]["arena"]["draws"]["paper"]
    points = len(work.bound_draws)
    assert points > 1 and work.bound_draws == [2 * draws] * points
    assert work.release_draws == {"batched": 2.0 * draws * rounds * points}


def test_the_audit_stages_guard_costs_the_points_it_built_once(units, repo_root, tmp_path,
                                                               monkeypatch, capsys):
    """`airfl audit` builds its points once: its cost guard costs the points the stage built
    (as the plan costs them). Over the bound it stops with the plan's estimate and writes
    nothing; within it the job runs and writes its audit."""
    import shutil

    from airfl.cli import main
    from airfl.pipeline import paths
    from airfl.schemes import audit as generic_audit

    (tmp_path / "workflow").mkdir()
    shutil.copy(repo_root / "params.yaml", tmp_path / "params.yaml")
    shutil.copy(repo_root / plan.UNIT_COSTS, tmp_path / plan.UNIT_COSTS)
    monkeypatch.chdir(tmp_path)
    built = []
    real = generic_audit.gaussian_dp

    def counted(params):
        built.append(1)
        return real(params)

    monkeypatch.setattr(generic_audit, "gaussian_dp", counted)
    job = ["--set", "audit.draws.quick=2000", "audit", "generic", "gaussian_dp"]
    assert main(["--set", "confirm_cost_above_core_hours=0.000001", *job]) == 2
    assert "above confirm_cost_above_core_hours = 1e-06" in capsys.readouterr().err
    assert len(built) == 1 and not paths.audit("generic", "gaussian_dp").exists()
    assert main(job) == 0
    assert len(built) == 2 and paths.audit("generic", "gaussian_dp").exists()
    params = load_params("params.yaml", {"profile": "quick"})
    assert audit_cost.audit_seconds(params, "generic", "gaussian_dp", units, real(params)) \
        == audit_cost.audit_seconds(params, "generic", "gaussian_dp", units)


def test_a_cdpb_audits_plan_follows_its_model_dimension_as_the_stored_draws_by_d_say(units):
    """CDPB's draw is one aggregation call over K x d coordinates: the same audit at two d
    differs by its release-draws x the difference of the release-draws measured by d
    (`release_draw_by_dim`, interpolated between the measured d), the rest of its cost alike."""
    from airfl.pipeline.unit_costs import release_draw_at

    by_dim = units.audit("cdpb/cdpb")["release_draw_by_dim"]["loop"]
    job = plan.PlannedJob("audit", "audit-cdpb-cdpb", ("cdpb", "cdpb"))
    costs = {}
    for dim in (300, 20_000):
        params = load_params("params.yaml", {"profile": "paper", "audit.cdpb.dim": dim})
        costs[dim] = plan.job_cost(job, params, units).core_s
    draws = 14 * 2 * 100_000
    expected = draws * (release_draw_at(by_dim, 20_000) - release_draw_at(by_dim, 300))
    assert costs[20_000] - costs[300] == pytest.approx(expected, rel=1e-9)
    assert costs[20_000] > 10 * costs[300]           # ~30 ms a draw at 20,000, ~0.3 ms at 300


def test_release_draw_at_interpolates_between_the_measured_dimensions():
    from airfl.params.config import ConfigError
    from airfl.pipeline.unit_costs import release_draw_at

    by_dim = {"dims": [1000, 100, 10_000], "release_draw_s": [2.0, 1.0, 20.0]}
    assert release_draw_at(by_dim, 1000) == 2.0                  # exact at a measured d
    assert release_draw_at(by_dim, 550) == pytest.approx(1.5)    # between 100 and 1,000
    assert release_draw_at(by_dim, 19_000) == pytest.approx(38.0)  # the last segment's line
    assert release_draw_at(by_dim, 10) == 1.0                    # never below the smallest d's
    with pytest.raises(ConfigError, match="needs >= 2 measured d"):
        release_draw_at({"dims": [300], "release_draw_s": [1.0]}, 300)


def test_only_cdpbs_audit_points_cost_with_the_model_dimension():
    """Of every registered audit (quick profile), only CDPB's loop draw runs an aggregation
    call over the model's d coordinates; every batched draw is one coordinate of a release as
    wide as the batch, and the generic DP-FedAvg loop draw (q < 1) a 2-coordinate release."""
    from airfl.pipeline.registry import wings

    params = load_params("params.yaml", {"profile": "quick"})
    with_dim = {f"{wing.name}/{name}" for wing in wings() for name in wing.audits
                if any(work.dim is not None for work in audit_cost_works(params, wing, name))}
    assert with_dim == {"cdpb/cdpb"}


def audit_cost_works(params, wing, name):
    cheap = wing.audit_work_function(name)
    return cheap(params) if cheap is not None else \
        [point.work() for point in wing.audit_factory(name)(params)]


#: `measured_audit_s` in a fresh interpreter, as an audit job runs: above d ~ 1,000 a draw's
#: cost depends on the allocator's state (its K x d temporaries are mapped and faulted in a
#: draw in a fresh process, reused after larger ones), which this test process's history sets.
FRESH = """
import sys
from airfl.pipeline.params import load_params
sys.path.insert(0, "tests/pipeline")
from test_plan_audits import measured_audit_s
params = load_params("params.yaml", {overrides!r})
print(measured_audit_s(params, "cdpb", "cdpb"))
"""


def test_a_cdpb_audit_at_another_d_costs_what_the_plan_says_within_the_stated_factor(units):
    """A quick CDPB audit slice at d = 2,000 (not a measured d: between 1,000 and 3,000),
    measured in a fresh process against its plan, within FACTOR (~6 s; measured when the
    draws by d were written: paper profile, 500 loop draws, planned 35.0 s, measured 33.5 s)."""
    import subprocess
    import sys

    overrides = {"profile": "quick", "audit.loop_draws.quick": 200, "audit.cdpb.dim": 2000}
    planned = audit_cost.audit_seconds(load_params("params.yaml", overrides), "cdpb", "cdpb",
                                       units)
    out = subprocess.run([sys.executable, "-c", FRESH.format(overrides=overrides)], check=True,
                         capture_output=True, text=True).stdout
    measured = float(out.strip().splitlines()[-1])
    assert 1 / FACTOR <= planned / measured <= FACTOR, (planned, measured)


def test_a_point_growing_with_d_without_draws_by_d_stops_the_plan(units):
    from airfl.params.config import ConfigError

    del units.audits["cdpb/cdpb"]["release_draw_by_dim"]
    params = load_params("params.yaml", {"profile": "quick"})
    with pytest.raises(ConfigError, match="cdpb/cdpb.*grows with the model dimension"):
        audit_cost.audit_seconds(params, "cdpb", "cdpb", units)
