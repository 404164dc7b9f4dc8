"""The check across machines: float-dependent output hashes may differ, code, manifests, params,
stages and verdicts may not, and figure data only within the stated tolerance."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from airfl.pipeline import crosscheck


def _lock(code="c0", manifest="m0", output="o0", cmd="airfl train x/y c"):
    return {"schema": "2.0", "stages": {
        "dvc-dag": {"cmd": "airfl dvc-yaml --stamp results/dvc_dag.txt",
                    "deps": [{"path": "src/airfl", "md5": code}], "params": ["params.yaml"],
                    "outs": [{"path": "results/dvc", "md5": manifest}]},
        "train-x-y-c": {"cmd": cmd, "deps": [{"path": "results/dvc/train-x-y-c.json",
                                              "md5": manifest}],
                        "outs": [{"path": "results/runs/x/y/c.csv", "md5": output}]}}}


def test_a_float_dependent_output_hash_may_differ_and_nothing_else():
    assert crosscheck.compare_locks(_lock(), _lock(output="o1")) == []
    code = crosscheck.compare_locks(_lock(), _lock(code="c1"))
    assert len(code) == 1 and "src/airfl" in code[0]
    manifest = crosscheck.compare_locks(_lock(), _lock(manifest="m1"))
    assert len(manifest) == 2 and all("results/dvc" in line for line in manifest)
    assert "command" in crosscheck.compare_locks(_lock(), _lock(cmd="airfl train x/y d"))[0]
    fewer = _lock()
    del fewer["stages"]["train-x-y-c"]
    assert crosscheck.compare_locks(_lock(), fewer) == ["stage train-x-y-c: missing"]


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    """A figure CSV and a claims metrics file in a scratch folder; returns a function that
    rewrites them."""
    monkeypatch.chdir(tmp_path)

    def make(accuracy=0.9, verdict="holds", rows=3):
        (tmp_path / "figures" / "p").mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / "claims").mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"curve": ["a"] * rows, "round": range(rows),
                      "test_accuracy": [accuracy] * rows, "label": ["A"] * rows}
                     ).to_csv(tmp_path / "figures" / "p" / "f.csv", index=False)
        (tmp_path / "results" / "claims" / "p.json").write_text(json.dumps(
            {"counts": {}, "verdicts": {"p/f": {"a_best": verdict}}}))
        (tmp_path / "results" / "claims" / "p.rows.json").write_text("{}")
    return make


def test_figure_data_within_the_tolerance_pass_and_beyond_it_fail(outputs):
    outputs(accuracy=0.9)
    reference = crosscheck.summarise()
    assert reference["verdicts"] == {"p/f:a_best": "holds"}
    outputs(accuracy=0.9 * (1 + 1e-6))               # the size of an AMD/Intel difference
    assert crosscheck.compare_summaries(reference, crosscheck.summarise()) == []
    outputs(accuracy=0.9 * (1 + 1e-3))
    problems = crosscheck.compare_summaries(reference, crosscheck.summarise())
    assert problems and all("test_accuracy" in p for p in problems)
    outputs(accuracy=0.9, rows=4)
    assert "rows" in crosscheck.compare_summaries(reference, crosscheck.summarise())[0]


def test_a_flipped_verdict_fails_the_check(outputs):
    outputs()
    reference = crosscheck.summarise()
    outputs(verdict="inconclusive")
    assert crosscheck.compare_summaries(reference, crosscheck.summarise()) == [
        "claim p/f:a_best: inconclusive vs reference holds"]


def test_the_command_writes_then_checks(outputs, tmp_path, capsys):
    outputs()
    assert crosscheck.main(["write", str(tmp_path / "ref.json")]) == 0
    assert crosscheck.main(["check", str(tmp_path / "ref.json")]) == 0
    outputs(accuracy=0.5)
    assert crosscheck.main(["check", str(tmp_path / "ref.json")]) == 1
    assert "beyond what another CPU explains" in capsys.readouterr().err
