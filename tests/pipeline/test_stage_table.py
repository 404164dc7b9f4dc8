"""Each stage is declared once (pipeline/stage_table.py): every module of the stages folder has
exactly one record, and the CLI, the fork server, the parameter declarations and dependencies,
the DAG's outputs and the rule files take their stage list from the table. A stage added to the
table alone (its record and its module, nothing else) becomes a sub-command that runs on its
declared params, is preloaded by the fork server and gets its view in the parameter
dependencies."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

import pytest

from airfl import cli, forkserver
from airfl.pipeline import dag, param_deps, paths, stage_table
from airfl.pipeline.params import load_params
from airfl.pipeline.stage_params import stage_keys
from airfl.pipeline.stage_table import Arg, Stage

STAGES_FOLDER = Path(stage_table.__file__).parent / "stages"
TOOLS = {"validate", "dvc-yaml", "plan", "list", "schema", "reference-results"}     # sub-commands that are no stage


@pytest.fixture(scope="module")
def params(repo_root):
    return load_params(repo_root / "params.yaml", {})


def _sub_commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subs.choices)


def _positionals(sub: argparse.ArgumentParser) -> list[tuple[str, bool]]:
    return [(a.dest, a.nargs == "?") for a in sub._actions
            if not a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_every_stage_module_has_exactly_one_record():
    modules = sorted(f"airfl.pipeline.stages.{p.stem}" for p in STAGES_FOLDER.glob("*.py")
                     if p.stem != "__init__")
    assert sorted(s.module for s in stage_table.STAGES) == modules
    names = [s.name for s in stage_table.STAGES]
    assert len(set(names)) == len(names)
    for record in stage_table.STAGES:
        assert record.module == f"airfl.pipeline.stages.{record.name}"
        assert record.load().stage == record.name     # declared(<its name>): its own params


def test_the_cli_sub_commands_are_the_table_in_its_order():
    subs = _sub_commands()
    assert [n for n in subs if n not in TOOLS] == [s.name for s in stage_table.STAGES]
    for record in stage_table.STAGES:
        assert subs[record.name].description == record.help
        assert _positionals(subs[record.name]) == [(a.name, a.optional) for a in record.args]


def test_every_job_writes_the_outputs_its_record_names(params):
    """dvc.yaml's outs, plots and metrics of each job are its stage record's outputs."""
    for job in dag.jobs(params):
        written = {*job.outs, *(p.path for p in job.plots), *job.metrics}
        assert written == set(stage_table.stage(job.stage).files(*job.args)), job.name


def test_a_stage_added_to_the_table_alone_reaches_every_reader(params, repo_root, tmp_path,
                                                                monkeypatch):
    """A new stage: its module (here written to a temporary folder) and one record in the
    table; no other file changes."""
    (tmp_path / "hello_stage.py").write_text(textwrap.dedent('''
        from pathlib import Path

        from airfl.pipeline.stage_params import declared


        @declared("hello")
        def run(params, experiment, curve):
            out = Path("results") / "hello" / experiment / f"{curve}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                params["device"]
                device = "read"
            except KeyError as error:
                device = type(error).__name__
            out.write_text(f"{params['seed']} {device}")
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hello_stage", raising=False)
    record = Stage("hello", "write a greeting per curve",
                   (Arg("experiment", "an experiment"), Arg("curve", "its curve")),
                   lambda e, c: [paths.RESULTS / "hello" / e / f"{c}.txt"], ("seed",),
                   "hello_stage:run", view=stage_table.curve_view, light=True)
    monkeypatch.setattr(stage_table, "STAGES", (*stage_table.STAGES, record))

    assert _positionals(_sub_commands()["hello"]) == [("experiment", False), ("curve", False)]
    experiment = dag.get_experiment("cdpb/fig4")
    curve = next(iter(experiment.curves(params)))
    assert stage_keys("hello", experiment.id)[:1] == ("seed",)
    views = param_deps.experiment_views(experiment, params)
    assert views[("hello", curve)] == views[("train", curve)]      # the same view of the block

    monkeypatch.chdir(tmp_path)
    code = cli.main(["--params", str(repo_root / "params.yaml"), "hello", experiment.id, curve])
    assert code == 0
    written = tmp_path / record.files(experiment.id, curve)[0]
    assert written.read_text() == f"{params['seed']} UndeclaredParam"    # narrowed to its knobs

    monkeypatch.delitem(sys.modules, "hello_stage")
    monkeypatch.setattr(forkserver, "_load_compiled_loops", lambda: None)
    forkserver._preload()
    assert "hello_stage" in sys.modules


RULES = Path("workflow") / "rules"
# no stage: config, input functions, targets, the cost bound checked when a run starts
SUPPORT = {"common", "params_file", "targets", "cost"}


def test_one_rules_file_per_stage_named_for_it_included_from_the_table(repo_root):
    files = {p.stem for p in (repo_root / RULES).glob("*.smk")}
    assert files - SUPPORT == {s.name for s in stage_table.STAGES}
    snakefile = (repo_root / "Snakefile").read_text()
    assert 'include: f"workflow/rules/{_stage.name}.smk"' in snakefile
    for record in stage_table.STAGES:
        assert f"rules/{record.name}.smk" not in snakefile
        text = (repo_root / RULES / f"{record.name}.smk").read_text()
        assert re.search(rf'"{{AIRFL}} {record.name}\b', text), record.name


def test_the_rule_files_spell_no_path_and_one_loop_generates_job_rules(repo_root):
    """Paths come from paths.py (through the stage table); a loop generates rules only where a
    stage's outputs vary in number (figure.smk) and where a target is named for a paper."""
    generating = []
    for path in sorted((repo_root / RULES).glob("*.smk")) + [repo_root / "Snakefile"]:
        text = path.read_text()
        literal = re.findall(r"""["'](?:results|figures|logs)/""", text)
        assert not literal, f"{path.name} spells a path: {literal}"
        for loop in re.split(r"^for ", text, flags=re.M)[1:]:
            body = re.split(r"\n(?=\S)", loop, maxsplit=1)[0]
            if "rule:" in body:
                generating.append((path.name, "shell:" in body))
    assert sorted(generating) == [("figure.smk", True), ("targets.smk", False)]


# What `snakemake --lint` may still say, each justified where AIRFL is defined (common.smk).
JUSTIFIED_LINTS = {"Specify a conda environment or container for each rule.",
                   "Shell command directly uses variable AIRFL from outside of the rule"}


def test_snakemake_lint_says_only_what_common_smk_justifies(repo_root):
    import subprocess

    done = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--lint",
                           "--config", "profile=quick"], cwd=repo_root, capture_output=True,
                          text=True, timeout=300)
    titles = set(re.findall(r"^\s+\* (.*?):$", done.stdout + done.stderr, flags=re.M))
    assert "Lints for" in done.stdout + done.stderr, done.stderr[-2000:]  # the lint ran
    assert titles <= JUSTIFIED_LINTS, titles - JUSTIFIED_LINTS
    common = (repo_root / RULES / "common.smk").read_text()
    assert "`snakemake --lint` warns" in common and "conda environment or container" in common
