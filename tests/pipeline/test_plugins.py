"""Wings are plug-ins: the registry finds the project's own wings through entry points, and a
user's separately installed package (tests/plugins/airfl_mini, installed here for real with pip)
adds a scheme to an existing figure and a whole mini-paper: Snakemake builds its figure and claim
row, `snakemake mini` is its target, and dvc.yaml gains its stages, with no file under
src/airfl edited. This is exactly what the README's "Add your own scheme" and "Add your own
paper" sections describe."""

from __future__ import annotations

import os
import shutil
import sys

import pandas as pd
import pytest
import yaml

from airfl.pipeline import registry
from workspace import make_workspace, run, tool_env

PROJECT_WINGS = ["arena", "baselines", "biased_fl", "cdpb", "dp_perk", "generic"]


def test_registry_finds_the_project_wings_through_entry_points():
    from importlib.metadata import entry_points

    points = {p.name: p.value for p in entry_points(group=registry.GROUP)}
    assert {n: points[n] for n in PROJECT_WINGS} == {
        "arena": "airfl.arena:WING", "baselines": "airfl.papers.baselines:WING", "biased_fl": "airfl.papers.biased_fl:WING",
        "cdpb": "airfl.papers.cdpb:WING", "dp_perk": "airfl.papers.dp_perk:WING",
        "generic": "airfl.schemes:WING"}
    assert set(PROJECT_WINGS) <= {w.name for w in registry.wings()}
    assert registry.papers()[:5] == ["arena", "baselines", "biased_fl", "cdpb", "dp_perk"]
    # every scheme kind resolves to its class, whose kind matches the declaration
    for kind, wing in registry.scheme_wings().items():
        assert wing.scheme_class(kind).kind == kind
    assert {e.paper for e in registry.all_experiments()} >= {"baselines", "biased_fl", "cdpb",
                                                              "dp_perk"}


def test_light_jobs_validate_without_importing_torch(repo_root):
    """Every job validates params.yaml with the assembled schema; the light stages (privacy,
    validate) must not pay for torch or a wing's experiments to do so."""
    code = ("import sys; from airfl.pipeline.params import load_params; "
            f"load_params({str(repo_root / 'params.yaml')!r}); "
            "print(sorted(m for m in ('torch', 'pandas', 'airfl.papers.biased_fl.experiments') "
            "if m in sys.modules))")
    done = run([sys.executable, "-c", code], repo_root, None)
    assert done.stdout.strip() == "[]"


def _mini(params: dict) -> dict:
    """The tiny baselines figure with the plugin's scheme as one more curve, and the mini-paper's
    block (a user's params.yaml after installing the plugin)."""
    block = params["baselines"]["accuracy_vs_rounds"]
    block["scale"]["quick"] = {"rounds": 2, "trials": 1, "eval_every": 1, "test_subset": 300,
                               "train_eval_subset": 300}
    block["curves"]["trimmed"] = {"scheme": "trimmed_mean", "trim": 0.1}
    params["mini"] = {"trimmed_vs_fedavg": {
        "dataset": "mnist", "num_devices": 10, "partition": {"kind": "iid"},
        "model": {"name": "softmax"},
        "training": {"local_steps": 2, "batch_size": 16, "lr": 0.05},
        "channel": {"radius_m": 100.0, "pathloss": {"model": "log_distance", "exponent": 3.0}},
        "curves": {"fedavg": {"scheme": "ideal_fedavg"},
                   "trimmed": {"scheme": "trimmed_mean", "trim": 0.1}},
        "scale": {"quick": {"rounds": 3, "trials": 2, "test_subset": 300, "train_eval_subset": 300},
                  "paper": {"rounds": 50, "trials": 3}}}}
    return params


@pytest.fixture(scope="module")
def plugin_env(repo_root, mnist_mirror, tmp_path_factory):
    """The plugin installed with pip (a wheel built from a copy of its source) into its own
    folder, put on PYTHONPATH: installed for the commands this test runs, invisible to the rest
    of the test session."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(repo_root / "tests" / "plugins" / "airfl_mini", root / "src")
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(root / "site"), str(source)], root, None, timeout=300)
    return tool_env(mnist_mirror, PYTHONPATH=str(root / "site"))


@pytest.mark.slow
def test_an_installed_package_adds_a_scheme_and_a_paper(repo_root, tmp_path, plugin_env,
                                                        mnist_mirror):
    work = make_workspace(repo_root, tmp_path / "ws", plugin_env, _mini)
    listed = run(["airfl", "list"], work, plugin_env).stdout
    assert "wing mini (airfl_mini): 1 schemes" in listed and "mini/trimmed_vs_fedavg" in listed

    run(["snakemake", "--cores", "2", "mini",
         "figures/baselines/accuracy_vs_rounds.csv"], work, plugin_env)
    drawn = pd.read_csv(work / "figures/mini/trimmed_vs_fedavg.csv")
    assert set(drawn["curve"]) == {"fedavg", "trimmed"}
    assert (work / "figures/mini/trimmed_vs_fedavg.png").stat().st_size > 0
    baseline = pd.read_csv(work / "figures/baselines/accuracy_vs_rounds.csv")
    assert "trimmed" in set(baseline["curve"])
    # its wing's declared label, and a colour of its own in the figure (the CSV records it)
    per_curve = baseline.drop_duplicates("curve").set_index("curve")
    assert per_curve.loc["trimmed", "label"] == "Trimmed mean"
    assert per_curve["color"].is_unique, per_curve[["label", "color"]]
    claims = (work / "figures/mini/CLAIMS.md").read_text()
    assert "| mini/trimmed_vs_fedavg | trimmed_not_worse |" in claims

    stages = yaml.safe_load((work / "dvc.yaml").read_text())["stages"]
    assert {"train-mini-trimmed_vs_fedavg-trimmed", "figure-mini-trimmed_vs_fedavg",
            "claims-mini", "train-baselines-accuracy_vs_rounds-trimmed"} <= set(stages)
    assert not any("src/airfl" in dep and "mini" in dep
                   for stage in stages.values() for dep in stage["deps"])

    # not installed: not there (its block is then an unknown key, named as such)
    bare = tool_env(mnist_mirror)
    done = run(["airfl", "validate"], work, bare, check=False)
    assert done.returncode == 2 and "'mini' was unexpected" in done.stderr


# -- a broken or clashing plug-in -----------------------------------------------------------------

def _plugin(site, distribution: str, entry: str, files: dict[str, str]) -> None:
    """A distribution installed into folder `site` as pip lays one out (its package files and a
    dist-info with METADATA and one `airfl.wings` entry point)."""
    info = site / f"{distribution.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[airfl.wings]\n{entry}\n")
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)


def _airfl(repo_root, site, *args):
    env = {**os.environ, "PYTHONPATH": str(site)}
    return run([sys.executable, "-m", "airfl", *args], repo_root, env, check=False, timeout=300)


@pytest.mark.parametrize("files, reason", [
    ({"airfl_broken/__init__.py": "raise RuntimeError('the plug-in is broken\\n(two lines)')\n"},
     "RuntimeError: the plug-in is broken (two lines)"),
    ({"airfl_broken/__init__.py": "from airfl.core.wing import Wing\n"
                                  "WING = Wing(name='broken', package='airfl_broken', "
                                  "params='airfl_broken.params')\n",
      "airfl_broken/params.py": "import no_such_module\n"},
     "ModuleNotFoundError: No module named 'no_such_module'"),
])
def test_a_plugin_that_fails_to_load_is_one_line_and_the_other_wings_work(repo_root, tmp_path,
                                                                          files, reason):
    _plugin(tmp_path, "airfl-broken", "broken = airfl_broken:WING", files)
    line = ("airfl: skipped wing 'broken' of airfl-broken (entry point airfl.wings: broken = "
            f"airfl_broken:WING), which failed to load: {reason}")
    done = _airfl(repo_root, tmp_path, "validate")
    assert (done.returncode, done.stdout, done.stderr) == (0, "params valid; profile quick\n",
                                                          line + "\n")
    listed = _airfl(repo_root, tmp_path, "list")
    assert listed.returncode == 0 and listed.stderr == line + "\n"
    assert {row.split()[1] for row in listed.stdout.splitlines() if row.startswith("wing ")} \
        >= set(PROJECT_WINGS)


WING_MODULE = ("from airfl.core.wing import Wing\n"
               "WING = Wing(name={name!r}, package='airfl_clash', schemes={schemes!r})\n")


@pytest.mark.parametrize("entry, module, expected", [
    ("clash = airfl_clash:WING",
     WING_MODULE.format(name="clash", schemes={"ideal_fedavg": "airfl_clash:Fedavg"}),
     "scheme kind 'ideal_fedavg' is offered by wings "),
    ("cdpb = airfl_clash:WING", WING_MODULE.format(name="cdpb", schemes={}),
     "two wings named 'cdpb': "),
])
def test_a_scheme_or_wing_name_clash_stops_validation(repo_root, tmp_path, entry, module, expected):
    _plugin(tmp_path, "airfl-clash", entry, {"airfl_clash/__init__.py": module})
    done = _airfl(repo_root, tmp_path, "validate")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("airfl: the installed wings clash: " + expected)
    assert len(done.stderr.splitlines()) == 1
