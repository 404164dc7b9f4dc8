"""End-to-end pipeline tests on a tiny copy of the quick profile (real Snakemake, DVC and
cluster-executor runs in a temporary workspace). They build the baselines figure's subgraph; the
whole DAG of every paper runs in CI's quick-profile run (.ci/run)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest
import yaml

from airfl.pipeline.dvcgen import GUARD, STAMP as STAMP_TEXT
from workspace import make_workspace, run as _run, tool_env

pytestmark = pytest.mark.slow


def _tiny(params: dict) -> dict:
    block = params["baselines"]["accuracy_vs_rounds"]
    block["scale"]["quick"] = {"rounds": 2, "trials": 1, "eval_every": 1, "test_subset": 300,
                               "train_eval_subset": 300}
    return params


@pytest.fixture(scope="module")
def env(mnist_mirror):
    return tool_env(mnist_mirror)


def _workspace(repo_root, target, env):
    return make_workspace(repo_root, target, env, _tiny)


FIGURE = "figures/baselines/accuracy_vs_rounds"
TARGETS = [f"{FIGURE}.png", "figures/partitions/baselines/accuracy_vs_rounds.png"]
DVC_TARGET = "figure-baselines-accuracy_vs_rounds"
STAMP = "results/dvc_dag.txt"                 # the dvc-dag stage's output (paths.dvc_stamp)


@pytest.fixture(scope="module")
def built(repo_root, tmp_path_factory, env):
    """A workspace where the tiny baselines subgraph ran once with Snakemake."""
    work = _workspace(repo_root, tmp_path_factory.mktemp("pipe") / "ws", env)
    _run(["snakemake", "--cores", "2", *TARGETS, "-q"], work, env)
    return work


def test_committed_dvc_yaml_is_generated_from_the_registry(repo_root, env):
    done = _run(["airfl", "dvc-yaml", "--check"], repo_root, env, check=False)
    assert done.returncode == 0, done.stderr


def test_dvc_lock_holds_only_stages_dvc_yaml_has(repo_root):
    """`dvc commit` never prunes, so the lock kept 78 stages of an older
    registry; `make lock` now starts from an empty lock."""
    locked = set(yaml.safe_load((repo_root / "dvc.lock").read_text())["stages"])
    declared = set(yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"])
    assert not locked - declared, sorted(locked - declared)[:10]


def test_dvc_plots_have_each_figures_own_axes(repo_root):
    """every figure used to be declared `round` vs `test_accuracy`, also the
    ones drawn as sub-optimality gap vs uplink time; the CSV must hold both columns."""
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    plots = {path: axes for stage in stages.values() for entry in stage.get("plots", [])
             for path, axes in entry.items()}
    axes = {path: {k: p[k] for k in ("x", "y")} for path, p in plots.items()}
    assert axes["figures/biased_fl/fig3a.csv"] == {"x": "time_s", "y": "suboptimality_gap"}
    assert axes["figures/dp_perk/fig5.csv"] == {"x": "param_eps_tilde", "y": "test_accuracy"}
    assert plots["figures/biased_fl/fig3a.csv"]["template"] == "airfl_lines_logy"   # as drawn
    assert plots["figures/dp_perk/fig5.csv"]["x_label"] == "Privacy budget ε̃ = ε/√d"
    for path, axes in plots.items():          # the figure CSVs CI's quick run made, if present
        if (repo_root / path).exists():
            header = (repo_root / path).read_text().split("\n", 1)[0].split(",")
            assert {axes["x"], axes["y"]} <= set(header), (path, axes)


def test_dvc_yaml_declares_each_papers_claims_as_metrics(repo_root):
    """`dvc metrics diff` after a change shows which claims flipped: the metrics are cached
    outputs (an uncached one, `cache: false`, had no value at the last commit, as `results/` is
    not in git), so the last commit's values come from the cache through its dvc.lock."""
    from airfl.pipeline import paths
    from airfl.pipeline.registry import papers

    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    entries = [(name, entry) for name, stage in stages.items()
               for entry in stage.get("metrics", [])]
    assert all(isinstance(entry, str) for _, entry in entries), entries[:3]     # cached
    declared = {entry: name for name, entry in entries}
    for paper in papers():
        assert declared[str(paths.claims_metrics(paper))] == f"claims-{paper}"
    assert declared[str(paths.claims_metrics())] == "claims"


def test_every_param_key_dvc_tracks_is_written_in_params_yaml(repo_root):
    """DVC reads params.yaml as written, without the schema's defaults: the `dvc-dag` stage
    writes each stage's manifest from the keys as written (`written_keys`), and a key only the
    schema supplies would stop it (it used to fail `dvc commit` with MissingParamsError)."""
    from airfl.params.config import read_params
    from airfl.pipeline.dag import jobs
    from airfl.pipeline.dvcgen import written_keys
    from airfl.pipeline.params import load_params

    path = str(repo_root / "params.yaml")
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    assert raw == read_params(path, {})
    missing = set()
    for job in jobs(load_params(path, {})):
        for key in written_keys(job.params, raw):
            node = raw
            for part in key.split("."):
                if not isinstance(node, dict) or part not in node:
                    missing.add(key)
                    break
                node = node[part]
    assert not missing, sorted(missing)


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_snakemake_builds_every_stage_of_the_figure(built):
    for path in ["results/data/mnist.json", "results/partitions/baselines/accuracy_vs_rounds.npz",
                 "results/designs/baselines/accuracy_vs_rounds/ota_low_snr.json",
                 "results/privacy/baselines/accuracy_vs_rounds/fedavg_dp.csv",
                 f"{FIGURE}.png", f"{FIGURE}.pdf", f"{FIGURE}.csv",
                 "figures/partitions/baselines/accuracy_vs_rounds.png"]:
        assert (built / path).stat().st_size > 0, path


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_report_has_the_figure_with_its_caption(built, env):
    _run(["snakemake", "--report", "report.html", *TARGETS], built, env)
    html = (built / "report.html").read_text(errors="replace")
    assert "accuracy_vs_rounds" in html and "Profile" in html and "Wasserstein" in html


LR = "baselines.accuracy_vs_rounds.training.lr"


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_a_job_log_says_what_it_did_and_long_loops_report_progress(built, env):
    """Job logs were empty or held tqdm bars (carriage returns) written into files. A train
    job's log names the job and its settings, its parameters, trials, rounds and final metrics,
    and its time; progress lines come at AIRFL_PROGRESS_SECONDS (30 s by default, so none in
    this 2-round job; at 0, one a round)."""
    log = (built / "logs/train/baselines/accuracy_vs_rounds/ota_low_snr.log").read_text()
    summary = next(line for line in log.splitlines() if line.startswith("train baselines/"))
    assert "1 trial, 2 rounds" in summary and "final test_accuracy " in summary
    assert '"snr_db": -10.0' in summary and '"rounds": 2' in summary
    assert re.search(r"airfl train baselines/accuracy_vs_rounds ota_low_snr: done in [\d.]+ s "
                     r"\(profile quick, seed \d+, device cpu, threads 1\)", log)
    assert "\r" not in log
    path = built / "ideal.log"
    with path.open("w") as out:
        subprocess.run(["airfl", "train", "baselines/accuracy_vs_rounds", "ideal"], cwd=built,
                       env={**env, "AIRFL_PROGRESS_SECONDS": "0"}, stdout=out,
                       stderr=subprocess.STDOUT, check=True, timeout=600)
    lines = path.read_text().splitlines()
    assert [line.split(": ", 1)[1].rsplit(",", 1)[0] for line in lines if ": round " in line] == [
        "round 1/2 (50 %)", "round 2/2 (100 %)"]


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_threads_are_a_rerun_trigger(built, env):
    """torch's thread count changes sums in the last digits, so a change must
    rerun what it touches (dvc.yaml lists `threads` too); it used to say nothing to be done."""
    out = _run(["snakemake", "-n", "--cores", "1", *TARGETS, "--config", "threads=2"], built,
               env).stdout
    trained = re.findall(r"rule train:.*?reason: ([^\n]*)", out, flags=re.S)
    assert len(trained) == 5 and all("Params have changed" in r for r in trained), out[-2000:]


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_planned_job_seconds_become_snakemake_priorities(built, env):
    """each job's Snakemake priority is its planned seconds (airfl.pipeline.job_priority, the
    plan's model at the run's params and workflow/unit_costs.json), so the longest jobs start
    first: a table whose client steps cost 1,000x raises the train jobs' priorities to what the
    plan says of them; the jobs run are the same (priorities only order them)."""
    from airfl.pipeline.job_priority import JobPriorities
    from airfl.pipeline.params import load_params

    table = built / "workflow" / "unit_costs.json"
    before = table.read_text()
    dearer = json.loads(before)
    for model in dearer["models"].values():
        model["client_step_s"] = {b: 1000 * s for b, s in model["client_step_s"].items()}
    outs = {}
    try:
        for name, text in (("stored", before), ("dearer", json.dumps(dearer))):
            table.write_text(text)
            outs[name] = _run(["snakemake", "-n", "--cores", "1", *TARGETS, "--forcerun",
                               "train"], built, env).stdout
    finally:
        table.write_text(before)
    params = load_params(str(built / "params.yaml"))
    for name, text in (("stored", before), ("dearer", json.dumps(dearer))):
        path = built / f"{name}.json"
        path.write_text(text)
        expected = JobPriorities(params, path)
        jobs = re.findall(r"rule train:\n(.*?)(?=\n\[|\n\n|\Z)", outs[name], flags=re.S)
        assert len(jobs) == 5, outs[name][-3000:]
        for block in jobs:
            wildcards = dict(kv.split("=", 1) for kv in
                             re.search(r"wildcards: (.*)", block).group(1).split(", "))
            found = re.search(r"priority: (\d+)", block)
            want = expected.priority("train", wildcards)
            assert (int(found.group(1)) if found else 0) == want, (name, block)
            if name == "dearer":
                assert want > 0
    assert sorted(re.findall(r"wildcards: (.*)", outs["stored"])) == \
        sorted(re.findall(r"wildcards: (.*)", outs["dearer"]))


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_nested_config_override_reaches_the_jobs_as_a_number(built, env):
    """a nested `--config` value arrived as a string and failed validation."""
    done = _run(["snakemake", "-n", "-p", "--cores", "1", *TARGETS, "--config",
                 "baselines={accuracy_vs_rounds: {training: {lr: 0.04}}}"], built, env)
    assert f"--set {LR}=0.04 train" in done.stdout.replace("'", "")


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_a_diverging_run_stops_naming_the_curve(built, env):
    """`lr: .inf` (now refused by validation) trained to NaN losses with exit 0;
    a finite lr that overflows must stop the run, name the curve and write nothing."""
    table = built / "results/runs/baselines/accuracy_vs_rounds/ideal.csv"
    before = table.read_bytes()
    done = _run(["airfl", "--set", f"{LR}=1.0e+300", "train", "baselines/accuracy_vs_rounds",
                 "ideal"], built, env, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "baselines/accuracy_vs_rounds curve 'ideal'" in done.stderr
    assert "training diverged" in done.stderr and table.read_bytes() == before


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_the_figure_stage_refuses_runs_made_with_other_params(built, env):
    """a figure must never be older than the parameters it claims; drawn from
    runs of another lr it claimed the current params.yaml."""
    csv = built / f"{FIGURE}.csv"
    before = csv.read_bytes()
    done = _run(["airfl", "--set", f"{LR}=0.04", "figure", "baselines/accuracy_vs_rounds"], built,
                env, check=False)
    assert done.returncode == 1
    assert "runs made with other parameters" in done.stderr
    assert "ideal (experiment)" in done.stderr and csv.read_bytes() == before


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_a_run_table_cut_mid_line_is_rebuilt_never_drawn(built, env):
    """A run table cut mid-line gave a figure with half the rows and a cut number (exit 0): the
    figure job stops naming the file and removes it, and the next plain run retrains that curve
    and draws the figure it drew before."""
    csv = built / f"{FIGURE}.csv"
    before = csv.read_bytes()
    table = built / "results/runs/baselines/accuracy_vs_rounds/ideal.csv"
    data = table.read_bytes()
    table.write_bytes(data[:len(data) * 2 // 3])
    failed = _run(["snakemake", "--cores", "2", *TARGETS], built, env, check=False)
    log = (built / "logs/figure/baselines/accuracy_vs_rounds.log").read_text()
    assert failed.returncode != 0
    assert f"{table.relative_to(built)} is cut short (its last line has no line end)" in log
    assert not table.exists() and not csv.exists()
    _run(["snakemake", "--cores", "2", *TARGETS], built, env)
    assert csv.read_bytes() == before


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def _record(work, env) -> None:
    """What `make dvc-record` does for the figure's subgraph: the dvc-dag stamp, then commit."""
    _run(["airfl", "dvc-yaml", "--stamp", STAMP], work, env)
    _run(["dvc", "commit", "-f", "-q", "--with-deps", DVC_TARGET], work, env)


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_after_dvc_record_snakemake_has_nothing_to_do(built, env):
    """`dvc commit -f` copies every output back with a new time; Snakemake compares such files
    by checksum, but only below its size limit. Under a limit of 1,000 bytes (standing in for
    the 1 MB default against a Biased FL figure CSV of 1.01 MB) it plans jobs again; with the
    profile's limit, nothing. DVC copies the files back in no fixed order, so an input may come
    out newer than its output or not; the test makes one so (a run's records, as the copy may
    leave them) instead of relying on the order."""
    _record(built, env)
    runs = built / "results" / "runs" / "baselines" / "accuracy_vs_rounds"
    table = max(runs.iterdir(), key=lambda p: p.stat().st_size)    # a run's records: privacy's input
    assert table.stat().st_size > 1000
    later = max(p.stat().st_mtime for p in (built / "figures").rglob("*") if p.is_file()) + 10
    os.utime(table, (later, later))
    plan = _run(["snakemake", "-n", *TARGETS], built, env)
    assert "Nothing to be done" in plan.stdout + plan.stderr
    small = _run(["snakemake", "-n", "--max-checksum-file-size", "1000", *TARGETS], built, env)
    assert "Nothing to be done" not in small.stdout + small.stderr


def test_a_new_time_on_a_large_input_reruns_nothing_under_the_profile(repo_root, tmp_path, env):
    """The profile's checksum limit with a 2 MB file (over Snakemake's 1 MB default): given a
    new time, as `dvc commit` gives it, its consumer is not planned again."""
    (tmp_path / "Snakefile").write_text(
        "rule all:\n    input: 'b.txt'\n"
        "rule a:\n    output: 'a.bin'\n    run:\n"
        "        open(output[0], 'wb').write(bytes(range(256)) * 8192)\n"
        "rule b:\n    input: 'a.bin'\n    output: 'b.txt'\n    shell: 'wc -c {input} > {output}'\n")
    profile = ["--profile", str(repo_root / "profiles" / "default"), "--cores", "1"]
    _run(["snakemake", *profile], tmp_path, env)
    assert (tmp_path / "a.bin").stat().st_size == 2 ** 21
    later = time.time() + 10
    os.utime(tmp_path / "a.bin", (later, later))
    plan = _run(["snakemake", "-n", *profile], tmp_path, env)
    assert "Nothing to be done" in plan.stdout + plan.stderr


@pytest.mark.xdist_group("built_workspace")   # one build, shared (make test: -n)
def test_dvc_reruns_only_what_a_parameter_change_touches(built, env):
    _record(built, env)
    assert "up to date" in _run(["dvc", "status", "--with-deps", DVC_TARGET], built, env).stdout
    params_path = built / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    params["baselines"]["accuracy_vs_rounds"]["curves"]["ota_low_snr"]["snr_db"] = -5.0
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    out = _run(["dvc", "repro", DVC_TARGET], built, env).stdout
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    curve = "baselines-accuracy_vs_rounds-ota_low_snr"
    assert ran == {GUARD, f"design-{curve}", f"train-{curve}",   # dvc-dag: params.yaml changed
                   f"privacy-{curve}", "figure-baselines-accuracy_vs_rounds"}, ran
    assert (built / STAMP).read_text() == STAMP_TEXT


def test_dvc_repro_stops_before_any_stage_when_params_describe_another_dag(repo_root, tmp_path,
                                                                          env):
    """dvc.yaml is one params.yaml's DAG: with another profile (or an added curve) the
    `dvc-dag` stage, which every stage depends on, stops `dvc repro` with what to run."""
    work = _workspace(repo_root, tmp_path / "ws", env)
    params_path = work / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    params_path.write_text(yaml.safe_dump({**params, "profile": "paper"}, sort_keys=False))
    done = _run(["dvc", "repro", DVC_TARGET], work, env, check=False)
    assert done.returncode != 0
    assert re.findall(r"Running stage '([^']+)'", done.stdout) == [GUARD], done.stdout
    assert "params.yaml describes another DAG than dvc.yaml" in done.stderr + done.stdout
    assert "Run `airfl dvc-yaml`" in done.stderr + done.stdout
    assert not (work / "results" / "data").exists() and not (work / STAMP).exists()
    params["baselines"]["accuracy_vs_rounds"]["curves"]["ota_mid_snr"] = {
        "scheme": "ota_truncated_inversion", "snr_db": 0.0, "truncation_threshold": 0.1,
        "clip_norm": 1.0}
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    done = _run(["airfl", "dvc-yaml", "--stamp", STAMP], work, env, check=False)
    assert done.returncode == 1 and "3 stages to add" in done.stderr, done.stderr
    _run(["airfl", "dvc-yaml"], work, env)                # regenerate: the DAG matches
    _run(["airfl", "dvc-yaml", "--stamp", STAMP], work, env)
    assert (work / STAMP).read_text() == STAMP_TEXT
    stages = yaml.safe_load((work / "dvc.yaml").read_text())["stages"]
    assert "train-baselines-accuracy_vs_rounds-ota_mid_snr" in stages
    assert all(s["deps"][0] == f"results/dvc/{name}.json"      # its manifest, the guard's output
               for name, s in stages.items() if name != GUARD)


def test_bad_params_stop_snakemake_before_any_job(repo_root, tmp_path, env):
    work = _workspace(repo_root, tmp_path / "ws", env)
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["baselines"]["accuracy_vs_rounds"]["curves"]["ota_high_snr"]["snr_dB"] = 10
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    done = _run(["snakemake", "--cores", "1"], work, env, check=False)
    assert done.returncode != 0
    message = done.stdout + done.stderr
    assert "baselines.accuracy_vs_rounds.curves.ota_high_snr" in message and "'snr_dB'" in message
    assert not (work / "results").exists()


def test_slurm_profile_runs_real_jobs_through_the_cluster_generic_executor(repo_root, tmp_path, env):
    work = _workspace(repo_root, tmp_path / "ws", env)
    target = "results/partitions/baselines/accuracy_vs_rounds.npz"
    _run(["snakemake", "--profile", "profiles/slurm", "--executor", "cluster-generic",
          "--cluster-generic-submit-cmd", "bash", "--jobs", "2", target], work, env)
    assert (work / target).exists() and (work / "results/data/mnist.json").exists()


def test_default_profile_loads_and_a_killed_run_reruns_without_flags(repo_root, tmp_path, env):
    """the default profile (rerun-incomplete, content triggers) must load for a
    plain `snakemake`. A SIGKILL while a job has written one of its outputs leaves that output
    marked incomplete; without the profile every rerun (after the `--unlock` Snakemake asks
    for) stopped with IncompleteFilesException until `--rerun-incomplete` was typed by hand."""
    work = _workspace(repo_root, tmp_path / "ws", env)
    first = work / "results/partitions/baselines/accuracy_vs_rounds.npz"
    last = work / "figures/partitions/baselines/accuracy_vs_rounds.png"
    run = subprocess.Popen(["snakemake", "--cores", "1", str(last.relative_to(work))], cwd=work,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not first.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        os.killpg(run.pid, signal.SIGKILL)             # snakemake and its job, between outputs
        run.wait()
    assert first.exists() and not last.exists(), "the kill did not land between the outputs"
    assert any((work / ".snakemake" / "incomplete").rglob("*")), "no incomplete marker left"
    _run(["snakemake", "--unlock"], work, env)          # a killed Snakemake leaves its lock
    done = _run(["snakemake", "--cores", "1", str(last.relative_to(work))], work, env)
    assert "Using workflow specific profile profiles/default" in done.stderr
    assert last.stat().st_size > 0


def test_yaml_errors_stop_snakemake_with_their_line(repo_root, tmp_path, env):
    """Snakemake's own loader said only "not valid JSON or YAML", and kept the
    last of two repeated keys; params.yaml is now read strictly before it."""
    work = _workspace(repo_root, tmp_path / "ws", env)
    text = (work / "params.yaml").read_text()
    for broken, expected in [
            (text.replace("profile: quick", "profile: quick: paper", 1), "params.yaml, line 1,"),
            (text.replace("seed: ", "seed: 1\nseed: ", 1), "duplicate key 'seed'")]:
        (work / "params.yaml").write_text(broken)
        done = _run(["snakemake", "-n", "--cores", "1"], work, env, check=False)
        assert done.returncode != 0 and expected in done.stdout + done.stderr


def test_a_failed_rerun_never_leaves_a_stale_figure(repo_root, tmp_path, env):
    """The probe's sequence: change lr (0.05 -> 0.04), run with --keep-going
    while every train job of the figure fails (here: a dataset file gone), then run again: the
    figure must be redrawn from lr = 0.04 runs, never "Nothing to be done" with the old one.
    Then item 5: a parameter change reruns train, which finds a garbage design: it removes it
    and fails, and the next run rebuilds it. The change is `device: auto` (cpu here): a knob of
    train's view and not of design's (lr is part of the settings design reads), and
    one that leaves the numbers as they were."""
    work = _workspace(repo_root, tmp_path / "ws", env)
    _run(["snakemake", "--cores", "2", *TARGETS, "-q"], work, env)
    old = (work / f"{FIGURE}.csv").read_bytes()
    params_path = work / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    assert params["baselines"]["accuracy_vs_rounds"]["training"]["lr"] == 0.05
    params["baselines"]["accuracy_vs_rounds"]["training"]["lr"] = 0.04
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    images = work / "data/MNIST/raw/train-images-idx3-ubyte.gz"
    images.rename(images.with_suffix(".moved"))
    failed = _run(["snakemake", "--cores", "2", "--keep-going", *TARGETS], work, env, check=False)
    assert failed.returncode != 0 and failed.stderr.count("Error in rule train") == 5
    images.with_suffix(".moved").rename(images)
    plan = _run(["snakemake", "-n", "--cores", "2", *TARGETS], work, env).stdout
    assert "Nothing to be done" not in plan and "figure_baselines_accuracy_vs_rounds" in plan
    _run(["snakemake", "--cores", "2", *TARGETS], work, env)
    new = (work / f"{FIGURE}.csv").read_bytes()
    assert new != old
    info = json.loads((work / "results/runs/baselines/accuracy_vs_rounds/ideal.json").read_text())
    assert info["provenance"]["params"]["experiment"]["training"]["lr"] == 0.04

    design = work / "results/designs/baselines/accuracy_vs_rounds/ota_low_snr.json"
    design.write_text("garbage\n")
    params["device"] = "auto"
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    failed = _run(["snakemake", "--cores", "2", "--keep-going", *TARGETS], work, env, check=False)
    log = (work / "logs/train/baselines/accuracy_vs_rounds/ota_low_snr.log").read_text()
    assert failed.returncode != 0 and "not a design made by the design stage" in log
    assert not design.exists()
    # the figure does not read `device`, so it stays up to date: a plain run does nothing, and
    # the message names the command that rebuilds the design and the failed run
    run_table = "results/runs/baselines/accuracy_vs_rounds/ota_low_snr.csv"
    assert f"removed it: run `snakemake {run_table}`" in log
    plan = _run(["snakemake", "-n", *TARGETS], work, env)
    assert "Nothing to be done" in plan.stdout + plan.stderr
    _run(["snakemake", "--cores", "2", *TARGETS, run_table], work, env)
    assert json.loads(design.read_text())["trials"]
    assert (work / f"{FIGURE}.csv").read_bytes() == new      # the same runs, rebuilt


# One file per core package and one wing file: the baselines figure's jobs must go stale in both
# tools alike; a file of a wing the figure never loads touches nothing.
CODE_EDITS = ["src/airfl/core/loop.py", "src/airfl/channel/fading.py", "src/airfl/privacy/rdp.py",
              "src/airfl/data/partitioners.py", "src/airfl/pipeline/stages/figure.py",
              "src/airfl/papers/baselines/experiments.py", "src/airfl/papers/cdpb/design.py"]


def _stage_outputs(work) -> dict[str, str]:
    """Output file -> the dvc.yaml stage that makes it."""
    stages = yaml.safe_load((work / "dvc.yaml").read_text())["stages"]
    owner = {}
    for name, stage in stages.items():
        for path in stage.get("outs", []):
            owner.update({path: name} if isinstance(path, str) else dict.fromkeys(path, name))
        for kind in ("plots", "metrics"):      # an entry: a path, or {path: its options}
            owner.update({path: name for entry in stage.get(kind, [])
                          for path in ([entry] if isinstance(entry, str) else entry)})
    return owner


def _dvc_graph(work) -> dict[str, set[str]]:
    """Stage -> the stages that read one of its outputs."""
    stages = yaml.safe_load((work / "dvc.yaml").read_text())["stages"]
    owner = _stage_outputs(work)
    readers: dict[str, set[str]] = {name: set() for name in stages}
    for name, stage in stages.items():
        for dep in stage.get("deps", []):
            if dep in owner and owner[dep] != GUARD:   # its stamp never changes: no rerun
                readers[owner[dep]].add(name)
    return readers


def _reach(graph: dict[str, set[str]], start: set[str]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


def _stale_under_dvc(work, env) -> set[str]:
    """Stages `dvc repro` would run for the figure: those whose own deps changed (what `repro
    --dry` lists) and everything downstream of them within the figure's subgraph (Snakemake
    reruns a job whose input is remade; DVC compares the new output's hash first). The
    `dvc-dag` stage runs first: a code edit reaches a stage through the code digests in its
    manifest, which that stage writes; `repro --dry` runs nothing."""
    _run(["dvc", "repro", "--single-item", GUARD], work, env)
    out = _run(["dvc", "repro", "--dry", DVC_TARGET], work, env).stdout
    assert GUARD not in re.findall(r"Running stage '([^']+)'", out), out
    readers = _dvc_graph(work)
    writers: dict[str, set[str]] = {name: set() for name in readers}
    for name, after in readers.items():
        for other in after:
            writers[other].add(name)
    subgraph = _reach(writers, {DVC_TARGET}) - {GUARD}
    return _reach(readers, set(re.findall(r"Running stage '([^']+)'", out))) & subgraph


def _stale_under_snakemake(work, env) -> set[str]:
    """Jobs `snakemake -n` would run for the figure, as dvc.yaml stage names."""
    out = _run(["snakemake", "-n", "--cores", "1", *TARGETS], work, env).stdout
    owner = _stage_outputs(work)
    return {owner[path.strip()] for line in re.findall(r"^\s+output: (.*)$", out, flags=re.M)
            for path in line.split(",")}


def test_a_code_edit_makes_the_same_jobs_stale_in_dvc_and_snakemake(repo_root, tmp_path, env):
    """Code deps come from what each stage imports (pipeline.code_deps), for DVC as file digests
    in each stage's manifest and for Snakemake as a digest parameter. The workspace's own copy
    of airfl is the one that runs (PYTHONPATH), so its files are the code."""
    work = _workspace(repo_root, tmp_path / "ws", env)
    env = {**env, "PYTHONPATH": str(work / "src")}
    _run(["airfl", "dvc-yaml"], work, env)
    _run(["snakemake", "--cores", "2", *TARGETS, "-q"], work, env)
    _record(work, env)
    manifest = json.loads((work / "results/dvc/train-baselines-accuracy_vs_rounds-ideal.json")
                          .read_text())
    loop = "src/airfl/core/loop.py"            # relative (this copy), itself or a whole folder
    assert any(loop == key or loop.startswith(key + "/") for key in manifest["code"]), manifest
    assert not _stale_under_dvc(work, env)
    assert not _stale_under_snakemake(work, env)
    stale = {}
    for edit in CODE_EDITS:
        path = work / edit
        original = path.read_text()
        path.write_text(original + "\n# an edit\n")
        try:
            by_dvc = _stale_under_dvc(work, env)
            by_snakemake = _stale_under_snakemake(work, env)
        finally:
            path.write_text(original)
        assert by_dvc == by_snakemake, (edit, sorted(by_dvc ^ by_snakemake))
        stale[edit] = by_dvc
    assert all(stale[e] for e in CODE_EDITS[:-1]), {e: len(s) for e, s in stale.items()}
    assert not stale["src/airfl/papers/cdpb/design.py"]
    assert any(name.startswith("train-") for name in stale["src/airfl/data/partitioners.py"])
    assert stale["src/airfl/pipeline/stages/figure.py"] == {DVC_TARGET}
    assert "train-baselines-accuracy_vs_rounds-ideal" not in stale["src/airfl/privacy/rdp.py"] \
        or "privacy-baselines-accuracy_vs_rounds-ideal" in stale["src/airfl/privacy/rdp.py"]
