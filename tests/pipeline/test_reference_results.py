"""Reference results: publishing a finished run's figures and claims into reference/, checking
each manifest against the current parameter declarations and Snakemake's plan, rebuilding a
figure from its manifest, and the generated section of the paper's page.

The end-to-end test runs the quick profile's Baselines figure at a tiny scale in a throwaway
workspace: the tooling is the same at paper scale, only the run is longer."""

from __future__ import annotations

import os
import contextlib
import json
import shutil
import subprocess
import sys

import pytest
import yaml

from airfl.pipeline import reference_pages, reference_results
from workspace import make_workspace, run, tool_env

TINY = {"rounds": 2, "trials": 1, "eval_every": 1, "test_subset": 300, "train_eval_subset": 300}
FIGURE = "accuracy_vs_rounds"
SCALE_KEY = "baselines.accuracy_vs_rounds.scale.quick.rounds"


def test_committed_references_match_the_current_declarations(repo_root):
    """Every manifest under reference/: no key that is no longer declared, none missing, no
    value changed, and Snakemake still plans every published figure's jobs (`snakemake -n`,
    one start per profile: the check builds one paper's jobs at a time, never the whole DAG)."""
    with contextlib.chdir(repo_root):
        assert reference_results.check(dry_run=True) == []


@pytest.mark.parametrize("figure, name, reads", [
    ("baselines/accuracy_vs_rounds", "accuracy_vs_rounds", True),
    ("lapa/fig4a+fig5", "fig5", True),
    ("lapa/fig4a+fig5", "fig4", False),
    ("lapa/fig4a+fig5", "fig4a", True),
])
def test_a_claim_row_belongs_to_the_figures_it_reads(figure, name, reads):
    paper = "baselines" if figure.startswith("baselines") else "lapa"
    other = "lapa" if paper == "baselines" else "biased_fl"
    assert reference_pages._on_figure(figure, paper, name) is reads
    assert reference_pages._on_figure(figure, other, name) is False


def test_overrides_reach_snakemake_as_nested_config(repo_root):
    """A `--set` override recorded in a manifest is passed to Snakemake as the nested mapping it
    merges into params.yaml, and Snakemake plans the figure with it."""
    command = reference_results.snakemake_command(
        ["figures/baselines/accuracy_vs_rounds.png"], "quick",
        {"baselines.accuracy_vs_rounds.training.lr": 0.04, "seed": 3})
    assert command.endswith("--config profile=quick 'baselines={\"accuracy_vs_rounds\": "
                            "{\"training\": {\"lr\": 0.04}}}' seed=3")


@pytest.mark.slow
def test_publish_check_rebuild_and_page_section_on_a_quick_run(repo_root, tmp_path, mnist_mirror):
    env = tool_env(mnist_mirror)

    def tiny(params):
        params["baselines"][FIGURE]["scale"]["quick"] = TINY
        return params

    work = make_workspace(repo_root, tmp_path / "ws", env, tiny)
    run(["airfl", "reference-results", "run", "baselines", "--profile", "quick", "--",
         "--cores", "2", "-q"], work, env)
    out = work / "reference" / "baselines" / "quick"
    assert (out / f"{FIGURE}.csv").read_bytes() == \
        (work / "figures" / "baselines" / f"{FIGURE}.csv").read_bytes()
    assert (out / f"{FIGURE}.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "claims.rows.json").read_text()) == \
        json.loads((work / "results" / "claims" / "baselines.rows.json").read_text())
    assert (out / "CLAIMS.md").is_file()
    assert (work / "reference" / "quick_summary.json").is_file()        # left where it is

    manifest = json.loads((out / f"{FIGURE}.manifest.json").read_text())
    head = run(["git", "rev-parse", "HEAD"], work, env).stdout.strip()
    assert manifest["commit"] in (head, head + "+dirty")
    assert manifest["params"]["profile"] == "quick" and manifest["params"]["overrides"] == {}
    assert manifest["params"]["keys"][SCALE_KEY] == TINY["rounds"]
    assert manifest["params"]["hash"].startswith("sha256:")
    assert manifest["command"].startswith("snakemake baselines --cores 2 -q --config profile=quick")
    assert manifest["wall_s"] > 0 and manifest["cpu_s"] > 0      # the training ran in children
    assert manifest["machine"]["cpu"] and manifest["machine"]["cores"] >= 1
    assert manifest["date"][:2] == "20"

    # the page's section: each figure with the claims on it; writing it again changes nothing
    page = work / "docs" / "papers" / "baselines.md"
    text = page.read_text()
    assert text.count(reference_pages.SECTION_START) == 1
    assert f"../../reference/baselines/quick/{FIGURE}.png" in text
    rows = json.loads((out / "claims.rows.json").read_text())["claims"]
    assert rows and all(r["verdict"] in text and r["claim"] in text for r in rows)
    run(["airfl", "reference-results", "docs", "baselines"], work, env)
    assert page.read_text() == text

    run(["git", "add", "-A"], work, env)
    run(["git", "commit", "-qm", "reference"], work, env)
    checked = run(["airfl", "reference-results", "check"], work, env)
    committed = len(list((work / "reference").glob("*/*/*.manifest.json")))   # the repo's too
    assert f"{committed} reference manifests checked, 0 problems" in checked.stdout

    rebuild = run(["airfl", "reference-results", "rebuild", "baselines", FIGURE, "--profile",
                   "quick", "--print-only"], work, env).stdout.strip()
    assert rebuild == manifest["rebuild"]
    assert run([*rebuild.split(), "-n"], work, env).returncode == 0

    # a reference made with parameters that no longer exist says so, a line each, exit 1
    stale = dict(manifest)
    stale["params"] = {**manifest["params"], "keys": {**manifest["params"]["keys"],
                                                      "baselines.accuracy_vs_rounds.gone": 1}}
    (out / f"{FIGURE}.manifest.json").write_text(json.dumps(stale))
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["baselines"][FIGURE]["scale"]["quick"]["rounds"] = 3
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    failed = run(["airfl", "reference-results", "check", "--no-dry-run"], work, env, check=False)
    assert failed.returncode == 1
    lines = failed.stderr.strip().splitlines()
    assert any("stale key baselines.accuracy_vs_rounds.gone" in line for line in lines), lines
    assert any(f"{SCALE_KEY} is 3 now, the reference used 2" in line for line in lines), lines

    # figures built with the quick profile are not published as the paper profile's
    wrong = run(["airfl", "reference-results", "publish", "baselines", "--profile", "paper"],
                work, env, check=False)
    assert wrong.returncode == 2 and "not what profile paper makes now" in wrong.stderr
    assert not (work / "reference" / "baselines" / "paper").exists()

    # bad input: one line naming the value and what is allowed, nothing written
    bad = run(["airfl", "reference-results", "publish", "baselines", "--profile", "quick",
               "--figure", "nope"], work, env, check=False)
    assert bad.returncode == 2 and "no figure 'nope'" in bad.stderr and FIGURE in bad.stderr
    assert sorted(p.name for p in (work / "reference" / "baselines").iterdir()) == ["quick"]


def test_an_unknown_paper_stops_with_the_allowed_ones(repo_root):
    done = subprocess.run([sys.executable, "-m", "airfl", "reference-results", "publish", "nopaper", "--profile",
                           "quick"], cwd=repo_root, capture_output=True, text=True)
    assert done.returncode == 2 and "unknown paper 'nopaper'" in done.stderr
    assert "baselines" in done.stderr


def _manifest_of(paper: str, figure: str, profile: str) -> dict:
    """A manifest as `publish` writes its parameters for `figure` now (no files needed)."""
    params = reference_results.load(profile)
    jobs = reference_results.paper_jobs(paper, params, [figure])
    csv = reference_results.figure_csvs(paper, jobs)[figure]
    values = reference_results.key_values(reference_results.declared_keys(csv, jobs), params)
    return {"paper": paper, "figure": figure, "source": csv,
            "params": {"profile": profile, "overrides": {}, "keys": values,
                       "hash": reference_results.params_hash(values)},
            "rebuild": reference_results.snakemake_command(
                [csv, csv.replace(".csv", ".png")], profile, {})}


def test_a_reference_made_with_parameters_that_no_longer_exist_says_so(repo_root, tmp_path):
    """The check reads each manifest against the declarations of today: a key no job of the
    figure declares any more, one declared now that the reference lacks, a changed value, and
    an override that params.yaml no longer accepts each give one line naming it."""
    root = tmp_path / "reference"
    where = root / "cdpb" / "quick"
    where.mkdir(parents=True)
    with contextlib.chdir(repo_root):
        manifest = _manifest_of("cdpb", "fig2a", "quick")
        (where / "fig2a.manifest.json").write_text(json.dumps(manifest))
        assert reference_results.check(root, dry_run=False) == []

        keys = manifest["params"]["keys"]
        block = {**keys["cdpb.analytic"], "K": keys["cdpb.analytic"]["K"] + 1}
        stale = {**manifest, "params": {**manifest["params"], "keys": {
            "cdpb.analytic": block, "cdpb.analytic_removed": 1}}}
        (where / "fig2a.manifest.json").write_text(json.dumps(stale))
        lines = reference_results.check(root, dry_run=False)
        assert any("stale key cdpb.analytic_removed" in line for line in lines), lines
        assert any("new key profile" in line for line in lines), lines
        assert any("cdpb.analytic is" in line and f'"K": {block["K"]}' in line
                   for line in lines), lines
        assert len(lines) == 3 and all("\n" not in line for line in lines)

        gone = {**manifest, "params": {**manifest["params"],
                                       "overrides": {"cdpb.analytic.removed": 1}}}
        (where / "fig2a.manifest.json").write_text(json.dumps(gone))
        lines = reference_results.check(root, dry_run=False)
        assert len(lines) == 1 and "no longer valid" in lines[0] and "'removed'" in lines[0]
        assert "\n" not in lines[0]


def test_claims_are_evaluated_on_the_published_copies_alone(repo_root, tmp_path, monkeypatch):
    """A piece's claims come from the figures in the reference folder: run where no figures/
    or results/ exist, only the claims of the published figure are decided, with the verdicts
    the committed reference holds for it."""
    source = repo_root / "reference" / "cdpb" / "paper"
    if not (source / "fig3.manifest.json").is_file():
        pytest.skip("no paper-profile reference of CDPB Fig. 3 committed")
    where = tmp_path / "reference" / "cdpb" / "paper"
    where.mkdir(parents=True)
    for path in source.glob("fig3.*"):
        shutil.copyfile(path, where / path.name)
    params = reference_results.load("paper")
    monkeypatch.chdir(tmp_path)
    rows = reference_results.write_claims(where, "cdpb", params)
    committed = [r for r in json.loads((source / "claims.rows.json").read_text())["claims"]
                 if r["figure"] == "cdpb/fig3"]
    assert rows == committed and len(rows) >= 1
    assert json.loads((where / "claims.rows.json").read_text())["claims"] == rows
    assert "cdpb | " in (where / "CLAIMS.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reference"]    # nothing else written


def test_a_figure_piece_runs_its_own_jobs_not_the_paper_claims(repo_root):
    """`run --figure` asks Snakemake for the figures alone: the paper's claims job reads every
    figure of the paper (its training included) and would turn a 0 core-hour piece into the
    whole paper."""
    targets = reference_results.run_targets("cdpb", ["fig2a"])
    assert targets == ["figures/cdpb/fig2a.csv", "figures/cdpb/fig2a.png"]
    assert reference_results.run_targets("cdpb", None) == ["cdpb"]
    done = subprocess.run(["snakemake", "-n", "-F", *targets, "--config", "profile=paper"],
                          cwd=repo_root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]
    stats = done.stdout[done.stdout.index("Job stats"):].split("\n\n")[0]
    assert "analytic_figure" in stats and "paper_claims" not in stats and "train" not in stats


def test_the_page_section_shows_counts_runs_and_no_commit(repo_root):
    """The generated section of a paper's page: the verdict counts of the published claims,
    the runs with their machine and times, a runnable rebuild command; the commit stays in the
    manifests (no commit hash in docs)."""
    with contextlib.chdir(repo_root):
        published = [p for p in reference_results.manifests() if p.parts[-2] == "paper"]
        if not published:
            pytest.skip("no paper-profile reference committed")
        paper = published[0].parts[-3]
        text = reference_pages.section(paper)
        manifest = json.loads(published[0].read_text())
        rows = json.loads((published[0].parent / "claims.rows.json").read_text())["claims"]
    assert f"| {sum(r['verdict'] == 'holds' for r in rows)} |" in text
    assert manifest["machine"]["cpu"] in text and "### paper profile" in text
    assert f"airfl reference-results rebuild {paper} " in text
    assert manifest["commit"][:7] not in text
    assert all(f"`{r['claim']}`" in text for r in rows)


def test_an_unknown_figure_lists_every_figure_of_the_paper(repo_root):
    """A name that is neither an analytic nor an audit figure gets the paper's experiment jobs
    too, so the one-line error lists the training figures as well as the analytic ones."""
    with contextlib.chdir(repo_root), pytest.raises(reference_results.ReferenceError) as error:
        reference_results.publish("cdpb", "quick", ["nope"])
    said = str(error.value)
    assert "no figure 'nope'" in said and "fig8a" in said and "fig2a" in said
    assert "audit_cdpb" in said and "\n" not in said


def test_run_starts_snakemake_without_the_fork_server_so_every_jobs_cpu_counts(monkeypatch):
    """Jobs a fork server forks are its children, not the run's: their CPU time would be
    missing from RUSAGE_CHILDREN, so `run` hands Snakemake an environment without it."""
    import subprocess

    seen = {}

    def fake_run(args, env=None, **kwargs):
        seen["args"], seen["env"] = args, env
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setenv("AIRFL_FORKSERVER", "/nowhere/airfl.sock")
    monkeypatch.setattr(reference_results.subprocess, "run", fake_run)
    monkeypatch.setattr(reference_results, "publish",
                        lambda paper, profile, figures, overrides, command, wall, cpu, partial:
                        [command])
    [command] = reference_results.run("cdpb", "paper", ["fig8a"], {}, ["--cores", "1", "-F"])
    assert "AIRFL_FORKSERVER" not in seen["env"] and seen["env"]["PATH"] == os.environ["PATH"]
    assert seen["args"][0] == "snakemake" and "figures/cdpb/fig8a.csv" in seen["args"]
    assert command.startswith("snakemake ")


def test_a_large_figure_csv_is_stored_compressed_byte_stable_and_read_back_whole(tmp_path):
    """Above the bound a figure's CSV is kept as .csv.gz (git holds reference/), the same bytes
    each time it is stored, read back as the figure stage wrote it; publishing it again below
    the bound leaves only the plain form."""
    from airfl.pipeline import reference_layout as layout

    source = tmp_path / "fig.csv"
    source.write_bytes(b"curve,trial,round,value\n" + b"a,0,1,0.5\n" * 200_000)
    assert source.stat().st_size > layout.CSV_GZIP_ABOVE
    where = tmp_path / "published"
    where.mkdir()
    stored = layout.store_csv(source, where, "fig")
    first = stored.read_bytes()
    assert stored.name == "fig.csv.gz" and len(first) < source.stat().st_size / 10
    assert layout.store_csv(source, where, "fig").read_bytes() == first      # byte-stable
    assert layout.csv_file(where, "fig") == stored
    assert layout.read_csv_bytes(where, "fig") == source.read_bytes()
    small = tmp_path / "small.csv"
    small.write_bytes(b"curve,trial\na,0\n")
    assert layout.store_csv(small, where, "fig").name == "fig.csv"
    assert sorted(p.name for p in where.iterdir()) == ["fig.csv"]
    assert layout.read_csv_bytes(where, "fig") == small.read_bytes()


def test_claims_read_a_compressed_published_figure_as_the_run_did(repo_root, tmp_path,
                                                                  monkeypatch):
    """Biased FL's Fig. 3(b)/(c) data are stored compressed: the claims evaluated on those
    copies are the ones the committed reference holds."""
    source = repo_root / "reference" / "biased_fl" / "paper"
    if not (source / "fig3b.csv.gz").is_file():
        pytest.skip("no compressed paper-profile reference of Biased FL Fig. 3(b) committed")
    where = tmp_path / "reference" / "biased_fl" / "paper"
    where.mkdir(parents=True)
    for path in [*source.glob("fig3b.*"), *source.glob("fig3c.*")]:
        shutil.copyfile(path, where / path.name)
    params = reference_results.load("paper")
    monkeypatch.chdir(tmp_path)
    rows = reference_results.write_claims(where, "biased_fl", params)
    committed = [r for r in json.loads((source / "claims.rows.json").read_text())["claims"]
                 if r["figure"] in ("biased_fl/fig3b", "biased_fl/fig3c")]
    assert rows == committed and len(rows) >= 5
