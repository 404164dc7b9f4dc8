"""`make reproduce` runs Snakemake with a fork server (airfl.pipeline.forkserved) and falls back
to plain jobs when the server cannot start."""

from __future__ import annotations

import shlex
import sys

from airfl.pipeline import forkserved

PYTHON = shlex.quote(sys.executable)


def test_the_command_runs_its_jobs_through_a_started_server(repo_root, tmp_path, monkeypatch,
                                                            capfd):
    monkeypatch.chdir(repo_root)
    monkeypatch.delenv(forkserved.ENV, raising=False)
    out = tmp_path / "out.txt"
    job = f'{PYTHON} -m airfl.forkserver "$AIRFL_FORKSERVER" validate > {out}'
    assert forkserved.run(["bash", "-c", job]) == 0
    assert out.read_text() == "params valid; profile quick\n"
    err = capfd.readouterr().err
    assert "airfl.forkserver: serving at" in err and "airfl.forkserver: 1 jobs" in err


def test_a_server_that_cannot_start_leaves_plain_jobs(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv(forkserved.ENV, raising=False)
    check = 'test -z "$AIRFL_FORKSERVER" && echo plain'
    assert forkserved.run(["bash", "-c", check], server=["false"]) == 0
    captured = capfd.readouterr()
    assert captured.out == "plain\n"
    assert "the fork server did not start" in captured.err and "running jobs without it" in \
        captured.err


def test_the_commands_exit_status_is_returned(monkeypatch):
    monkeypatch.delenv(forkserved.ENV, raising=False)
    assert forkserved.run(["bash", "-c", "exit 3"], server=["false"]) == 3


def test_make_reproduce_runs_snakemake_through_it(repo_root):
    import subprocess

    done = subprocess.run(["make", "-n", "reproduce"], cwd=repo_root, capture_output=True,
                          text=True, check=True)
    assert "-m airfl.pipeline.forkserved" in done.stdout and "snakemake --cores" in done.stdout
