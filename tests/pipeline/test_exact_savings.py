"""Work no figure reads is not done, and what is done once is not done twice, with the figure
data unchanged: a curve only final-accuracy panels draw is evaluated at its last round only
(`Experiment.evaluation`), and a run a derivation's source run equals is copied from it
(`pipeline.twin_runs`). Both run the real stages on small OTA-FD settings."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from airfl.core.experiments import Experiment
from airfl.pipeline import paths
from airfl.pipeline.params import validate_params
from small_runs import raw_params, small_ota_fd
from airfl.pipeline.registry import get_experiment


@pytest.fixture()
def raw(repo_root, mnist_mirror):
    return raw_params(repo_root, mnist_mirror)


def _stages(params, experiment_id: str, curves) -> None:
    from airfl.pipeline.stages import design, partition, privacy, train

    partition.run(params, experiment_id)
    for curve in curves:
        design.run(params, experiment_id, curve)
        train.run(params, experiment_id, curve, progress=False)
        privacy.run(params, experiment_id, curve)


def test_the_panels_declare_which_curves_are_evaluated_at_their_last_round_only(raw):
    """DP as a perk: the curves only Figs. 5 and 6 draw (final accuracies) are evaluated at
    their last round, and the round before it where a theta^(T-1) panel draws them
    ("final-1"); the ones Fig. 3 draws at every round; a derivation's sources always at
    theirs (OTA-FD's eta_0 calibration runs in the paper profile)."""
    params = validate_params(copy.deepcopy(raw))
    fig3 = get_experiment("dp_perk/fig3a")
    curves = fig3.curves(params)
    drawn_every_round = [c for c in curves
                         if fig3.figure_spec.curves(c, curves[c])
                         or fig3.extra_figures[0].curves(c, curves[c])]
    assert drawn_every_round and len(drawn_every_round) < len(curves)
    one_back = {c for c in curves for spec in fig3.extra_figures
                if spec.final_rounds_back == 1 and spec.curves(c, curves[c])}
    assert one_back - set(drawn_every_round)
    for curve in curves:
        assert fig3.evaluation(curve, curves) == ("schedule" if curve in drawn_every_round else
                                                  "final-1" if curve in one_back else "final")
    paper = validate_params({**copy.deepcopy(raw), "profile": "paper"})
    x5 = get_experiment("ota_fd/x5")                   # both panels: final values only
    assert {x5.evaluation(c, x5.curves(paper)) for c in x5.curves(paper)} == {"final"}
    x1 = get_experiment("ota_fd/x1")
    x1_curves = x1.curves(paper)
    sources = [c for c in x1_curves if c.startswith("eta0_cal_")]
    assert sources and all(x1.evaluation(c, x1_curves) == "schedule" for c in sources)


def test_a_curve_only_final_panels_draw_is_evaluated_once_with_the_same_numbers(
        raw, tmp_path, monkeypatch):
    """OTA-FD X5 (both panels final values), 3 rounds, evaluation due every round: its train
    job evaluates round 0 and round 3 only, and those rows are the ones an every-round run
    writes, bit for bit; the figure drawn from either is the same."""
    from airfl.pipeline.stages import figure

    monkeypatch.chdir(tmp_path)
    params = small_ota_fd(raw, "x5", rounds=3, eval_every=1)
    eid = "ota_fd/x5"
    curves = list(get_experiment(eid).curves(params))
    _stages(params, eid, curves)
    final = {c: pd.read_csv(paths.run_table(eid, c)) for c in curves}
    figure.run(params, eid)
    drawn = paths.figure(eid, "csv").read_bytes()
    for c, table in final.items():
        assert table.dropna(subset=["test_accuracy"])["round"].tolist() == [0, 3]
        assert len(table) == 4                       # every round keeps its row
    monkeypatch.setattr(Experiment, "evaluation", lambda self, curve, curves: "schedule")
    _stages(params, eid, curves)
    for c, table in final.items():
        every = pd.read_csv(paths.run_table(eid, c))
        assert every.dropna(subset=["test_accuracy"])["round"].tolist() == [0, 1, 2, 3]
        read = every[every["round"].isin([0, 3])].reset_index(drop=True)
        pd.testing.assert_frame_equal(read, table[table["round"].isin([0, 3])]
                                      .reset_index(drop=True), check_exact=True)
    figure.run(params, eid)
    assert paths.figure(eid, "csv").read_bytes() == drawn


def test_noiseless_fd_copies_the_calibration_run_it_equals_and_training_gives_the_same_bytes(
        raw, tmp_path, monkeypatch, capsys):
    """OTA-FD X1 with two eta_0 calibration runs: noiseless FD trains at the chosen eta_0, so
    its train job copies that calibration run (saying so) instead of training; with the
    source gone it trains, and writes the same bytes; a source made with another eta_0 is
    never copied."""
    from airfl.runtime.io import read_json
    from airfl.pipeline.stages import derive

    monkeypatch.chdir(tmp_path)
    params = small_ota_fd(raw, "x1", rounds=2, eval_every=1, eta0_grid=[0.5, 1.0],
                    methods=["fd_noiseless"], eps_full=[1.0])
    eid = "ota_fd/x1"
    experiment = get_experiment(eid)
    curves = experiment.curves(params)
    sources = sorted(c for c in curves if c.startswith("eta0_cal_"))
    assert len(sources) == 2 and "fd_noiseless" in curves
    _stages(params, eid, sources)
    derive.run(params, eid, "eta0")
    chosen = read_json(paths.derived(eid, "eta0"))["report"]["eta0"]
    twin = next(c for c in sources if curves[c]["eta0"] == chosen)
    capsys.readouterr()
    _stages(params, eid, ["fd_noiseless"])
    assert f"the stored run of {twin} was made with the same" in capsys.readouterr().out
    copied = paths.run_table(eid, "fd_noiseless").read_bytes()
    assert copied == paths.run_table(eid, twin).read_bytes()
    records = read_json(paths.run_records(eid, "fd_noiseless"))
    assert records["curve"] == "fd_noiseless" and \
        records["trials"] == read_json(paths.run_records(eid, twin))["trials"]
    for source in sources:                    # trained for real: nothing left to copy
        paths.run_table(eid, source).unlink()
    _stages(params, eid, ["fd_noiseless"])
    assert "copied it" not in capsys.readouterr().out
    assert paths.run_table(eid, "fd_noiseless").read_bytes() == copied
    assert read_json(paths.run_records(eid, "fd_noiseless")) == records


def test_the_plan_costs_a_final_only_curve_at_two_evaluations(raw):
    """`airfl plan` reads the same declaration: DP as a perk's paper-scale Fig. 5-only curve is
    costed at round 0 and its last round (2 evaluations, not 51), its training unchanged."""
    from airfl.pipeline import train_cost

    params = validate_params({**copy.deepcopy(raw), "profile": "paper"})
    fig3 = get_experiment("dp_perk/fig3a")
    block = fig3.params(params)
    final = next(c for c in block["curves"] if fig3.evaluation(c, block["curves"]) == "final")
    curve = block["curves"][final]
    every = train_cost.train_work(fig3, block, curve)
    once = train_cost.train_work(fig3, block, curve, evaluation="final")
    assert once.client_steps == every.client_steps
    assert train_cost.evaluations(block, block["scale"]["rounds"]) == 51
    assert once.eval_samples * 51 == pytest.approx(every.eval_samples * 2)


@pytest.mark.parametrize("name, models", [("cnn_mnist", 1), ("fedavg_cnn", 2),
                                          ("cnn_mnist_k3", 10), ("softmax", 64)])
def test_evaluation_in_the_models_chunk_gives_the_same_bits_as_one_big_chunk(name, models):
    """The networks evaluate in 256-row chunks, measured fastest (benchmarks/eval_chunks.py),
    the linear models in 4,096: accuracies and losses are the ones of 4,096-row chunks, bit
    for bit (the per-chunk losses are summed in float64)."""
    import torch

    from airfl.core.engine import eval_rows, evaluate_many
    from airfl.models.flat import build_model

    model = build_model(name, (1, 28, 28), 10)
    assert eval_rows(model) == (4096 if name == "softmax" else 256)
    gen = torch.Generator().manual_seed(3)
    x, y = torch.rand(1100, 1, 28, 28, generator=gen), torch.randint(0, 10, (1100,), generator=gen)
    params = torch.stack([model.init(torch.Generator().manual_seed(i)) for i in range(models)])
    chunked, whole = evaluate_many(model, params, x, y), evaluate_many(model, params, x, y, 4096)
    assert all(torch.equal(a, b) for a, b in zip(chunked, whole))
