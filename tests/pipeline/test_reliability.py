"""Reliability: the failures a hostile user found, each reproduced here. The probes
that need Snakemake itself (profile, stale figure, --config, threads, YAML errors in the
Snakefile) are in test_pipeline.py."""

from __future__ import annotations

import copy
import http.server
import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from airfl.params.config import ConfigError, read_yaml, typed_config_overrides
from airfl.pipeline.params import load_params, validate_params


@pytest.fixture()
def params(repo_root):
    return yaml.safe_load((repo_root / "params.yaml").read_text())


# -- item 3: NaN and infinity -----------------------------------------------------------------

BASE = "baselines.accuracy_vs_rounds"


@pytest.mark.parametrize("key", [
    f"{BASE}.curves.ota_low_snr.snr_db", f"{BASE}.training.lr",
    f"{BASE}.curves.fedavg_dp.noise_multiplier", f"{BASE}.curves.fedavg_dp.delta",
    f"{BASE}.channel.radius_m", "dp_perk.analytic.delta", "cdpb.analytic.P",
])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_rejected_by_dotted_key(params, key, value):
    node = params
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    assert last in node, key                      # a knob params.yaml really has
    node[last] = value
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    assert f"{key}: {value} is not a finite number" in str(info.value)


def test_infinity_stays_allowed_where_the_paper_uses_it(params):
    """DP as a perk's unbounded model domain D = inf (Proposition III.1) is a value, not an
    error; NaN is never one."""
    validated = validate_params(copy.deepcopy(params))
    assert validated["dp_perk"]["analytic"]["domain_D"] == math.inf
    assert math.inf in validated["dp_perk"]["analytic"]["fig2_D_variants"]
    params["dp_perk"]["analytic"]["domain_D"] = math.nan
    with pytest.raises(ConfigError, match="dp_perk.analytic.domain_D: nan is not a finite"):
        validate_params(params)


def test_nan_in_the_yaml_file_stops_the_cli(repo_root, tmp_path):
    text = (repo_root / "params.yaml").read_text().replace("snr_db: -10.0", "snr_db: .nan", 1)
    assert ".nan" in text
    (tmp_path / "params.yaml").write_text(text)
    done = subprocess.run([sys.executable, "-m", "airfl", "--params", str(tmp_path / "params.yaml"),
                           "validate"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "curves.ota_low_snr.snr_db: nan is not a finite number" in done.stderr


# -- item 5: YAML syntax errors and duplicate keys ----------------------------------------------

def test_yaml_syntax_error_is_one_line_with_its_line_number(repo_root, tmp_path):
    lines = (repo_root / "params.yaml").read_text().splitlines()
    assert lines[10] == "  download: true"
    lines[10] = "  download: true: yes"           # line 11: a mapping value where none may be
    (tmp_path / "params.yaml").write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "airfl", "--params", str(tmp_path / "params.yaml"),
                           "validate"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "params.yaml, line 11, column" in done.stderr


def test_duplicate_keys_are_rejected_with_both_lines():
    text = "seed: 0\nbaselines:\n  a:\n    lr: 0.05\n    batch: 3\n    lr: 0.04\n"
    with pytest.raises(ConfigError) as info:
        read_yaml(text, "params.yaml")
    assert str(info.value) == ("params.yaml, line 6, column 5: duplicate key 'lr' (first given "
                               "on line 4)")
    assert read_yaml("a: &x {b: 1}\nc:\n  <<: *x\n  b: 2\n") == {"a": {"b": 1}, "c": {"b": 2}}


def test_duplicate_key_in_params_file_stops_load_params(repo_root, tmp_path):
    text = (repo_root / "params.yaml").read_text().replace("\nseed: ", "\nseed: 1\nseed: ", 1)
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ConfigError, match="duplicate key 'seed'"):
        load_params(tmp_path / "params.yaml")


def test_nested_config_overrides_are_typed_as_in_params_yaml(repo_root):
    """Snakemake hands `--config 'baselines={...: {training: {lr: 0.04}}}'` over with every
    nested scalar a string; typed, it validates as the same value written in params.yaml."""
    given = {"profile": "quick", "baselines": {"accuracy_vs_rounds": {
        "training": {"lr": "0.04", "local_steps": "3", "batch_size": "16"}}}}
    typed = typed_config_overrides(given)
    assert typed["baselines"]["accuracy_vs_rounds"]["training"] == {
        "lr": 0.04, "local_steps": 3, "batch_size": 16}
    params = load_params(repo_root / "params.yaml")
    params["baselines"]["accuracy_vs_rounds"]["training"].update(
        typed["baselines"]["accuracy_vs_rounds"]["training"])
    validate_params(params)
    params["baselines"]["accuracy_vs_rounds"]["training"]["lr"] = "0.04"   # untyped: refused
    with pytest.raises(ConfigError, match="training.lr: '0.04' is not of type 'number'"):
        validate_params(params)


# -- item 5: a download that trickles ------------------------------------------------------------

class _Trickle(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802  (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        for _ in range(600):                        # one byte every 0.05 s: 30 s for 600 bytes
            try:
                self.wfile.write(b"x")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.05)

    def log_message(self, *args):
        pass


def test_a_trickling_download_stops_at_its_deadline(tmp_path):
    from airfl.data.fetch import _fetch

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="not complete after 1 s"):
            _fetch(f"http://127.0.0.1:{server.server_port}/file", tmp_path / "part",
                   timeout=5.0, deadline_s=1.0)
        assert time.monotonic() - started < 10          # the server would trickle for 30 s
    finally:
        server.shutdown()
        server.server_close()


# -- item 5: the md5 error names the mirror that is set ------------------------------------------

def test_md5_error_does_not_call_a_set_mirror_empty(tmp_path, monkeypatch):
    from airfl.data import DatasetUnavailableError, load_dataset

    raw = tmp_path / "root" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        (raw / name).write_bytes(b"corrupt")
    mirror = tmp_path / "mirror"
    monkeypatch.setenv("AIRFL_DATA_MIRROR", str(mirror))
    with pytest.raises(DatasetUnavailableError) as info:
        load_dataset("mnist", tmp_path / "root", "train")
    message = str(info.value)
    assert "wrong md5" in message and "is empty" not in message
    assert f"mirror: {mirror} not read here" in message and "airfl data mnist" in message


# -- item 5: a garbage design is rebuilt, not crashed on ------------------------------------------

def test_garbage_design_is_removed_with_a_message(tmp_path):
    from airfl.pipeline.stages import StageError
    from airfl.pipeline.stages.train import stored_designs

    good = tmp_path / "good.json"
    good.write_text(json.dumps({"trials": [{"trial": 0}, {"trial": 1}]}))
    assert stored_designs(good, 2) == [{"trial": 0}, {"trial": 1}]
    for content in ("garbage\n", '{"trials": "x"}', '{"trials": [{"trial": 0}]}', "[1, 2]"):
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        with pytest.raises(StageError, match="not a design made by the design stage.*rebuilds"):
            stored_designs(bad, 2)
        assert not bad.exists()


def test_a_design_made_with_other_parameters_is_removed_not_trained_on(tmp_path):
    """train reads what the design stage stored, so a stored design whose provenance
    is not the current curve, channel, scale and seed is removed (the design stage rebuilds it);
    figure-only panel keys do not count."""
    from airfl.runtime.io import provenance, write_json
    from airfl.pipeline.stages import StageError
    from airfl.pipeline.stages.train import stored_designs

    made_with = {"seed": 1, "curve": {"scheme": "x", "lr": 0.1, "in_fig3": True},
                 "channel": {"model": "rayleigh_mean_gain", "mean_gain": 1.0},
                 "scale": {"rounds": 3, "trials": 1}}
    path = tmp_path / "design.json"
    write_json(path, {"provenance": provenance(made_with), "trials": [{"trial": 0}]})
    assert stored_designs(path, 1, made_with) == [{"trial": 0}]
    retagged = {**made_with, "curve": {**made_with["curve"], "in_fig3": False}}
    assert stored_designs(path, 1, retagged, panel_keys=("in_fig3",)) == [{"trial": 0}]
    stale = {**made_with, "curve": {**made_with["curve"], "lr": 0.2}, "seed": 2}
    with pytest.raises(StageError, match=r"other parameters .*\(curve\.lr, seed differ\).*rebuilds"):
        stored_designs(path, 1, stale)
    assert not path.exists()


# -- item 3: a run whose loss becomes non-finite stops ------------------------------------------

def test_non_finite_loss_at_an_evaluated_round_stops_the_run():
    from airfl.pipeline.stages import StageError
    from airfl.pipeline.stages.train import check_finite_losses

    frame = pd.DataFrame({"trial": [0, 0, 0, 1], "round": [0, 1, 2, 2],
                          "test_accuracy": [0.1, np.nan, 0.2, 0.3],
                          "test_loss": [2.3, np.nan, 1.0, 1.0],        # round 1: not evaluated
                          "train_loss": [2.3, np.nan, 1.0, 1.0]})
    check_finite_losses(frame, "x/y", "ideal")
    for column, row, value, where in [("test_loss", 2, np.nan, "round 2 of trial 0"),
                                      ("train_loss", 3, np.inf, "round 2 of trial 1")]:
        broken = frame.copy()
        broken.loc[row, column] = value
        with pytest.raises(StageError, match=f"x/y curve 'ideal': {column} is {value} at {where} "
                                             "\\(training diverged\\)"):
            check_finite_losses(broken, "x/y", "ideal")


# -- item 6: privacy columns say which epsilon ---------------------------------------------------

def _records(path: Path, rounds: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"curve": "c", "params": {"delta": 1e-5},
                                "trials": [{"trial": 0, "rounds": rounds}]}))


def test_privacy_csv_names_the_paper_bound_and_the_simulated_mechanism(tmp_path, monkeypatch):
    from airfl.privacy import epsilon_curve
    from airfl.pipeline.stages import privacy

    monkeypatch.chdir(tmp_path)
    paper = [{"kind": "gaussian", "noise_multiplier": 2.0}]
    simulated = [{"kind": "gaussian", "noise_multiplier": 0.5}]
    cases = {"same": [{"round": 1, "privacy": paper}] * 3,
             "differs": [{"round": 1, "privacy": paper, "privacy_simulated": simulated}] * 3,
             "unknown": [{"round": 1, "privacy": paper, "privacy_simulated": None}] * 3}
    tables = {}
    for name, rounds in cases.items():
        _records(Path("results/runs/e/f") / f"{name}.records.json", rounds)
        privacy.run({}, "e/f", name)
        tables[name] = pd.read_csv(Path("results/privacy/e/f") / f"{name}.csv")
    assert list(tables["same"].columns) == ["trial", "round", "delta", "epsilon_paper",
                                            "epsilon_paper_classic", "epsilon_simulated",
                                            "epsilon_simulated_classic"]
    expected_paper = epsilon_curve([paper] * 3, 1e-5)
    expected_sim = epsilon_curve([simulated] * 3, 1e-5)
    for table in tables.values():
        assert table["epsilon_paper"].tolist() == pytest.approx(expected_paper, rel=1e-9)
    assert tables["same"]["epsilon_simulated"].tolist() == pytest.approx(expected_paper, rel=1e-9)
    assert tables["differs"]["epsilon_simulated"].tolist() == pytest.approx(expected_sim, rel=1e-9)
    assert tables["unknown"]["epsilon_simulated"].isna().all()


def test_cdpb_records_claimed_and_simulated_epsilon_of_the_issue(repo_root):
    """The issue's probe: quick Fig. 4, CDPB-i, 30 rounds, delta 1e-5: Theorem 1 as the paper
    states it gives eps 16.5 (improved conversion), the mechanism as simulated under the total
    reading (sigma_q^2 spread over d = 7,850 coordinates) ~2,690."""
    from airfl.pipeline.registry import get_experiment
    from airfl.papers.cdpb.design import strategy_rho
    from airfl.papers.cdpb.privacy import privacy_event, simulated_privacy_event
    from airfl.papers.cdpb.schemes import SETTING_KEYS
    from airfl.papers.cdpb.setting import CdpbSetting
    from airfl.privacy import epsilon_curve

    params = load_params(repo_root / "params.yaml")
    block = get_experiment("cdpb/fig4").params(params)
    curve = block["curves"]["cdpb_i"]
    analytic = {**{k: curve[k] for k in SETTING_KEYS}, "K": block["num_devices"]}
    rho, _ = strategy_rho(analytic, "cdpb_i", None)
    setting = CdpbSetting.from_dict(analytic)
    rounds = block["scale"]["rounds"]
    claimed = epsilon_curve([[privacy_event(setting, "cdpb_i", rho).to_dict()]] * rounds, 1e-5)
    simulated = epsilon_curve([[simulated_privacy_event(setting, "cdpb_i", rho, None, "total",
                                                        7850).to_dict()]] * rounds, 1e-5)
    assert rounds == 30 and claimed[-1] == pytest.approx(16.55, abs=0.01)
    assert simulated[-1] == pytest.approx(2690.4, abs=0.1)


# -- validation gaps: alias bombs, delta = 1, integers written as floats ------------------------

ALIAS_BOMB = "".join(f"bomb_{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n"
                     for b, a in zip("abcdefgh", "bcdefghi"))
ALIAS_BOMB = "bomb_a: &a [x, x, x, x, x, x, x, x, x]\n" + ALIAS_BOMB     # 10 lines, 9^9 nodes


def test_an_alias_bomb_stops_reading_at_once():
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"^params.yaml: YAML aliases expand the document by "
                                          r"more than 10,000 nodes \(\d[\d,]*\)"):
        read_yaml(ALIAS_BOMB, "params.yaml")
    assert time.monotonic() - started < 2


def test_a_recursive_alias_is_rejected_and_a_few_aliases_still_read():
    with pytest.raises(ConfigError, match="params.yaml, line 1: a YAML alias refers to a node "
                                          "that contains it"):
        read_yaml("a: &a {b: *a}\n", "params.yaml")
    assert read_yaml("x: &x [1, 2]\ny: [*x, *x]\n") == {"x": [1, 2], "y": [[1, 2], [1, 2]]}


@pytest.mark.parametrize("command", [[sys.executable, "-m", "airfl", "validate"],
                                     [str(Path(sys.executable).parent / "snakemake"), "-n",
                                      "--cores", "1"]])
def test_an_alias_bomb_in_params_yaml_stops_validate_and_snakemake(repo_root, tmp_path, command):
    """Before the bound, both walked every alias-expanded node and never finished."""
    (tmp_path / "params.yaml").write_text((repo_root / "params.yaml").read_text() + ALIAS_BOMB)
    if "snakemake" in command[0]:
        command = [*command, "-s", str(repo_root / "Snakefile"), "-d", str(tmp_path)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert ("params.yaml: YAML aliases expand the document by more than 10,000 nodes"
            in done.stdout + done.stderr)


DP_DELTAS = [f"{BASE}.curves.fedavg_dp.delta", "dp_perk.analytic.delta", "audit.cdpb.delta",
             "audit.generic.gaussian_dp.delta", "audit.generic.ota_truncated_inversion.delta"]


@pytest.mark.parametrize("key", DP_DELTAS)
@pytest.mark.parametrize("value", [1.0, 1, 0.0, 2.0])
def test_a_dp_delta_outside_the_open_unit_interval_is_rejected(params, key, value):
    """delta = 1 guarantees nothing ((eps, 1)-DP holds for every mechanism); it was accepted
    because delta shared the schema of a sampling rate, (0, 1]."""
    node = params
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    assert last in node, key
    node[last] = value
    with pytest.raises(ConfigError, match=f"{key}: {value} is (greater|less) than or equal to"):
        validate_params(params)


def test_a_sampling_rate_of_one_stays_valid(params):
    params["baselines"]["accuracy_vs_rounds"]["curves"]["fedavg_dp"]["sampling_rate"] = 1.0
    validate_params(params)


@pytest.mark.parametrize("key, value", [(f"{BASE}.scale.quick.rounds", 1.0e9),
                                        (f"{BASE}.num_devices", 20.0),
                                        ("audit.generic.gaussian_dp.num_devices", 2.0)])
def test_a_count_written_as_a_float_is_rejected_naming_the_key(params, key, value):
    """JSON Schema counts 1.0e+9 as an integer; train then crashed on `range(1e9)`."""
    node = params
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    assert last in node, key
    node[last] = value
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    # the line names the key and the value, then the parameter's description
    assert any(line.startswith(f"  {key}: {value} is not of type 'integer'.")
               for line in str(info.value).splitlines())


def test_a_float_count_from_the_command_line_stops_validate(repo_root):
    done = subprocess.run([sys.executable, "-m", "airfl", "--set",
                           f"{BASE}.scale.quick.rounds=1.0e+9", "validate"], cwd=repo_root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"{BASE}.scale.quick.rounds: 1000000000.0 is not of type 'integer'" in done.stderr


def test_an_alias_bomb_in_a_set_value_stops_the_cli(repo_root):
    bomb = "[&a [1, 1, 1, 1, 1, 1, 1, 1, 1], " + ", ".join(
        f"&{a} [{', '.join([f'*{b}'] * 9)}]" for b, a in zip("abcdefgh", "bcdefghi")) + "]"
    done = subprocess.run([sys.executable, "-m", "airfl", "--set", f"seed={bomb}", "validate"],
                          cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--set seed: YAML aliases expand the document by more than 10,000" in done.stderr


# -- corrupted inputs: a stage stops naming the file, and the file is rebuilt ---------------------

def _table(tmp_path):
    from airfl.runtime.io import write_csv

    path = tmp_path / "results" / "runs" / "x.csv"
    frame = pd.DataFrame({"trial": [0, 0, 1, 1], "round": [0, 1, 0, 1],
                          "test_accuracy": [0.1, 0.123456789, 0.2, 0.3]})
    write_csv(path, frame)
    return path, frame


def test_a_stored_table_reads_back_as_written(tmp_path):
    from airfl.runtime.io import read_table

    path, frame = _table(tmp_path)
    pd.testing.assert_frame_equal(read_table(path, ("trial", "round")), frame)


@pytest.mark.parametrize("spoil, problem", [
    (lambda b: b[:-5], "is cut short (its last line has no line end)"),      # a cut number
    (lambda b: b"", "is empty"),
    (lambda b: b"\x89PNG\x00\x00\xff\xfe\n", "is not a well-formed CSV table"),
    (lambda b: b'trial,round\n0,"1\n', "is not a well-formed CSV table"),
    (lambda b: b"trial,time\n0,1\n", "lacks the column(s) round"),
])
def test_a_spoiled_table_stops_naming_the_file_and_is_removed(tmp_path, spoil, problem):
    from airfl.runtime.io import ArtifactError, read_table

    path, _ = _table(tmp_path)
    path.write_bytes(spoil(path.read_bytes()))
    with pytest.raises(ArtifactError) as info:
        read_table(path, ("trial", "round"))
    message = str(info.value)
    assert message.startswith(f"{path} {problem}") and "\n" not in message
    assert message.endswith(f"(`snakemake {path}` if Snakemake finds nothing to do)")
    assert not path.exists()


@pytest.mark.parametrize("text", ['{"trials": [1, 2', "garbage\n", "\xff\xfe"])
def test_a_garbled_json_artifact_stops_naming_the_file_and_is_removed(tmp_path, text):
    from airfl.runtime.io import ArtifactError, read_json

    path = tmp_path / "records.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ArtifactError, match=f"^{path} is not valid JSON .*removed it"):
        read_json(path)
    assert not path.exists()


def test_a_run_table_missing_whole_trials_is_not_drawn(tmp_path, monkeypatch):
    """Cut at a line end, a table has no cut number, but it lacks the later trials."""
    from airfl.runtime.io import ArtifactError, write_csv
    from airfl.pipeline.stages import figure

    monkeypatch.chdir(tmp_path)
    path = Path("results/runs/baselines/accuracy_vs_rounds/ideal.csv")
    frame = pd.DataFrame({"trial": [0, 0, 1], "round": [0, 1, 0], "test_accuracy": [0.1, 0.2, 0.1]})
    write_csv(path, frame)
    assert len(figure.run_table("baselines/accuracy_vs_rounds", "ideal", 2)) == 3
    with pytest.raises(ArtifactError, match=rf"^{path} holds trials \[0, 1\], not the 3 of the "):
        figure.run_table("baselines/accuracy_vs_rounds", "ideal", 3)
    assert not path.exists()


def test_a_garbage_design_names_the_command_that_rebuilds_it(tmp_path):
    from airfl.pipeline.stages import StageError
    from airfl.pipeline.stages.train import rebuild_command, stored_designs

    bad = tmp_path / "design.json"
    bad.write_text("garbage\n")
    with pytest.raises(StageError) as info:
        stored_designs(bad, 1, rebuild=rebuild_command("baselines/accuracy_vs_rounds", "ideal"))
    assert "removed it: run `snakemake results/runs/baselines/accuracy_vs_rounds/ideal.csv` " \
           "(or `dvc repro`" in str(info.value)


def test_a_corrupt_file_in_the_mirror_is_reported_as_corrupt_not_missing(mnist_mirror, tmp_path):
    """The data stage copies from the mirror after an md5 check; a copy that fails it used to
    be reported as `missing` under root."""
    import shutil

    from airfl.data import ensure_dataset
    from airfl.data.catalogue import DatasetUnavailableError

    mirror = tmp_path / "mirror"
    shutil.copytree(mnist_mirror / "MNIST" / "raw", mirror / "MNIST" / "raw")
    spoiled = mirror / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz"
    data = bytearray(spoiled.read_bytes())
    data[100] ^= 0xFF
    spoiled.write_bytes(bytes(data))
    with pytest.raises(DatasetUnavailableError) as info:
        ensure_dataset("mnist", tmp_path / "root", mirror=mirror, download=False)
    problem = str(info.value).splitlines()[1]
    assert problem.startswith(f"  MNIST/raw/t10k-labels-idx1-ubyte.gz: not under root; the "
                              f"mirror's copy {spoiled} is corrupt: wrong md5 (found ")
    assert not (tmp_path / "root" / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").exists()


def test_the_data_stage_reports_a_corrupt_mirror_without_a_traceback(mnist_mirror, repo_root,
                                                                     tmp_path):
    import shutil

    mirror = tmp_path / "mirror"
    shutil.copytree(mnist_mirror / "MNIST" / "raw", mirror / "MNIST" / "raw")
    (mirror / "MNIST" / "raw" / "train-labels-idx1-ubyte.gz").write_bytes(b"not gzip")
    shutil.copy(repo_root / "params.yaml", tmp_path)
    done = subprocess.run([sys.executable, "-m", "airfl", "--set", f"data.mirror={mirror}",
                           "--set", "data.download=false", "data", "mnist"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("airfl data: dataset 'mnist' is not available")
    assert "train-labels-idx1-ubyte.gz: not under root; the mirror's copy" in done.stderr


# -- one job at a time: `dvc repro` of a stage while Snakemake runs it ----------------------------

def test_a_job_already_running_is_refused_not_run_twice(repo_root, tmp_path):
    """Both tools run the same `airfl <stage> <args>`; while one process runs a job (here: this
    test holds the job's lock), the same job started by the other stops with one line and
    writes nothing; once the lock is free it runs."""
    import fcntl
    import shutil

    shutil.copy(repo_root / "params.yaml", tmp_path)
    lock = tmp_path / "results" / "locks" / "analytic-dp_perk-fig2.lock"
    lock.parent.mkdir(parents=True)
    command = [sys.executable, "-m", "airfl", "analytic", "dp_perk/fig2"]
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("airfl analytic: `airfl analytic dp_perk/fig2` is already "
                                  "running in this folder")
    assert not (tmp_path / "figures").exists()
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "figures" / "dp_perk" / "fig2.csv").exists()
