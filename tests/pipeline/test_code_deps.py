"""What a stage's code is: the imports read from the source, and the
on-disk cache of them that a no-op `snakemake -n` reads instead of parsing every file."""

from __future__ import annotations

import ast
import json

import pytest

from airfl.pipeline import code_deps


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """code_deps with its cache file under tmp_path and its in-process caches empty (and
    emptied again afterwards, so no other test sees this test's files)."""
    (tmp_path / ".snakemake").mkdir()
    monkeypatch.setattr(code_deps, "CACHE", tmp_path / ".snakemake" / "airfl_imports.json")
    monkeypatch.setattr(code_deps, "_DIRTY", set())

    def clear():
        code_deps._imported.cache_clear()
        code_deps._disk_cache.cache_clear()

    clear()
    yield code_deps.CACHE
    clear()


def test_the_statement_walk_finds_every_import_ast_walk_finds():
    """Imports are statements: walking statements only (nested in functions, classes, if, try,
    with, for, match) must find what a walk over every node finds, in every airfl module."""
    for name, path in code_deps._modules("airfl").items():
        tree = ast.parse(path.read_text())
        every = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        statements = [n for n in code_deps._statements(tree.body)
                      if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert sorted(map(id, every)) == sorted(map(id, statements)), name


def test_imports_inside_functions_and_relative_imports_count(tmp_path, fresh_cache):
    path = tmp_path / "mod.py"
    path.write_text("import os\n\ndef f():\n    try:\n        from . import sib\n"
                    "    except ImportError:\n        from ..up import thing\n")
    assert code_deps._imported("pkg.sub.mod", path) == {
        "os", "pkg.sub", "pkg.sub.sib", "pkg.up", "pkg.up.thing"}


def test_the_import_cache_is_read_only_while_the_file_is_unchanged(tmp_path, fresh_cache):
    path = tmp_path / "mod.py"
    path.write_text("import os\n")
    assert code_deps._imported("pkg.mod", path) == {"os"}
    code_deps._save_cache()
    stored = json.loads(fresh_cache.read_text())
    assert stored[str(path)][1] == ["os"]
    # a new process with the same file reads the cache, not the file: prove it with a marker
    stored[str(path)][1] = ["from_the_cache"]
    fresh_cache.write_text(json.dumps(stored))
    code_deps._imported.cache_clear()
    code_deps._disk_cache.cache_clear()
    assert code_deps._imported("pkg.mod", path) == {"from_the_cache"}
    # an edit changes the file's size and time stamp: the file is parsed again
    path.write_text("import os\nimport json\n")
    code_deps._imported.cache_clear()
    assert code_deps._imported("pkg.mod", path) == {"os", "json"}
    code_deps._save_cache()
    assert json.loads(fresh_cache.read_text())[str(path)][1] == ["json", "os"]


def test_no_cache_is_written_where_snakemake_keeps_no_state(tmp_path, fresh_cache, monkeypatch):
    monkeypatch.setattr(code_deps, "CACHE", tmp_path / "absent" / "airfl_imports.json")
    path = tmp_path / "mod.py"
    path.write_text("import os\n")
    assert code_deps._imported("pkg.mod", path) == {"os"}
    code_deps._save_cache()
    assert not (tmp_path / "absent").exists()


def _tree(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


PACKAGE = {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n", "pkg/wing/__init__.py": "",
           "pkg/wing/claims.py": "Y = 2\n", "pkg/wing/table.csv": "a,b\n"}


def test_code_digests_are_the_same_from_any_clone_or_install(tmp_path, monkeypatch):
    """One package in a clone's src/, in another clone's src/, and installed into a site folder:
    the digests of a file, of a wing folder and of both together agree, whether the dependency is
    named relative to the working directory or by an absolute path."""
    for root in ("clone1/src", "clone2/src", "site"):
        _tree(tmp_path / root, PACKAGE)
    monkeypatch.chdir(tmp_path / "clone1")
    here = code_deps.digest(("src/pkg/core.py", "src/pkg/wing"))
    assert code_deps.package_path(tmp_path / "site/pkg/wing/claims.py") == "pkg/wing/claims.py"
    for root in (tmp_path / "clone2/src", tmp_path / "site", tmp_path / "clone1/src"):
        assert code_deps.dep_digest(str(root / "pkg/core.py")) == \
            code_deps.dep_digest("src/pkg/core.py")
        assert code_deps.dep_digest(str(root / "pkg/wing")) == code_deps.dep_digest("src/pkg/wing")
        assert code_deps.digest((str(root / "pkg/wing"), str(root / "pkg/core.py"))) == here


def test_a_code_digest_changes_with_a_files_bytes_or_its_name_in_the_package(tmp_path,
                                                                             monkeypatch):
    _tree(tmp_path / "a", PACKAGE)
    _tree(tmp_path / "b", PACKAGE)
    _tree(tmp_path / "c", PACKAGE)
    (tmp_path / "b/pkg/wing/claims.py").write_text("Y = 3\n")
    (tmp_path / "c/pkg/wing/claims.py").rename(tmp_path / "c/pkg/wing/claim.py")
    folder = {root: code_deps.dep_digest(str(tmp_path / root / "pkg/wing")) for root in "abc"}
    assert len(set(folder.values())) == 3
    assert code_deps.digest((str(tmp_path / "a/pkg/__init__.py"),)) != \
        code_deps.digest((str(tmp_path / "a/pkg/wing/__init__.py"),))    # same bytes, other name


def test_a_stage_has_one_code_digest_in_the_repository_and_from_elsewhere(repo_root, tmp_path,
                                                                          monkeypatch):
    """A second clone sharing this environment names the installed package's files by absolute
    paths; its jobs must not all look stale for that."""
    def claims_digest():
        code_deps.stage_code.cache_clear()
        code_deps.dep_digest.cache_clear()
        deps = code_deps.stage_code("claims", ("airfl.papers.cdpb",))
        return deps, code_deps.digest(deps)

    monkeypatch.chdir(repo_root)
    inside, here = claims_digest()
    monkeypatch.chdir(tmp_path)
    outside, there = claims_digest()
    code_deps.stage_code.cache_clear()
    code_deps.dep_digest.cache_clear()
    assert inside[0].startswith("src/airfl") and outside[0].startswith("/")
    assert here == there
