"""Each stage is declared once (pipeline/stage_table.py): every module of the stages folder has
exactly one record, and the CLI, the fork server, the parameter declarations and dependencies,
the DAG's jobs (dvc.yaml) and the Snakemake rules take their stage list from the table. A stage
added to the table alone (its record and its module, nothing else) becomes a sub-command that
runs on its declared params, is preloaded by the fork server, gets its view in the parameter
dependencies, its jobs in dvc.yaml and its rule in the Snakefile."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

import pytest

from airfl import cli, forkserver
from airfl.pipeline import dag, dvcgen, param_deps, paths, snakemake_rules, stage_table
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import papers
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
                   (Arg("experiment", "an experiment", pattern="{paper}/{figure}"),
                    Arg("curve", "its curve")),
                   lambda e, c: [paths.RESULTS / "hello" / e / f"{c}.txt"], ("seed",),
                   "hello_stage:run", view=stage_table.curve_view, light=True,
                   inputs=lambda ctx, e, c: [str(paths.run_table(e, c))])
    after = [s.name for s in stage_table.STAGES].index("privacy") + 1    # a curve's last stage
    monkeypatch.setattr(stage_table, "STAGES",
                        (*stage_table.STAGES[:after], record, *stage_table.STAGES[after:]))

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

    # its jobs in the DAG and dvc.yaml: one per curve, after the train job, reading the run table
    monkeypatch.chdir(repo_root)
    one = {**params}
    jobs = dag.experiment_jobs(experiment, one)
    names = [j.name for j in jobs]
    hello = {j.name: j for j in jobs if j.stage == "hello"}
    assert len(hello) == len(experiment.curves(params))
    job = hello[f"hello-cdpb-fig4-{curve}"]
    assert names.index(job.name) == names.index(f"train-cdpb-fig4-{curve}") + \
        (2 if experiment.privacy else 1)               # its curve's stages in table order
    assert job.deps == [str(paths.run_table(experiment.id, curve))]
    assert job.outs == record.files(experiment.id, curve) and job.params[:1] == ["seed"]
    stage = dvcgen.stage_names(dvcgen.render(params, None, jobs))[job.name]
    assert stage["cmd"] == f"airfl hello {experiment.id} {curve}"
    assert stage["outs"] == job.outs

    # its Snakemake rule: wildcard outputs and log from paths, inputs from the record
    rules = {r.name: r for r in snakemake_rules.rules(dag.Context(params))}
    rule = rules["hello"]
    assert rule.output == ["results/hello/{paper}/{figure}/{curve}.txt"]
    assert rule.log == ["logs/hello/{paper}/{figure}/{curve}.log"]
    assert rule.shell == "{AIRFL} hello {wildcards.paper}/{wildcards.figure} {wildcards.curve}" \
        " > {log} 2>&1"
    wildcards = {"paper": "cdpb", "figure": "fig4", "curve": curve}
    assert rule.input(_Wildcards(wildcards)) == job.deps
    assert rule.params["setting"](_Wildcards(wildcards)) == \
        dag.rule_params(dag.Context(params), "hello", (experiment.id, curve))


class _Wildcards(dict):
    """Snakemake's wildcards as the rules' functions read them (`items()`, attributes)."""

    def __getattr__(self, name):
        return self[name]


RULES = Path("workflow") / "rules"
# no stage: config and what the rules share, the rules generated from the table, the cost bound
# checked when a run starts
SUPPORT = {"common", "params_file", "stages", "cost"}


def test_the_rules_are_generated_from_the_table(params):
    """Every stage has its rules (one per number of arguments given; a figure, one per job),
    with the outputs and inputs its jobs have in dvc.yaml; then the collect targets."""
    ctx = dag.Context(params)
    rules = snakemake_rules.rules(ctx)
    names = [r.name for r in rules]
    assert len(set(names)) == len(names)
    for record in stage_table.STAGES:
        if record.per_job:
            assert any(n.startswith(f"{record.name}_") for n in names), record.name
        else:
            assert set(record.rule_names()) <= set(names), record.name
    jobs = {j.name: j for j in dag.experiment_jobs(dag.get_experiment("lapa/fig4"), params)}
    by_name = {r.name: r for r in rules}
    figure = by_name["figure_lapa_fig4"]
    assert figure.input(_Wildcards()) == jobs["figure-lapa-fig4"].deps
    assert by_name["train"].input(_Wildcards(paper="lapa", figure="fig4", curve="config5")) == \
        jobs["train-lapa-fig4-config5"].deps
    targets = [r for r in rules if r.shell is None]
    assert [r.name for r in targets] == [*papers(), "analytic", "audit"]


def test_the_rule_files_spell_no_path_and_one_loop_generates_every_rule(repo_root):
    """Paths come from paths.py (through the stage table); one loop generates every rule."""
    files = {p.stem for p in (repo_root / RULES).glob("*.smk")}
    assert files == SUPPORT
    generating = []
    for path in sorted((repo_root / RULES).glob("*.smk")) + [repo_root / "Snakefile"]:
        text = path.read_text()
        literal = re.findall(r"""["'](?:results|figures|logs)/""", text)
        assert not literal, f"{path.name} spells a path: {literal}"
        generating += [path.name for _ in re.findall(r"^for .*:\n(?:\s.*\n|\n)*?\s+define\(",
                                                     text, flags=re.M)]
        generating += [path.name for loop in re.split(r"^for ", text, flags=re.M)[1:]
                       if "rule:" in re.split(r"\n(?=\S)", loop, maxsplit=1)[0]]
    assert generating == ["stages.smk"]
    assert (repo_root / RULES / "stages.smk").read_text().count("rule:") == 2   # job, target


# What `snakemake --lint` may still say, each justified where AIRFL is defined (common.smk), and
# where the rules are generated (stages.smk).
JUSTIFIED_LINTS = {"Specify a conda environment or container for each rule.",
                   "Shell command directly uses variable AIRFL from outside of the rule",
                   "Mixed rules and functions in same snakefile."}


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
    stages = (repo_root / RULES / "stages.smk").read_text()
    assert "`snakemake --lint` warns of mixed rules and functions" in stages
