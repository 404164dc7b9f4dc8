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
