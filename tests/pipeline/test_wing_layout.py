"""One file name per role in every wing, and tests that mirror each wing's modules.

The same file name means the same role in every wing (`experiments.py` is a wing's catalogue
wherever it appears); a role that needs several modules is a package of that name
(`claims/{analytic,training}.py`), never suffixed siblings (`schemes_ota.py`, `experiments_more.py`).
A wing's other modules are named for their one subject and listed here per wing, so that a new
name is a decision, not an accident. Each wing module with functions or classes has its test
file `tests/papers/<wing>/test_<wing>_<module>.py` (a package's module:
`test_<wing>_<package>_<module>.py`; the arena's in tests/arena/), and every test file there names
an existing module. A folder's shared test helpers live beside them in `conftest.py` (fixtures)
or `<wing>_helpers.py` modules (not `test_*`, so not mirrored).

The rules are pure functions of name lists, tested on synthetic lists (they can fail) and then
applied to the installed wings."""

from __future__ import annotations

import ast
from pathlib import Path

#: The shared roles: the same name, the same job, in every wing that has it.
ROLES = {
    "__init__": "the wing's `WING` declaration (entry point, schemes, audits)",
    "params": "the wing's params.yaml block, declared once (stdlib only)",
    "experiments": "the catalogue: the wing's figures, their curves and claims' wording",
    "claims": "the checks of the claims on the stored figure data",
    "schemes": "the training schemes (design once, aggregate per round)",
    "design": "what is chosen once before training from statistical CSI",
    "run_blocks": "the params sections as the generic run blocks the stages read",
    "audit": "the wing's DP mechanisms as auditable mechanisms",
    "privacy": "the privacy accounting of the wing's mechanisms",
    "aggregation": "one round's aggregation rules",
    "analytic_figures": "the analytic figures' frames (no training)",
}

#: A wing's own subjects, one job each (its docstring says which).
SUBJECTS = {
    "arena": {"entrants", "leaderboard", "task"},
    "baselines": set(),
    "biased_fl": {"bit_allocation", "problem"},
    "cdpb": {"channel_stats", "objective", "setting"},
    "dp_perk": {"beamforming", "uplink"},
    "lapa": {"control", "ddpg", "mechanism", "power", "radio", "weights"},
    "ota_fd": {"calibration", "distillation", "resnet", "rounds", "theorem1", "transceiver"},
}

#: Modules with functions or classes but no test file of their own, and why. Kept to the
#: trivial: a wing's `__init__` declares `WING` (a schema hook at most, exercised wherever the
#: params schema is built).
UNTESTED = {
    ("biased_fl", "__init__"): "`WING` and its `$defs` hook; test_biased_fl_schemes_params.py "
                               "checks the generated `$defs.biased_fl_curve`",
}

PAPERS = Path(__file__).resolve().parents[2] / "src" / "airfl" / "papers"
ARENA = PAPERS.parent / "arena"
TESTS = Path(__file__).resolve().parents[1] / "papers"

#: Wings whose test files live outside tests/papers/<wing>/: the arena, the layer above the
#: wings, in tests/arena/ (the same one-file-per-module rule).
TEST_DIRS = {"arena": TESTS.parent / "arena"}


def folder_of_tests(wing: str) -> Path:
    """The folder of `wing`'s test files."""
    return TEST_DIRS.get(wing, TESTS / wing)


def name_problems(wing: str, names: set[str]) -> list[str]:
    """Top-level module or package names of `wing` outside the role vocabulary and the wing's
    subjects, or suffixed/prefixed variants of a role (`experiments_more`, `scheme_params`)."""
    problems = []
    allowed = set(ROLES) | SUBJECTS.get(wing, set())
    for name in sorted(names):
        variant = [r for r in ROLES if r != "__init__" and name != r
                   and (name.startswith(r + "_") or name.endswith("_" + r)
                        or name.startswith(r.rstrip("s") + "_"))]
        if variant:
            problems.append(f"{wing}/{name}: a variant of the role {variant[0]!r}; several "
                            f"modules of one role go into a package {variant[0]}/")
        elif name not in allowed:
            problems.append(f"{wing}/{name}: not a shared role ({', '.join(sorted(ROLES))}) nor "
                            f"one of {wing}'s subjects (SUBJECTS in this file)")
    return problems


def mirror_name(wing: str, module: str) -> str:
    """The test file of a wing module given as a dotted path inside the wing (`claims.x1`)."""
    parts = [p for p in module.split(".") if p != "__init__"]
    return "_".join([f"test_{wing}", *parts]) + ".py"


def mirror_problems(wing: str, modules: dict[str, bool], test_files: set[str],
                       untested: dict[tuple[str, str], str], tests: str = "") -> list[str]:
    """`modules`: dotted module paths inside the wing -> whether it defines a function or class;
    `tests`: the folder of its test files as named in a problem (tests/papers/<wing> unless
    given). Problems: a test file that names no module of the wing, a module with code and no
    test file (unless listed in `untested`)."""
    tests = tests or f"tests/papers/{wing}"
    expected = {mirror_name(wing, m): m for m in modules}
    problems = [f"{tests}/{t}: names no module of {wing} (expected one of "
                f"test_{wing}_<module>.py)" for t in sorted(test_files - set(expected))]
    problems += [f"{wing}/{m.replace('.', '/')}.py has no {tests}/{t}"
                 for t, m in sorted(expected.items())
                 if modules[m] and t not in test_files and (wing, m) not in untested]
    return problems


def _wing_dirs() -> dict[str, Path]:
    dirs = {p.name: p for p in sorted(PAPERS.iterdir()) if (p / "__init__.py").exists()}
    return {**dirs, "arena": ARENA}


def _top_names(folder: Path) -> set[str]:
    return ({p.stem for p in folder.glob("*.py")}
            | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()})


def _modules(folder: Path) -> dict[str, bool]:
    out = {}
    for path in sorted(folder.rglob("*.py")):
        dotted = ".".join(path.relative_to(folder).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out[dotted] = any(isinstance(s, (ast.FunctionDef, ast.ClassDef)) for s in tree.body)
    return out


# ---- the rules on synthetic lists ---------------------------------------------------------------

def test_the_name_rule_rejects_suffixed_variants_and_unknown_names():
    names = {"experiments", "claims", "params", "experiments_more", "claims_more", "schemes_ota",
             "design_digital", "scheme_params", "ota_experiments", "helpers"}
    problems = name_problems("biased_fl", names)
    flagged = {p.split(":")[0].split("/")[1] for p in problems}
    assert flagged == {"experiments_more", "claims_more", "schemes_ota", "design_digital",
                       "scheme_params", "ota_experiments", "helpers"}
    assert not name_problems("cdpb", {"experiments", "claims", "setting", "channel_stats"})
    assert name_problems("dp_perk", {"setting"})            # another wing's subject


def test_the_test_file_rule_wants_one_file_per_module_with_code_and_no_strays():
    modules = {"__init__": False, "params": False, "experiments": True, "claims.__init__": False,
               "claims.x1": True, "claims.x2_x7": True, "problem": True}
    files = {"test_w_experiments.py", "test_w_claims_x1.py", "test_w_problem.py",
             "test_w_figures.py"}
    problems = mirror_problems("w", modules, files, {})
    assert problems == [
        "tests/papers/w/test_w_figures.py: names no module of w (expected one of "
        "test_w_<module>.py)",
        "w/claims/x2_x7.py has no tests/papers/w/test_w_claims_x2_x7.py"]
    mended = (files | {"test_w_claims_x2_x7.py"}) - {"test_w_figures.py"}
    assert mirror_problems("w", modules, mended, {}) == []
    assert mirror_problems("w", {"experiments": True}, set(),
                              {("w", "experiments"): "why"}) == []
    assert mirror_problems("arena", {"task": True}, {"test_arena.py"}, {}, "tests/arena") == [
        "tests/arena/test_arena.py: names no module of arena (expected one of "
        "test_arena_<module>.py)",
        "arena/task.py has no tests/arena/test_arena_task.py"]


# ---- the rules on the installed wings --------------------------------------------------------------

def test_every_wing_module_is_named_for_a_shared_role_or_a_listed_subject():
    problems = [p for wing, folder in _wing_dirs().items()
                for p in name_problems(wing, _top_names(folder))]
    assert not problems, "\n".join(problems)
    assert set(SUBJECTS) == set(_wing_dirs()), "a wing without its SUBJECTS entry"


def test_the_wing_tests_mirror_the_wing_modules():
    wings = _wing_dirs()
    assert {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"} \
        <= set(wings), "a tests/papers folder for no wing"
    problems = []
    for wing, folder in wings.items():
        tests = folder_of_tests(wing)
        files = {p.name for p in tests.glob("test_*.py")}
        problems += mirror_problems(wing, _modules(folder), files, UNTESTED,
                                    tests.relative_to(TESTS.parents[1]).as_posix())
    assert not problems, "\n".join(problems)
    assert all(_modules(wings[w])[m] for w, m in UNTESTED), \
        "an UNTESTED entry for a module without code (drop it)"
