"""One knob reruns the jobs it changes, in both tools.

For each wing, a one-knob change of params.yaml is applied; the jobs DVC marks stale (a key of
the stage's manifest, as the `dvc-dag` stage writes it, changed value) and the jobs
Snakemake reruns (the rule's `params:` differ) must both be exactly the jobs the knob reaches:
a curve's own parameter its curve and figure, an analytic-only knob no training job, one added
grid point no existing job but the figure (the new curve is a new job in both tools).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from airfl.params.config import read_params
from airfl.pipeline import dag, param_deps
from airfl.pipeline.dvcgen import manifest, written_keys
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import active_experiments, all_analytic, get_experiment


@pytest.fixture(scope="module")
def params_file(repo_root):
    return str(repo_root / "params.yaml")


@cache
def _before(path: str, paper: str, base: str = "{}") -> tuple[dict[str, Any], dict[str, Any], list]:
    """The params, raw params and the paper's jobs under the `base` overrides (JSON)."""
    params, raw = load_params(path, json.loads(base)), read_params(path, json.loads(base))
    jobs = [(e, job) for e in active_experiments(params) if e.paper == paper
            for job in dag.experiment_jobs(e, params)]
    return params, raw, jobs


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def stale(path: str, paper: str, changes: dict[str, Any], base: dict[str, Any] | None = None
          ) -> tuple[set[str], set[str]]:
    """(DVC's stale jobs, Snakemake's) of the paper's existing jobs after `changes` (both
    before and after on params.yaml with the `base` overrides)."""
    base = base or {}
    params, raw, jobs = _before(path, paper, _json(base))
    changes = {**base, **changes}
    new, new_raw = load_params(path, changes), read_params(path, changes)
    after = {job.name: job for e in active_experiments(new) if e.paper == paper
             for job in dag.experiment_jobs(e, new)}          # the DAG `airfl dvc-yaml` writes
    dvc, snakemake = set(), set()
    old_rules, new_rules = dag.Context(params), dag.Context(new)
    for experiment, job in jobs:
        curve = job.args[1] if len(job.args) > 1 else None
        if (job.stage, curve) not in param_deps.experiment_views(experiment, new):
            continue                        # the job left the DAG (both tools drop it)
        if _json(manifest(job, raw)) != _json(manifest(after[job.name], new_raw)):
            dvc.add(job.name)               # its manifest, as the dvc-dag stage writes it
        if _json(dag.rule_params(old_rules, job.stage, tuple(job.args))) != \
                _json(dag.rule_params(new_rules, job.stage, tuple(job.args))):
            snakemake.add(job.name)
    for figure in all_analytic():           # analytic figures read their whole block
        if figure.paper == paper:
            job = dag.analytic_job(figure)
            if _json(manifest(job, raw)) != _json(manifest(job, new_raw)):
                dvc.add(job.name)
            if _json(figure.params(params)) != _json(figure.params(new)):
                snakemake.add(job.name)
    return dvc, snakemake


def assert_reruns(path: str, paper: str, changes: dict[str, Any], expected: set[str],
                  base: dict[str, Any] | None = None) -> None:
    dvc, snakemake = stale(path, paper, changes, base)
    assert dvc == snakemake, {"dvc only": dvc - snakemake, "snakemake only": snakemake - dvc}
    assert dvc == expected, {"unexpected": dvc - expected, "missing": expected - dvc}


def _curve_jobs(experiment_id: str, *curves: str, stages=("design", "train")) -> set[str]:
    slug = experiment_id.replace("/", "-")
    return {f"{stage}-{slug}-{curve}" for curve in curves for stage in stages}


def _analytic(paper: str) -> set[str]:
    return {dag.analytic_job(f).name for f in all_analytic() if f.paper == paper}


# -- baselines (the generic schemes) ----------------------------------------------------------

def test_baselines_one_curve_knob_reruns_its_curve_and_figure(params_file):
    eid = "baselines/accuracy_vs_rounds"
    assert_reruns(params_file, "baselines", {f"{eid.replace('/', '.')}.curves.ota_low_snr.snr_db": -5.0},
                  _curve_jobs(eid, "ota_low_snr") | {"figure-baselines-accuracy_vs_rounds"})


def test_baselines_a_paper_profile_knob_reruns_nothing_in_quick(params_file):
    assert_reruns(params_file, "baselines",
                  {"baselines.accuracy_vs_rounds.scale.paper.rounds": 300}, set())


def test_baselines_an_added_curve_reruns_only_the_figure(params_file):
    curve = {"scheme": "ota_truncated_inversion", "snr_db": 0.0, "truncation_threshold": 0.1,
             "clip_norm": 1.0}
    assert_reruns(params_file, "baselines",
                  {"baselines.accuracy_vs_rounds.curves.ota_mid_snr": curve},
                  {"figure-baselines-accuracy_vs_rounds"})


# -- arena ----------------------------------------------------------------------------------------
ARENA = "arena/accuracy_vs_eps"


def test_arena_the_power_budget_reruns_the_power_dependent_curves_and_the_figure(params_file):
    """The edge SNR enters OTA-FL's design and the power P AirFL-DP's and the LAPA entrants' (at
    every eps target of the base power; their SNR sweep's curves have their own powers); the
    other curves carry it only as a figure tag."""
    private = [f"{key}_eps{eps}" for key in ("airfl_dp", "lapa_uniform", "lapa_arb",
                                                  "lapa_uniform_user")
               for eps in (1, 4, 16)]
    assert_reruns(params_file, "arena", {"arena.radio.power_dbm": 10.0},
                  _curve_jobs(ARENA, "ota_fl", *private) | {"figure-arena-accuracy_vs_eps"})


def test_arena_an_added_eps_target_reruns_only_the_figure(params_file):
    assert_reruns(params_file, "arena", {"arena.privacy.eps.quick": [1.0, 4.0, 16.0, 64.0]},
                  {"figure-arena-accuracy_vs_eps"})


def test_arena_an_added_snr_sweep_power_adds_one_curve_per_power_dependent_scheme(
        params_file):
    """A power of the SNR sweep is one more OTA-FL curve and one more curve of each private
    entrant whose curve depends on the power (AirFL-DP, LAPA's uniform DP and ARB) at the SNR
    figure's eps (the schemes that do not depend on the power reuse theirs); of the existing
    jobs only the figure reruns."""
    changes = {"arena.radio.snr_sweep_power_dbm.quick": [-3.0, 7.0, 12.0, 17.0]}
    before = set(get_experiment(ARENA).curves(load_params(params_file, {})))
    after = set(get_experiment(ARENA).curves(load_params(params_file, changes)))
    assert after - before == {"ota_fl_p12dbm", "airfl_dp_eps4_p12dbm",
                              "lapa_uniform_eps4_p12dbm", "lapa_arb_eps4_p12dbm",
                              "lapa_uniform_user_eps4_p12dbm"}
    assert before <= after
    assert_reruns(params_file, "arena", changes, {"figure-arena-accuracy_vs_eps"})


def test_arena_the_rounds_rerun_every_curve(params_file):
    """The rounds change every run, and DP-FedAvg's noise for the same eps (its calibration)."""
    curves = tuple(get_experiment(ARENA).curves(load_params(params_file, {})))
    assert {"ideal", "ota_fl", "ota_fl_pm3dbm", "dp_fedavg_eps1"} <= set(curves)
    jobs = _curve_jobs(ARENA, *curves) | _curve_jobs(ARENA, *curves, stages=("privacy",))
    dvc, snakemake = stale(params_file, "arena", {"arena.task.scale.quick.rounds": 20})
    assert _curve_jobs(ARENA, *curves) <= dvc & snakemake
    assert dvc == snakemake and dvc <= jobs | {"figure-arena-accuracy_vs_eps",
                                               "partition-arena-accuracy_vs_eps"}


# -- biased_fl ----------------------------------------------------------------------------------

def test_biased_fl_one_curve_knob_reruns_its_curve_in_every_panel_drawing_it(params_file):
    figures = ("fig2b", "fig2b_snr30", "fig2b_snr60")
    drawn = [f for f in figures if "opc_ota_fl" in get_experiment(f"biased_fl/{f}").curves(
        load_params(params_file, {}))]
    assert "fig2b" in drawn
    expected = {j for f in drawn for j in _curve_jobs(f"biased_fl/{f}", "opc_ota_fl")} | \
        {f"figure-biased_fl-{f}" for f in drawn}
    assert_reruns(params_file, "biased_fl", {"biased_fl.fig2b.curves.opc_ota_fl.kappa_peak": 3.0},
                  expected)


def test_biased_fl_an_added_snr_offset_reruns_only_the_sensitivity_figures(params_file):
    assert_reruns(params_file, "biased_fl",
                  {"biased_fl.snr_sensitivity.snr_offsets_db": [0.0, 30.0, 60.0, 90.0]},
                  {"figure-biased_fl-snr_sensitivity_ota",
                   "figure-biased_fl-snr_sensitivity_digital"})


def test_biased_fl_a_paper_tuning_grid_reruns_nothing_in_quick(params_file):
    assert_reruns(params_file, "biased_fl",
                  {"biased_fl.fig2b.tuning.paper.selection_trials": 5}, set())


# -- cdpb ---------------------------------------------------------------------------------------

def test_cdpb_an_analytic_only_knob_reruns_no_training_job(params_file):
    assert_reruns(params_file, "cdpb", {"cdpb.analytic.fig6_K": [50, 100, 200]},
                  _analytic("cdpb"))


def test_cdpb_one_panels_period_reruns_that_panel_only(params_file):
    params = load_params(params_file, {})
    curves = list(get_experiment("cdpb/fig8b").curves(params))
    expected = _curve_jobs("cdpb/fig8b", *curves, stages=("design", "train")) | \
        {"figure-cdpb-fig8b"}            # calibrate (no curve) and fig8a stay
    assert_reruns(params_file, "cdpb", {"cdpb.fig8.periods.fig8b": 5}, expected)


def test_cdpb_a_dropped_strategy_reruns_only_the_figure(params_file):
    assert_reruns(params_file, "cdpb",
                  {"cdpb.fig4.strategies": ["cdpb_i", "cdpb_n", "gamma_bar", "hmin", "noise_free"]},
                  {"figure-cdpb-fig4"})


# -- dp_perk ------------------------------------------------------------------------------------

def test_dp_perk_an_analytic_only_knob_reruns_no_training_job(params_file):
    assert_reruns(params_file, "dp_perk", {"dp_perk.analytic.fig2_B": 40.0},
                  _analytic("dp_perk"))


def test_dp_perk_an_added_fig5_budget_reruns_only_the_iid_figure(params_file):
    grid = load_params(params_file, {})["dp_perk"]["training"]["fig5_eps_tilde"]["quick"]
    assert_reruns(params_file, "dp_perk",
                  {"dp_perk.training.fig5_eps_tilde.quick": [*grid, 0.7]}, {"figure-dp_perk-fig3a"})


def test_dp_perk_an_added_fig3_budget_reruns_only_the_run_it_makes_drawn_every_round(
        params_file):
    """ε̃ = 0.5 already runs for Fig. 5 (i.i.d.), a final-accuracy panel, so it is evaluated
    at its last round only (Experiment.evaluation): joining Fig. 3, which draws every round,
    reruns its train job in both tools (the declared rounds changed) and no other curve's
    (the grid is no train job's key); under non-i.i.d. data it is a new curve."""
    grid = load_params(params_file, {})["dp_perk"]["training"]["fig3_eps_tilde"]["quick"]
    assert 0.5 not in grid
    assert_reruns(params_file, "dp_perk",
                  {"dp_perk.training.fig3_eps_tilde.quick": sorted([*grid, 0.5])},
                  {"figure-dp_perk-fig3a", "figure-dp_perk-fig4a",
                   "train-dp_perk-fig3a-airfl_dp_e0p5"})


def test_dp_perk_the_fig6_budget_reruns_the_fig6_curves_only(params_file):
    """The budget of the power sweep: its AirFL-DP points rerun; the budget curves it moves
    the Fig. 6 tag between (ε̃ = 1 -> 0.3) only change panels (Experiment.panel_keys)."""
    iid = get_experiment("dp_perk/fig3a")
    before = iid.curves(load_params(params_file, {}))
    after = iid.curves(load_params(params_file, {"dp_perk.training.fig6_eps_tilde.quick": 0.3}))
    changed = [c for c in before if iid.run_curve(before[c]) != iid.run_curve(after[c])]
    assert changed and all(before[c]["in_fig6"] and before[c]["method"] == "airfl_dp"
                           for c in changed)
    assert before["airfl_dp_e1"]["in_fig6"] and not after["airfl_dp_e1"]["in_fig6"]
    assert_reruns(params_file, "dp_perk", {"dp_perk.training.fig6_eps_tilde.quick": 0.3},
                  _curve_jobs("dp_perk/fig3a", *changed) | {"figure-dp_perk-fig3a"})


# -- lapa ---------------------------------------------------------------------------------------

def test_lapa_the_fashion_mnist_rate_reruns_fig4b_only(params_file):
    params = load_params(params_file, {})
    curves = list(get_experiment("lapa/fig4b").curves(params))
    assert_reruns(params_file, "lapa", {"lapa.training.fmnist_lr.quick": 0.03},
                  _curve_jobs("lapa/fig4b", *curves) | {"figure-lapa-fig4b"})


def test_lapa_an_added_nu_reruns_only_the_figure_drawing_it(params_file):
    assert_reruns(params_file, "lapa", {"lapa.training.nu_grid.quick": [4, 16, 32]},
                  {"figure-lapa-fig4"})             # Fig. 4(b) runs no nu sweep


# -- ota_fd -------------------------------------------------------------------------------------

def test_ota_fd_an_analysis_knob_reruns_no_training_job(params_file):
    assert_reruns(params_file, "ota_fd", {"ota_fd.analysis.draws": 300}, _analytic("ota_fd"))


def test_ota_fd_an_added_budget_reruns_only_the_figure(params_file):
    assert_reruns(params_file, "ota_fd", {"ota_fd.x1.eps_full.quick": [0.1, 1.0, 2.0]},
                  {"figure-ota_fd-x1"})


# -- the top-level knobs ------------------------------------------------------------------------

# the quick profile searches no step size: one panel searches its own for this test
SEARCHING = {"biased_fl.fig2a.tuning.quick": {"mode": "grid", "eta_factors": [1.0, 0.5],
                                              "selection_trials": 1}}


@pytest.mark.parametrize("paper, stage, base", [("biased_fl", "tune", SEARCHING),
                                                ("cdpb", "calibrate", None)])
def test_the_device_reruns_every_job_that_trains(params_file, paper, stage, base):
    """Tune and calibrate jobs train on `device` as train jobs do (trial.curve_inputs): a new
    device reruns all three in both tools, and nothing else."""
    _, _, jobs = _before(params_file, paper, _json(base or {}))
    expected = {job.name for _, job in jobs if job.stage in ("tune", "calibrate", "train")}
    assert any(name.startswith(f"{stage}-") for name in expected)
    assert_reruns(params_file, paper, {"device": "auto"}, expected, base)


# -- the derivation -----------------------------------------------------------------------------

def test_a_knob_no_changed_value_of_which_composes_counts_for_every_job():
    """The safe side: a wing that rejects every perturbation of a knob makes it everyone's."""
    from airfl.core.experiments import Experiment, FigureSpec

    def compose(params):
        if params["toy"]["mode"] != "a":
            raise ValueError("mode")
        return {"dataset": "mnist", "num_devices": 2, "partition": {}, "scale": {},
                "curves": {"x": {"v": params["toy"]["v"]}, "y": {"v": 0}}}

    toy = Experiment(paper="toy", figure="f", config_key="toy", title="", description="",
                     figure_spec=FigureSpec(x="round", y="test_accuracy", xlabel="", ylabel=""),
                     compose=compose)
    keys = param_deps.derive(toy, {"toy": {"mode": "a", "v": 1, "unused": 2}})
    assert keys[("train", "x")] == ["toy.mode", "toy.v"]
    assert keys[("train", "y")] == ["toy.mode"]
    assert keys[("partition", None)] == ["toy.mode"]
    assert "toy.unused" not in {k for ks in keys.values() for k in ks}


def test_lift_names_the_nearest_written_parent():
    raw = {"a": {"b": {"c": 1}}}
    assert param_deps.lift("a.b.c", raw) == "a.b.c"
    assert param_deps.lift("a.b.d", raw) == "a.b"
    assert param_deps.lift("z.y", raw) is None
    assert written_keys(["a.b.c"], raw) == ["a"]       # a section all of whose leaves are read


def test_a_manifest_holds_the_values_dvc_compares_and_each_code_files_digest(tmp_path):
    """The `dvc-dag` stage's manifest of a stage (what DVC compares): the
    value of each key as written, and a digest per code file that changes with its bytes."""
    from airfl.pipeline.code_deps import dep_digest

    raw = {"a": {"b": {"c": 1, "d": [1, 2]}, "e": 3}, "f": "x"}
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text("x = 1\n")
    two.write_text("x = 2\n")
    job = dag.Job("train", "train-t", [], [], [], ["a.b.c", "a.b.d", "f"], code=[str(one)])
    assert manifest(job, raw) == {"params": {"a.b": {"c": 1, "d": [1, 2]}, "f": "x"},
                                  "code": {str(one): dep_digest(str(one))}}
    assert dep_digest(str(one)) != dep_digest(str(two))
    changed = {"a": {"b": {"c": 1, "d": [1, 2, 3]}, "e": 4}, "f": "x"}
    assert manifest(job, changed)["params"]["a.b"] == {"c": 1, "d": [1, 2, 3]}
    assert manifest(job, {**raw, "a": {**raw["a"], "e": 4}}) == manifest(job, raw)  # unread
