"""Run a command (Snakemake) with its airfl jobs forked from a fork server, or without one.

`python -m airfl.pipeline.forkserved snakemake --cores 8` starts `airfl.forkserver` on a
socket in a private temporary folder, waits until it listens (it imports torch and the
registry first: a few seconds), runs the command with `AIRFL_FORKSERVER` set (the rules'
jobs then fork from the server instead of starting Python, ~2 s a job; workflow/rules/common.smk),
and stops the server when the command ends, printing the jobs' CPU time. Where the server cannot
start (it exits, or does not listen within START_TIMEOUT_S) the command runs with plain
`python -m airfl` jobs after a one-line note: the same outputs, only slower. With
`AIRFL_FORKSERVER` already set, the command runs as it is (that server serves it).
`make reproduce` runs Snakemake this way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 120.0
ENV = "AIRFL_FORKSERVER"


def start_server(socket_path: Path, server: list[str], log) -> subprocess.Popen | None:
    """The server process once it listens at `socket_path`; None (and nothing left running)
    when it exits or makes no socket within START_TIMEOUT_S."""
    process = subprocess.Popen([*server, str(socket_path)], stdout=log, stderr=log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not socket_path.is_socket():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(process)
            return None
        time.sleep(0.1)
    return process


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)      # the server prints its jobs' CPU time
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(command: list[str], server: list[str] | None = None) -> int:
    """Run `command` with a fork server (see the module docstring); returns its exit status."""
    if os.environ.get(ENV):
        return subprocess.call(command)
    server = server or [sys.executable, "-m", "airfl.forkserver", "--serve"]
    with tempfile.TemporaryDirectory(prefix="airfl-") as folder:
        socket_path, log_path = Path(folder) / "airfl.sock", Path(folder) / "server.log"
        with log_path.open("w") as log:
            process = start_server(socket_path, server, log)
        env = dict(os.environ)
        if process is None:
            reason = log_path.read_text().strip().splitlines()
            print(f"airfl: the fork server did not start ({reason[-1] if reason else 'no socket'}"
                  "); running jobs without it", file=sys.stderr, flush=True)
        else:
            env[ENV] = str(socket_path)
        try:
            return subprocess.call(command, env=env)
        finally:
            if process is not None:
                stop_server(process)
                sys.stderr.write(log_path.read_text())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
