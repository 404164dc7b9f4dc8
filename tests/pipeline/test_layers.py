"""The layers hold: import-linter's contracts in pyproject.toml (cli > pipeline > arena > wings >
core, the core never importing a wing, the arena or the pipeline, wings and stages independent
of each other, no import cycles) checked on the installed package's real import graph."""

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



MAX_MODULE_LINES = 500


def test_no_module_is_longer_than_500_lines(repo_root):
    """One job per module: a module past ~500 lines holds several and is split by role
    (e.g. a wing's proposed schemes apart from its baselines, dataset readers apart from fetching)."""
    long = {str(path.relative_to(repo_root)): n
            for path in sorted((repo_root / "src" / "airfl").rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_every_wing_is_in_the_independence_contract(repo_root):
    """The contract lists wing packages by hand: a new wing left out of it could import
    another wing unnoticed. The one exception is a wing that is a layer of its own above the
    wings (the arena, which runs their schemes): the layers contract keeps every wing from
    importing it, and the core from importing it too."""
    import tomllib

    from airfl.pipeline.registry import wings

    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (independent,) = [c for c in contracts if c["name"] == "wings are independent of each other"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    (core,) = [c for c in contracts if c["type"] == "forbidden"]
    above = [layer for layer in layers["layers"] if "|" not in layer]
    below = {m.strip() for layer in layers["layers"] if "|" in layer for m in layer.split("|")}
    assert layers["layers"].index("airfl.arena") == len(layers["layers"]) - 2  # just above
    assert all(any(m == b or m.startswith(b + ".") for b in below)    # the wings' layer
               for m in independent["modules"])
    assert {w.package for w in wings()} <= set(independent["modules"]) | set(above)
    assert "airfl.arena" in core["forbidden_modules"]


def test_the_stage_contract_covers_exactly_the_stage_table(repo_root):
    """The contract names the stages by a wildcard (a new stage needs no edit of it): what it
    matches must be every module of the stages folder, and those are the stage table's."""
    import tomllib

    from airfl.pipeline.stage_table import STAGES

    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["name"] == "stages do not import each other"]
    assert contract["modules"] == ["airfl.pipeline.stages.*"]
    folder = repo_root / "src" / "airfl" / "pipeline" / "stages"
    modules = {f"airfl.pipeline.stages.{p.stem}" for p in folder.glob("*.py")
               if p.stem != "__init__"}
    assert not [p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"], \
        "a sub-package of stages/ would escape the one-level wildcard"
    assert len(modules) >= 13
    assert {s.module for s in STAGES} == modules


def test_ruff_finds_nothing_in_src_and_tests(repo_root):
    """The linter with the rule set pyproject.toml chooses and justifies ([tool.ruff.lint]):
    undefined names, unused imports and variables, mutable or computed default arguments,
    statements without effect."""
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run([str(ruff), "check", "--no-cache", "--config",
                           str(repo_root / "pyproject.toml"), "src", "tests", "benchmarks"],
                          cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_no_test_module_imports_a_conftest(repo_root):
    """Several test folders have a conftest.py, and pytest imports each as a module named
    `conftest`: which one `from conftest import ...` gets depends on the collection order (it
    differs between xdist workers). Shared names live in modules of their own (tests/checkout.py)."""
    import re
    pattern = re.compile(r"^\s*(from conftest import|import conftest)", re.MULTILINE)
    offenders = [str(path.relative_to(repo_root)) for path in (repo_root / "tests").rglob("*.py")
                 if pattern.search(path.read_text(encoding="utf-8"))]
    assert not offenders, f"import a helper module instead of conftest: {offenders}"
