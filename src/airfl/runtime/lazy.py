"""Deferred imports of heavy optional-at-runtime modules.

cvxpy (with scipy.stats) takes ~1 s to import, and every Snakemake job imports the experiment
registry; only design jobs solve a problem. A lazily loaded module is imported on first
attribute access, so train, privacy and figure jobs never pay for it.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """The module `name`, loaded on first use (the loaded module itself when already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
