"""Experiments and derivations a profile may leave out: `Experiment.enabled` (an
experiment the params do not run has no jobs, no targets and no claim inputs) and
`Derivation.optional` (a source read only where the composed block holds it; a derivation with
no target in the block has no job)."""

from __future__ import annotations

import pytest
import yaml

from airfl.core.experiments import Derivation, Experiment, FigureSpec


def _noop(params, block, inputs):
    return {}


def _experiment(curves: tuple[str, ...], enabled=None) -> Experiment:
    return Experiment(
        paper="toy", figure="figx", config_key="toy", title="t", description="d",
        figure_spec=FigureSpec(x="round", y="acc", xlabel="r", ylabel="a"),
        compose=lambda params: {"curves": {c: {} for c in curves}},
        derivations=(Derivation("level", sources=("a",), targets=("b",), compute=_noop),
                     Derivation("use", sources=("a", "b"), optional=("b",), targets=("c",),
                                compute=_noop)),
        enabled=enabled)


def test_optional_sources_are_read_only_where_the_block_holds_them():
    with_b = _experiment(("a", "b", "c"))
    without = _experiment(("a", "c"))
    use = with_b.derivation("use")
    assert use.resolve(with_b.params({})["curves"]) == (("a", "b"), ("c",))
    assert use.resolve(without.params({})["curves"]) == (("a",), ("c",))
    assert [d.name for d in with_b.active_derivations(with_b.params({})["curves"])] == \
        ["level", "use"]
    assert [d.name for d in without.active_derivations(without.params({})["curves"])] == ["use"]
    # a required source that is absent, or no target left: the derivation does not run
    assert use.resolve({"c": {}}) is None
    assert with_b.derivation("level").resolve({"a": {}}) is None


def test_enabled_picks_experiments_per_params():
    on = _experiment(("a",), enabled=lambda p: p["profile"] == "paper")
    assert on.is_enabled({"profile": "paper"}) and not on.is_enabled({"profile": "quick"})
    assert _experiment(("a",)).is_enabled({"profile": "quick"})


@pytest.fixture(scope="module")
def params():
    with open("params.yaml") as f:
        return yaml.safe_load(f)


def test_disabled_experiments_leave_no_jobs_targets_or_claim_inputs(params):
    from airfl.pipeline import dag, stage_jobs
    from airfl.pipeline.registry import active_experiments, all_experiments

    quick = {**params, "profile": "quick"}
    assert active_experiments(None) == all_experiments()
    off = [e for e in all_experiments() if not e.is_enabled(quick)]
    assert off, "LAPA's Fashion-MNIST privacy figures are paper-profile only"
    names = {j.name for j in dag.jobs(quick)}
    for experiment in off:
        assert f"partition-{experiment.id.replace('/', '-')}" not in names
        outputs = set(dag.figure_outputs(experiment))
        assert not outputs & set(dag.paper_targets(experiment.paper, quick))
        assert not outputs & set(stage_jobs.claim_inputs(experiment.paper, quick))
        assert outputs & set(dag.paper_targets(experiment.paper))   # no params: every one
