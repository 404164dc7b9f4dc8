"""One job at a time: `airfl <stage> <args>` holds an exclusive lock on results/locks/<job>.lock
while it runs, so that the same job started twice at once (`dvc repro` of a stage while
Snakemake runs it, or two Snakemake runs of different targets sharing it) stops with a clear
message instead of training twice and racing for the same outputs. Snakemake already excludes
a second Snakemake run over the same outputs; DVC a second `dvc repro`; neither knows the other.

The lock is the kernel's (flock on an open file), so it ends with the process however that
ends; the file itself stays and means nothing while no process holds it.
"""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO

LOCKS = Path("results") / "locks"


class JobRunning(RuntimeError):
    """The same job is running in another process."""


def _path(stage: str, args: list[str]) -> Path:
    """The lock file of the job `airfl <stage> <args>`."""
    return LOCKS / ("-".join([stage, *args]).replace("/", "-") + ".lock")


def hold(stage: str, args: list[str]) -> IO:
    """Take the job's lock for the life of the returned file (keep it open until the job
    ends); JobRunning when another process holds it."""
    path = _path(stage, args)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise JobRunning(f"`airfl {' '.join([stage, *args])}` is already running in this "
                         f"folder (another Snakemake or DVC run holds {path}); let that run "
                         "finish instead of running the job twice at once") from None
    return handle


def discard(stage: str, args: list[str]) -> None:
    """Remove the lock file of a job that turned out not to exist (an unknown experiment or
    curve found only after the lock was taken), and the folders it alone made: a typo leaves
    nothing behind. Only for a name no other process can be running."""
    _path(stage, args).unlink(missing_ok=True)
    for folder in (LOCKS, LOCKS.parent):
        try:
            folder.rmdir()                      # only when empty
        except OSError:
            break
