"""airfl.forkserver: a job forked from the preloaded server is the same job as `python -m airfl`
(exit status, stdout, stderr, working directory), and a missing server stops the job with a
clear message instead of running it some other way. The server serves its owner only: its
socket is 0600 whatever the umask, another uid is refused (a real second user when the tests
run as root, a forged owner otherwise), a client's PATH/GIT_*/LD_*/PYTHON* never reach a job,
and a client that connects and sends nothing stalls no other job."""

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from airfl import forkserver

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _run(args, cwd, env, umask=None, timeout=300):
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout,
                          preexec_fn=None if umask is None else lambda: os.umask(umask))
    return done.returncode, done.stdout, done.stderr


def _start(args, sock, env):
    """A server started under umask 000 (the case where a socket's mode came from the umask
    alone), once its socket listens."""
    proc = subprocess.Popen([sys.executable, *args], env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.umask(0))
    deadline = time.monotonic() + 240
    while not os.path.exists(sock):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the fork server did not start in 240 s"
        time.sleep(0.1)
    time.sleep(0.5)                                        # bound; let it reach listen()
    return proc


def _stop(proc) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0 and "jobs, their CPU" in err, err
    return err


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sock = str(tmp_path_factory.mktemp("forkserver") / "s.sock")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = _start(["-m", "airfl.forkserver", "--serve", sock, "--request-timeout", "3"], sock, env)
    yield sock, env
    _stop(proc)
    assert not os.path.exists(sock)                        # the server removed its socket


@pytest.fixture
def open_server():
    """A server in a folder every user can enter (so a second user can reach its socket)."""
    folder = tempfile.mkdtemp(prefix="airfl-fork-")
    os.chmod(folder, 0o755)
    sock = os.path.join(folder, "s.sock")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = _start(["-m", "airfl.forkserver", "--serve", sock], sock, env)
    yield sock, env, proc
    if proc.poll() is None:
        _stop(proc)
    shutil.rmtree(folder, ignore_errors=True)


def _request_as(uid: int, sock: str) -> int:
    """`airfl validate` through the server at `sock`, asked by a process running as `uid`
    (a fork of this one that drops to that user): the client's exit status."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            code = forkserver.request(sock, ["validate"])
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


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


def test_the_socket_is_the_owners_alone_whatever_the_umask(server):
    """Started under umask 000, the socket still has mode 0600."""
    sock, _ = server
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600


@pytest.mark.skipif(os.getuid() != 0, reason="a second user needs root to become")
def test_another_user_runs_nothing(open_server):
    """User `nobody` against a root server: the 0600 socket refuses it (exit 3, no server for
    it); with the socket's mode loosened by hand, the kernel's peer credential still does
    (exit 1), and the server's log names the refused uid."""
    sock, _, proc = open_server
    assert _request_as(NOBODY, sock) == 3
    os.chmod(sock, 0o666)
    assert _request_as(NOBODY, sock) == 1
    assert f"refused a connection from uid {NOBODY}" in _stop(proc)


def test_a_caller_who_is_not_the_owner_is_refused(tmp_path):
    """A server that believes it belongs to another uid (a forged peer credential, the test
    any user can run) refuses this user's job: nothing runs, the client says so."""
    sock = str(tmp_path / "s.sock")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    code = ("import os, sys; from airfl.forkserver import serve; "
            "serve(sys.argv[1], owner=os.getuid() + 1)")
    proc = _start(["-c", code, sock], sock, env)
    try:
        status, out, err = _run(["airfl.forkserver", sock, "validate"], REPO, env)
    finally:
        log = _stop(proc)
    assert (status, out) == (1, "") and "refused this user" in err
    assert f"refused a connection from uid {os.getuid()}" in log


def test_the_job_environment_takes_only_job_settings_from_the_client():
    server_env = {"PATH": "/usr/bin", "HOME": "/root", "AIRFL_DATA_MIRROR": "/server/data",
                  "OMP_NUM_THREADS": "4"}
    client_env = {"PATH": "/tmp/evil", "GIT_DIR": "/tmp/evil", "GIT_EXEC_PATH": "/tmp/evil",
                  "LD_PRELOAD": "/tmp/evil.so", "LD_LIBRARY_PATH": "/tmp", "PYTHONPATH": "/tmp",
                  "PYTHONSTARTUP": "/tmp/evil.py", "HOME": "/tmp", "OMP_NUM_THREADS": "1",
                  "AIRFL_FORKSERVER": "/tmp/s.sock"}
    assert forkserver.job_environment(server_env, client_env) == {
        "PATH": "/usr/bin", "HOME": "/root", "OMP_NUM_THREADS": "1",
        "AIRFL_FORKSERVER": "/tmp/s.sock"}                # the client has no data mirror set


def test_a_clients_path_does_not_choose_the_git_a_job_runs(server, tmp_path):
    """The provenance record runs `git`: a fake `git` first on the client's PATH (and GIT_*
    pointing at it) must not run in the forked job."""
    sock, env = server
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    marker = tmp_path / "ran"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\necho 0123456789abcdef\n")
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REPO / "params.yaml", work)
    client = {**env, "PATH": f"{fake.parent}:{env['PATH']}", "GIT_EXEC_PATH": str(fake.parent)}
    status, _, err = _run(["airfl.forkserver", sock, "analytic", "dp_perk/fig2"], work, client)
    assert status == 0, err
    assert not marker.exists()
    record = (work / "results/provenance/figures/dp_perk/fig2.csv.json").read_text()
    assert "0123456789abcdef" not in record


def test_a_silent_client_stalls_no_other_job(server):
    """A connection that sends nothing holds only its own child: another job runs meanwhile,
    and the silent connection is closed once the request time limit (3 s here) has passed."""
    sock, env = server
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(sock)
        started = time.monotonic()
        status, out, _ = _run(["airfl.forkserver", sock, "list"], REPO, env, timeout=120)
        assert status == 0 and "wing" in out
        silent.settimeout(60)
        assert silent.recv(1) == b""                       # the server dropped it
        assert time.monotonic() - started < 60
