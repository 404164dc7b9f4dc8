"""The command line as a user meets it: help on every sub-command, `--version`, and a name that
is not there (experiment, curve, analytic figure, paper, dataset, reference) or an input an
earlier stage has not written stops with one line naming it (and the allowed values), no
traceback and no output written."""

from __future__ import annotations

import argparse
from importlib.metadata import version

import pytest

from airfl import cli


def _stderr_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_every_sub_command_and_argument_has_help():
    parser = cli._parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in subs._choices_actions}
    assert set(helps) == set(subs.choices)
    for name, sub in subs.choices.items():
        assert helps[name] and sub.description, name
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"airfl {name}: {action.dest} has no help"


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"airfl {version('airfl')}"


@pytest.mark.parametrize("argv, named, allowed", [
    (["train", "cdpb/fig44", "cdpb_i"], "experiment 'cdpb/fig44'", "cdpb/fig4"),
    (["design", "cdpb/fig4", "cdpb_x"], "curve 'cdpb_x' of cdpb/fig4", "cdpb_i"),
    (["privacy", "cdpb/fig4", "cdpb_x"], "curve 'cdpb_x' of cdpb/fig4", "cdpb_i"),
    (["partition", "nope"], "experiment 'nope'", "baselines/accuracy_vs_rounds"),
    (["analytic", "cdpb/fig33"], "analytic figure 'cdpb/fig33'", "cdpb/fig3"),
    (["claims", "cdbp"], "paper 'cdbp'", "cdpb"),
    (["data", "mnsit"], "dataset 'mnsit'", "mnist"),
    (["reference", "cdpb"], "reference 'cdpb'", "biased_fl"),
])
def test_an_unknown_name_stops_with_one_line_naming_it_and_the_allowed_values(
        argv, named, allowed, repo_root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["--params", str(repo_root / "params.yaml"), *argv])
    line = _stderr_line(capsys)
    assert code == 2
    assert line.startswith(f"airfl {argv[0]}: unknown {named}; allowed: ")
    assert allowed in line.split("allowed: ")[1].split(", ")
    assert list(tmp_path.iterdir()) == []


def test_an_experiment_outside_the_profile_names_the_profile(repo_root, tmp_path, monkeypatch,
                                                             capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["--params", str(repo_root / "params.yaml"), "figure", "lapa/fig7b"])
    line = _stderr_line(capsys)
    assert code == 2
    assert line.startswith("airfl figure: experiment 'lapa/fig7b' does not run in profile quick")
    assert "lapa/fig4" in line


@pytest.mark.parametrize("argv, missing", [
    (["figure", "cdpb/fig4"], "results/runs/cdpb/fig4/"),
    (["privacy", "cdpb/fig4", "cdpb_i"], "results/runs/cdpb/fig4/cdpb_i"),
])
def test_a_missing_input_stops_with_one_line_naming_the_file(argv, missing, repo_root, tmp_path,
                                                             monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["--params", str(repo_root / "params.yaml"), *argv])
    line = _stderr_line(capsys)
    assert code == 1
    assert line.startswith(f"airfl {argv[0]}: ") and missing in line and "missing" in line
    assert not (tmp_path / "figures").exists()
