"""airfl.forkserver: a job forked from the preloaded server is the same job as `python -m airfl`
(exit status, stdout, stderr, working directory), and a missing server stops the job with a
clear message instead of running it some other way."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(args, cwd, env, umask=None):
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300,
                          preexec_fn=None if umask is None else lambda: os.umask(umask))
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sock = str(tmp_path_factory.mktemp("forkserver") / "s.sock")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "airfl.forkserver", "--serve", sock], env=env,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not os.path.exists(sock):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the fork server did not start in 240 s"
        time.sleep(0.1)
    yield sock, env
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "jobs, their CPU" in err
    assert not os.path.exists(sock)                        # the server removed its socket


@pytest.mark.parametrize("args", [["validate"], ["no-such-stage"], ["list"]])
def test_a_forked_job_is_the_same_job_as_python_m_airfl(server, args):
    sock, env = server
    direct = _run(["airfl", *args], REPO, env)
    forked = _run(["airfl.forkserver", sock, *args], REPO, env)
    assert forked == direct
    assert direct[0] == (2 if args == ["no-such-stage"] else 0)


def test_the_job_runs_in_the_clients_working_directory(server, tmp_path):
    """No params.yaml in the client's folder: the job looks for it there and stops (exit 2)
    with the same message as a direct run, naming the file."""
    sock, env = server
    direct = _run(["airfl", "validate"], tmp_path, env)
    assert _run(["airfl.forkserver", sock, "validate"], tmp_path, env) == direct
    assert direct[0] == 2 and "params.yaml" in direct[2]


def test_a_forked_job_writes_files_with_the_clients_umask(server, tmp_path):
    """The server's umask is not the job's: a file the job writes (here `airfl schema`, which
    needs no params.yaml) gets the mode a direct run under the client's umask gives."""
    sock, env = server
    written = Path("workflow/schemas/params.schema.yaml")
    for name, args in (("direct", ["airfl", "schema"]),
                       ("forked", ["airfl.forkserver", sock, "schema"])):
        (tmp_path / name).mkdir()
        assert _run(args, tmp_path / name, env, umask=0o027)[0] == 0
        assert (tmp_path / name / written).stat().st_mode & 0o777 == 0o640, name


def test_without_a_server_the_job_stops_naming_the_socket(tmp_path):
    sock = str(tmp_path / "absent.sock")
    code, out, err = _run(["airfl.forkserver", sock, "validate"], REPO, dict(os.environ))
    assert code == 3 and out == "" and f"no server at {sock}" in err
