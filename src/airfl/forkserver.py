"""A fork server for pipeline jobs: `python -m airfl` without paying Python's start-up per job.

A quick job's own work is often shorter than its start-up: importing torch and the experiment
registry (every wing's catalogue) costs ~2.4 CPU s a job on the CI machine under load, ~1.7 s
idle, while the median design job takes 2.4 s in all (CI's quick DAG: 567 jobs, ~450 of them
import both). The server imports all of that once; each job is then a `fork()` of it that runs
`airfl.cli.main` with the job's arguments, working directory, umask, environment and standard
streams,
exactly as `python -m airfl` would, and answers the job's exit status. Nothing is shared between
jobs but the imported, not yet used modules: no job runs in the server itself, and a fork starts
from the same state every time, so outputs do not depend on the order jobs run in.

Opt-in (`AIRFL_FORKSERVER=<socket path>` in the environment of Snakemake, see
workflow/rules/common.smk; .ci/run starts and stops the server). Usage:
    python -m airfl.forkserver --serve SOCKET [--request-timeout SECONDS]
                                                     (the server; SIGTERM stops it)
    python -m airfl.forkserver SOCKET ARGS...        (one job: `airfl ARGS...` in the server)
The client imports nothing of airfl or torch, and stops with a clear message when no server
listens; the server must run the same code as the jobs (started after any source edit).

Whoever can drive the server runs code as the server's user, so it serves its owner only:
  * the socket is created with mode 0600 (bound under umask 0177, chmod-ed before `listen`), and
    each caller's uid, read from the kernel (SO_PEERCRED), must be the server's own, else the
    connection is closed unanswered;
  * a job's environment is the server's, with only the keys a job reads taken from the client
    (`AIRFL_*` and the thread counts, `job_environment`): never `PATH` (the provenance `git`
    call), `GIT_*`, `LD_*`, `PYTHON*` or anything else that chooses what code runs;
  * each request is read in the forked child under a time limit (`REQUEST_TIMEOUT_S`), so a
    client that connects and sends nothing holds only its own child, never the other jobs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import threading

_LENGTH = struct.Struct("!I")
_PEERCRED = struct.Struct("3i")                  # struct ucred: pid, uid, gid
REQUEST_TIMEOUT_S = 30.0                         # a client sends its request right after connect
# What a job may take from its client's environment: the keys airfl and its libraries read as
# settings of a job (the data mirror, thread counts). Everything else comes from the server.
JOB_ENV_PREFIXES = ("AIRFL_",)
JOB_ENV_KEYS = frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                          "NUMEXPR_NUM_THREADS"})


def _recv_exactly(conn: socket.socket, size: int, head: bytes = b"") -> bytes:
    data = head
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the peer closed the connection mid-message")
        data += chunk
    return data


def request(path: str, argv: list[str]) -> int:
    """Run `airfl argv` in the server at `path` with this process's working directory,
    environment and standard streams; the job's exit status (1 if it died without one)."""
    umask = os.umask(0o022)
    os.umask(umask)
    env = {key: value for key, value in os.environ.items() if job_allows(key)}
    payload = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": env, "umask": umask}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(path)
        except OSError as error:
            print(f"airfl.forkserver: no server at {path} ({error.strerror}); start one with "
                  f"`python -m airfl.forkserver --serve {path}` or unset AIRFL_FORKSERVER",
                  file=sys.stderr)
            return 3
        try:
            socket.send_fds(conn, [_LENGTH.pack(len(payload)) + payload], [0, 1, 2])
            return _LENGTH.unpack(_recv_exactly(conn, _LENGTH.size))[0]
        except (ConnectionError, OSError):
            print(f"airfl.forkserver: the server at {path} answered no exit status (the job "
                  "died, or the server refused this user: it serves its owner only)",
                  file=sys.stderr)
            return 1


def job_allows(key: str) -> bool:
    """Whether a job may take environment key `key` from its client (see the module doc)."""
    return key in JOB_ENV_KEYS or key.startswith(JOB_ENV_PREFIXES)


def job_environment(server_env: dict[str, str], client_env: dict[str, str]) -> dict[str, str]:
    """The environment a job runs in: the server's, except that the allowed keys are exactly
    the client's (an allowed key the client lacks is absent, as in a direct run)."""
    return {**{k: v for k, v in server_env.items() if not job_allows(k)},
            **{k: v for k, v in client_env.items() if job_allows(k) and isinstance(v, str)}}


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket, as the kernel recorded it."""
    return _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                            _PEERCRED.size))[1]


def _read_request(conn: socket.socket, timeout: float) -> tuple[list[int], dict]:
    """The client's standard streams and its request, read within `timeout` seconds."""
    conn.settimeout(timeout)
    message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    size = _LENGTH.unpack(message[:_LENGTH.size])[0]
    body = _recv_exactly(conn, _LENGTH.size + size, message)[_LENGTH.size:]
    conn.settimeout(None)
    return fds, json.loads(body)


def _preload() -> None:
    """What every job would import: torch, the registry with every wing's catalogue, the CLI
    and every stage's module (the lazily loaded ones, e.g. cvxpy, stay lazy)."""
    import importlib

    import torch  # noqa: F401

    from airfl import cli  # noqa: F401
    from airfl.pipeline.registry import all_analytic, all_experiments
    from airfl.pipeline import stage_table

    all_experiments()
    all_analytic()
    for stage in stage_table.STAGES:      # every stage's module (the stage table), light ones too
        importlib.import_module(stage.module)
    _load_compiled_loops()


def _load_compiled_loops() -> None:
    """Load the numba loops (compiled once, cached on disk) in the server with the argument
    types the jobs use: a forked job then starts with them loaded instead of paying numba's
    start-up and the cache loads itself (~0.6 s in every job that computes lockstep softmax
    gradients, digital quantized sums or their uniforms)."""
    import torch

    from airfl.channel.quantized_sums import quantized_weighted_sum
    from airfl.models.flat import SoftmaxRegression
    from airfl.runtime.splitmix import splitmix64_uniforms

    model = SoftmaxRegression(4, 3, l2=0.01)
    x = torch.ones(2, 5, 4)
    model.grads_rows(torch.zeros(2, model.dim), x, torch.zeros(2, 5, dtype=torch.int64),
                     torch.ones(2, 5), torch.tensor([[True, False], [False, False]]))
    quantized_weighted_sum(torch.ones(2, 4), torch.zeros(2, 4, dtype=torch.float64),
                           torch.tensor([True, False]), torch.tensor([2, 2]),
                           torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))
    splitmix64_uniforms(1, (2, 3))


def _stop_when_client_goes(conn: socket.socket) -> None:
    """A job whose client was stopped (Snakemake cancelling it) stops too, as a direct job
    would: the client sends nothing after its request, so any end of the stream is that."""
    try:
        conn.recv(1)
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def _serve_connection(conn: socket.socket, timeout: float) -> None:
    """In the forked child: read the request (a client that sends none in time, or a garbled
    one, ends only this child), then run the job; never returns."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)     # not the server's handlers: a stop of
    signal.signal(signal.SIGTERM, signal.SIG_DFL)     # this child must not stop the server
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        fds, request_ = _read_request(conn, timeout)
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} file descriptors instead of 3")
    except (OSError, ConnectionError, ValueError, struct.error, TypeError) as error:
        print(f"airfl.forkserver: dropped a request ({error})", file=sys.stderr, flush=True)
        os._exit(1)
    _run_job(conn, fds, request_)


def _run_job(conn: socket.socket, fds: list[int], request_: dict) -> None:
    """In the forked child: become the job, run it, answer its exit status, never return."""
    status = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request_["cwd"])
        os.umask(request_["umask"])                 # files get the client's modes, not the server's
        environment = job_environment(dict(os.environ), request_["env"])
        os.environ.clear()
        os.environ.update(environment)
        sys.argv = ["airfl", *request_["argv"]]
        threading.Thread(target=_stop_when_client_goes, args=(conn,), daemon=True).start()
        from airfl.cli import main

        try:
            status = main(request_["argv"])
        except SystemExit as stop:               # argparse and explicit exits
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:                        # a job's crash is the job's: traceback, 1
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            conn.sendall(_LENGTH.pack(int(status) & 0xFF))
        finally:
            os._exit(int(status) & 0xFF)


def serve(path: str, owner: int | None = None, timeout: float = REQUEST_TIMEOUT_S) -> None:
    """Preload, listen at `path`, fork one child per connection of `owner` (this process's
    uid by default); on SIGTERM print the CPU time of the children (the jobs) and of the
    server, remove the socket and stop."""
    import resource

    owner = os.getuid() if owner is None else owner
    _preload()
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)                          # the socket is born 0600: no window
    try:
        server.bind(path)
    finally:
        os.umask(umask)
    os.chmod(path, 0o600)
    server.listen(64)
    jobs = 0

    def stop(*_):
        while True:                                      # wait for the jobs still running
            try:
                os.wait()
            except ChildProcessError:
                break
        own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
        print(f"airfl.forkserver: {jobs} jobs, their CPU {kids.ru_utime + kids.ru_stime:.1f} s, "
              f"the server's {own.ru_utime + own.ru_stime:.1f} s", file=sys.stderr)
        server.close()
        if os.path.exists(path):
            os.unlink(path)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"airfl.forkserver: serving at {path}", file=sys.stderr, flush=True)
    while True:
        conn, _ = server.accept()
        try:
            caller = peer_uid(conn)
        except OSError:
            caller = None
        if caller != owner:
            print(f"airfl.forkserver: refused a connection from uid {caller} (serves uid "
                  f"{owner} only)", file=sys.stderr, flush=True)
            conn.close()
            continue
        jobs += 1
        if os.fork() == 0:
            server.close()
            _serve_connection(conn, timeout)
        conn.close()
        while True:                                      # reap the jobs that ended
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"] and len(argv) in (2, 4):
        timeout = REQUEST_TIMEOUT_S
        if len(argv) == 4:
            try:
                timeout = float(argv[3]) if argv[2] == "--request-timeout" else -1.0
            except ValueError:
                timeout = -1.0
            if not timeout > 0:
                print(f"airfl.forkserver: expected --request-timeout SECONDS (> 0), got "
                      f"{' '.join(argv[2:])}", file=sys.stderr)
                return 2
        serve(argv[1], timeout=timeout)
        return 0
    if len(argv) < 2:
        print(__doc__.split("Usage:")[1].split("The client")[0].rstrip(), file=sys.stderr)
        return 2
    return request(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
