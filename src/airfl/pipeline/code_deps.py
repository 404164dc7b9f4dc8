"""Which source files a stage runs, derived from what it imports (not kept by hand).

A stage's code is the transitive closure of the `airfl` modules that its stage module and the
wings it loads import (statically, including imports inside functions: a stage may call them),
read from the source with `ast`. DVC lists these files as the stage's `deps`; Snakemake gets a
digest of the same files as a rule parameter, so that a code edit marks the same stages stale in
both tools (Snakemake's own `code` trigger covers only a rule's text). Files inside a wing's
package are named by the wing's folder, as before (a wing is one unit of code).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Iterator

from airfl.runtime.io import atomic_path

ROOT_PACKAGE = "airfl"


def _package_folder(package: str) -> Path:
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {package!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


@cache
def _modules(package: str) -> dict[str, Path]:
    """Module name -> source file of every module of an installed package."""
    folder = _package_folder(package)
    out = {}
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join((package, *parts))] = path
    return out


@cache             # each file parsed once per process (`_graph` runs per set of packages)
def _imported(module: str, path: Path) -> frozenset[str]:
    """Names a module imports (absolute; `from x import y` gives both x and x.y, as y may be a
    submodule), resolved against the module's own package for relative imports. Taken from the
    on-disk cache (`_disk_cache`) while the file's size and time stamp are those it was read at:
    parsing ~150 files was ~0.4 of the ~5 CPU seconds of a no-op `snakemake -n`."""
    stamp = _stamp(path)
    hit = _disk_cache().get(str(path))
    if hit is not None and hit[0] == stamp:
        return frozenset(hit[1])
    names = _parse_imports(module, path)
    _disk_cache()[str(path)] = [stamp, sorted(names)]
    _DIRTY.add(str(path))
    return names


def _parse_imports(module: str, path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(names)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones too (in functions, classes, if/try/with/for/match): an
    import is a statement, so expressions need no visit (10x fewer nodes than `ast.walk`)."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)


#: where Snakemake keeps its own state; the cache is only kept where that folder exists
CACHE = Path(".snakemake") / "airfl_imports.json"
_DIRTY: set[str] = set()


def _stamp(path: Path) -> list[int]:
    info = path.stat()
    return [info.st_size, info.st_mtime_ns]


@cache
def _disk_cache() -> dict[str, list]:
    """File -> [[size, mtime_ns], imported names] as last parsed (the rule DVC's own hash cache
    follows); empty when there is none or it cannot be read."""
    try:
        return json.loads(CACHE.read_text())
    except (OSError, ValueError):
        return {}


def _save_cache() -> None:
    if _DIRTY and CACHE.parent.is_dir():
        with atomic_path(CACHE) as tmp:
            tmp.write_text(json.dumps(_disk_cache(), sort_keys=True))
        _DIRTY.clear()


@cache
def _graph(packages: tuple[str, ...]) -> dict[str, frozenset[str]]:
    known = {name: path for package in packages for name, path in _modules(package).items()}
    graph = {}
    for name, path in known.items():
        targets = set()
        for imported in _imported(name, path):
            while imported and imported not in known:     # a class or function: its module
                imported = imported.rpartition(".")[0]
            if imported:
                targets.add(imported)
        parent = name.rpartition(".")[0]
        if parent in known:                               # importing a module runs its package
            targets.add(parent)
        graph[name] = frozenset(targets - {name})
    _save_cache()
    return graph


def closure(start: set[str], packages: tuple[str, ...]) -> set[str]:
    """Every module reachable from `start` through imports within `packages`."""
    graph = _graph(packages)
    seen, todo = set(), [m for m in start if m in graph]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module] - seen)
    return seen


def _display(path: Path) -> str:
    """A dependency path as dvc.yaml writes it: relative to the working directory (the
    repository) when inside it, else absolute (a package installed elsewhere)."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


@cache
def stage_code(stage: str, wing_packages: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The source files (and wing folders) a stage depends on when it loads these wings."""
    packages = tuple(dict.fromkeys((ROOT_PACKAGE, *wing_packages)))
    from airfl.pipeline.stage_table import stage as record      # its `run` module

    start = {record(stage).module}
    for package in wing_packages:
        start.update(_modules(package))
    folders = {package: _package_folder(package) for package in wing_packages}
    known = {name: path for package in packages for name, path in _modules(package).items()}
    deps = set()
    for module in closure(start, packages):
        path = known[module]
        owner = next((p for p, folder in folders.items() if folder in _ancestors(path)), None)
        deps.add(folders[owner] if owner else path)
    return tuple(sorted(_display(p) for p in _whole_folders(deps, known)))


def _whole_folders(deps: set[Path], known: dict[str, Path]) -> set[Path]:
    """`deps` with each package folder all of whose modules are in it named by the folder (a
    shorter dvc.yaml; DVC hashes a folder as one dependency)."""
    packages = sorted({path.parent for name, path in known.items() if path.name == "__init__.py"},
                      key=lambda folder: len(folder.parts), reverse=True)   # innermost first
    deps = set(deps)
    for folder in packages:
        inside = {path for path in known.values() if folder in _ancestors(path)}
        if inside and inside <= {d for d in deps if d.suffix == ".py"} | _covered(deps, inside):
            deps = {d for d in deps if folder not in _ancestors(d)} | {folder}
    return deps


@cache             # `folder in path.parents` builds every parent anew; asked ~10^5 times
def _ancestors(path: Path) -> frozenset[Path]:
    return frozenset(path.parents)


def _covered(deps: set[Path], files: set[Path]) -> set[Path]:
    """The files in `files` that a folder among `deps` already covers."""
    folders = [d for d in deps if d.suffix != ".py"]         # a module file or a package folder
    return {f for f in files if any(folder in _ancestors(f) for folder in folders)}


def digest(deps: tuple[str, ...]) -> str:
    """A hash of the files (folders: every file in them but bytecode) named by `deps`: what
    Snakemake compares to decide that code changed. Each dependency counts by its path inside
    its package and its bytes (`dep_digest`), so a clone elsewhere, or the package installed
    elsewhere, gives the same digest for the same code."""
    sha = hashlib.sha256()
    for name, dep in sorted((package_path(Path(dep)), dep) for dep in deps):
        sha.update(name.encode() + b"\0" + dep_digest(dep).encode() + b"\0")
    return sha.hexdigest()[:16]


@cache             # a file or folder read once per process, however many jobs name it
def dep_digest(dep: str) -> str:
    """A hash of one code dependency (a file, or every file of a folder but bytecode): each
    file's path inside its package (`package_path`) and its bytes, never where it lies."""
    path = Path(dep)
    files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.suffix != ".pyc") if path.is_dir() else [path]
    sha = hashlib.sha256()
    for name, file in sorted((package_path(file), file) for file in files):
        sha.update(name.encode() + b"\0" + file.read_bytes() + b"\0")
    return sha.hexdigest()


def package_path(path: Path) -> str:
    """`path` as named inside its top-level package: from the outermost folder of the chain of
    folders holding an `__init__.py` (src/airfl/papers/lapa/claims.py -> airfl/papers/lapa/
    claims.py, wherever the clone or installation is); a file outside any package keeps its
    own name only."""
    path = Path(os.path.abspath(path))
    top = path if path.is_dir() and (path / "__init__.py").is_file() else None
    for folder in path.parents:
        if not (folder / "__init__.py").is_file():
            break
        top = folder
    return path.relative_to(top.parent).as_posix() if top is not None else path.name
