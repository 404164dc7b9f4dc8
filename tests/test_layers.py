"""The layers hold: import-linter's contracts in pyproject.toml (cli > pipeline > wings > core,
the core never importing a wing or the pipeline, wings and stages independent of each other, no
import cycles) checked on the installed package's real import graph."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_contracts_are_kept(repo_root):
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--config", str(repo_root / "pyproject.toml")],
                          cwd=repo_root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout

