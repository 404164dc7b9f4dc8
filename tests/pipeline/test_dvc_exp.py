"""A one-knob DVC experiment keeps params.yaml as written and leaves Snakemake agreeing.

`dvc exp run -S` rewrites params.yaml with its own dumper (flow lists become block lists, lines
re-wrapped, comments inside flow mappings lost), unless params.yaml is in the layout that dumper
keeps (`dvc_layout`, checked here on DVC's own code path), and Snakemake planned again every job DVC had
run ("Params have changed": its record of those outputs was the previous Snakemake run's).
`airfl.pipeline.dvc_exp` sets values in the text and records DVC's outputs in Snakemake."""

from __future__ import annotations

import re

import pytest

from airfl.params.config import ConfigError
from airfl.params.config import read_yaml
from airfl.pipeline.dvc_exp import (current_stages, dvc_layout, dvc_round_trip,
                                    outputs_to_record, pending_outputs, set_params, set_values)
from workspace import make_workspace, run, tool_env

KNOB = "baselines.accuracy_vs_rounds.curves.ota_low_snr.snr_db"


def test_setting_a_value_changes_only_its_text(repo_root, tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text((repo_root / "params.yaml").read_text())
    before = path.read_text().splitlines()
    set_params(path, {KNOB: -5.0, "ota_fd.x7.eps_full.quick": [2.0]})
    after = path.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 2, changed
    assert changed[0][1] == changed[0][0].replace("snr_db: -10.0", "snr_db: -5.0")
    assert changed[1][1] == changed[1][0].replace("- 1.0", "- 2.0")


def test_params_yaml_is_what_dvc_exp_run_set_param_writes_back(repo_root):
    """DVC's own `-S` code path (load, override, merge, dump) gives params.yaml back byte for
    byte: its comments and layout survive a plain `dvc exp run -S`."""
    text = (repo_root / "params.yaml").read_text()
    assert dvc_round_trip(text) == text
    assert dvc_layout(text) == text


def test_dvc_set_param_changes_only_the_value_lines(repo_root):
    text = (repo_root / "params.yaml").read_text()
    out = dvc_round_trip(text, [f"{KNOB}=-5.0", "cdpb.fig4.scale.quick.trials=7"])
    before, after = text.splitlines(), out.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 2, changed
    assert changed[0][1] == changed[0][0].replace("snr_db: -10.0", "snr_db: -5.0")
    assert re.fullmatch(r"\s+trials: 7", changed[1][1]) and "trials:" in changed[1][0]


def test_dvc_layout_writes_what_dvcs_round_trip_keeps():
    text = ("a:   # the a block\n  b: [1, 2]   # two\n  c: {x: 1, y: null}\n"
            "  d: {k: a long value that does not fit, m: on one line of eighty columns, n: 300}\n"
            "  e: null\n  f: [{g: 1}]\n")
    assert dvc_round_trip(text) != text
    out = dvc_layout(text)
    assert dvc_round_trip(out) == out and read_yaml(out) == read_yaml(text)
    assert re.match(r"a: +# the a block\n  b: +# two\n  - 1\n  - 2\n", out), out
    assert "  c: {x: 1, y: null}\n  d:\n    k: a long" in out and "  e:\n" in out


@pytest.mark.parametrize("text, message", [
    ("a: {x: 1,   # inside\n    y: 2}\n", "comment inside a flow collection"),
    ("a:\n  b:\n  - 1\n  # after the list\n  c: 2\n", "would rewrite line 4"),
])
def test_dvc_layout_stops_where_a_comment_would_be_lost(text, message):
    with pytest.raises(ConfigError, match=message):
        dvc_layout(text)


def test_block_values_comments_and_null_stay_as_written():
    text = ("a:   # the a block\n  b: null   # nothing\n  c:\n    - 1\n    - 2\n  # between\n"
            "  d: {x: 1,   # inside a flow mapping\n      y: 2}\n  e:\n    f: 1\n")
    out = set_values(text, {"a.d.y": 3.5, "a.c": [4, 5], "a.e": {"f": 2, "h": {"i": 1}}})
    assert out == ("a:   # the a block\n  b: null   # nothing\n  c:\n    - 4\n    - 5\n"
                   "  # between\n  d: {x: 1,   # inside a flow mapping\n      y: 3.5}\n"
                   "  e:\n    f: 2\n    h:\n      i: 1\n")


@pytest.mark.parametrize("values, message", [
    ({"a.z": 1}, "a.z: no such key"), ({"a.b.c": 1}, "a.b is not a mapping")])
def test_a_key_not_written_stops_naming_it(values, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        set_values("a:\n  b: 1\n", values)


def test_an_invalid_value_stops_before_writing(repo_root, tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text((repo_root / "params.yaml").read_text())
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=re.escape(KNOB)):
        set_params(path, {KNOB: "loud"})
    assert path.read_bytes() == before


def test_only_outputs_of_stages_current_down_from_the_top_are_recorded():
    dvc_yaml = {"stages": {
        "a": {"outs": ["a.txt"]},
        "b": {"deps": ["a.txt"], "outs": ["b.txt"], "metrics": [{"b.json": {"cache": False}}]},
        "c": {"deps": ["b.txt"], "outs": ["c.txt"]},
        "d": {"outs": ["d.txt"]}}}
    lock = {"stages": {"a": {}, "b": {}, "c": {}}}           # d never ran in DVC
    assert current_stages(dvc_yaml, lock, {}) == {"a", "b", "c"}
    assert current_stages(dvc_yaml, lock, {"a": []}) == set()    # a stale: nothing below it
    pending = ["b.txt", "b.json", "c.txt", "d.txt"]
    assert outputs_to_record(pending, dvc_yaml, {"a", "b"}) == ["b.txt", "b.json"]


def test_the_pending_column_of_snakemakes_summary_is_read():
    summary = ("Building DAG of jobs...\noutput_file\tdate\trule\tlog-file(s)\tstatus\tplan\n"
               "x.csv\tMon\tr\tl.log\tparams changed\tupdate pending\n"
               "y.csv\tMon\tr\tl.log\tok\tno update\n")
    assert pending_outputs(summary) == ["x.csv"]


# -- end to end: the tiny baselines subgraph, one curve's knob -----------------------------------

TARGETS = ["figures/baselines/accuracy_vs_rounds.png",
           "figures/partitions/baselines/accuracy_vs_rounds.png"]
DVC_TARGET = "figure-baselines-accuracy_vs_rounds"
TINY = {"rounds": 2, "trials": 1, "eval_every": 1, "test_subset": 300, "train_eval_subset": 300}


@pytest.mark.slow
def test_one_knob_through_dvc_keeps_params_yaml_and_snakemake_agrees(repo_root, tmp_path,
                                                                     mnist_mirror):
    env = tool_env(mnist_mirror)
    work = make_workspace(repo_root, tmp_path / "ws", env, lambda p: p)
    params = work / "params.yaml"
    params.write_text((repo_root / "params.yaml").read_text())     # with its comments
    set_params(params, {"baselines.accuracy_vs_rounds.scale.quick": TINY})
    run(["airfl", "dvc-yaml"], work, env)
    run(["git", "commit", "-qam", "tiny baselines"], work, env)
    run(["snakemake", "--cores", "2", *TARGETS, "-q"], work, env)
    run(["airfl", "dvc-yaml", "--stamp", "results/dvc_dag.txt"], work, env)
    run(["dvc", "commit", "-f", "-q", "--with-deps", DVC_TARGET], work, env)
    run(["git", "add", "-A"], work, env)
    run(["git", "commit", "-qm", "recorded"], work, env)
    before = params.read_text().splitlines()
    curve = work / "results/runs/baselines/accuracy_vs_rounds/ota_low_snr.csv"
    old_run = curve.read_bytes()

    done = run(["python", "-m", "airfl.pipeline.dvc_exp", "run", f"{KNOB}=-5.0",
                "--targets", *TARGETS, "--", DVC_TARGET], work, env)
    ran = set(re.findall(r"Running stage '([^']+)'", done.stdout))
    assert "train-baselines-accuracy_vs_rounds-ota_low_snr" in ran, done.stdout[-2000:]
    assert "train-baselines-accuracy_vs_rounds-ideal" not in ran
    assert curve.read_bytes() != old_run
    recorded = int(re.search(r"recorded (\d+) outputs", done.stdout).group(1))
    assert recorded == 9, done.stdout[-1000:]     # design, train (3), privacy, figure (4)

    after = params.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(after) == len(before) and len(changed) == 1, changed
    assert "snr_db: -5.0" in changed[0][1]
    assert "up to date" in run(["dvc", "status", "--with-deps", DVC_TARGET], work, env).stdout
    plan = run(["snakemake", "-n", *TARGETS], work, env)
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]
