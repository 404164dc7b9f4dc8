"""Helpers of the end-to-end tests: a copy of the repository (no results, venv or data) to run
the real tools in, and running a command with a readable failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import yaml

BIN = Path(sys.executable).parent
SKIP = {".git", ".venv", "results", "figures", ".snakemake", "data", "logs", ".pytest_cache",
        ".hypothesis", "benchmarks"}


def run(args, cwd, env, check=True, timeout=900):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({done.returncode}):\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def tool_env(mirror: Path, **extra: str) -> dict[str, str]:
    """The environment the README's commands run in (the venv's tools first, offline data)."""
    out = dict(os.environ)
    out.update(PATH=f"{BIN}{os.pathsep}{out.get('PATH', '')}", AIRFL_DATA_MIRROR=str(mirror),
               DVC_NO_ANALYTICS="1", OMP_NUM_THREADS="1", GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", **extra)
    return out


def make_workspace(repo_root: Path, target: Path, env, edit: Callable[[dict], dict]) -> Path:
    """A git repository holding a copy of the project with params.yaml passed through `edit`
    and dvc.yaml regenerated for it."""
    shutil.copytree(repo_root, target, ignore=lambda d, names: [n for n in names if n in SKIP]
                    if Path(d) == repo_root else [n for n in names if n == "__pycache__"],
                    symlinks=True)
    params_path = target / "params.yaml"
    params_path.write_text(yaml.safe_dump(edit(yaml.safe_load(params_path.read_text())),
                                          sort_keys=False))
    (target / "dvc.lock").unlink(missing_ok=True)
    run(["airfl", "dvc-yaml"], target, env)
    run(["git", "init", "-q"], target, env)
    run(["git", "add", "-A"], target, env)
    run(["git", "commit", "-qm", "workspace"], target, env)
    return target
