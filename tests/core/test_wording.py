"""Code cites the paper (section, equation) or states our reading; it never points at a reading
aid outside the repository ("spec §N", "the spec's", errata). Checked for the core, every wing,
the tests, the benchmarks (with their stored results) and the workflow rules."""

from __future__ import annotations

import re
from pathlib import Path

from checkout import REPO

SRC = REPO / "src" / "airfl"
PAPERS = SRC / "papers"
#: Outside src/: every text file here is read; this file is left out, since it spells the
#: forbidden wording as the examples of its own self-test.
PROSE_ROOTS = (REPO / "tests", REPO / "benchmarks", REPO / "workflow")
PROSE_SUFFIXES = {".py", ".md", ".smk", ".yaml", ".yml", ".rst", ".txt", ".toml", ".json"}
WORDING = re.compile(r"(?i)\berrata\b|\bspecs?(?:'s|\s+§|\s+\d|\s+section|-\d)|\bthe\s+spec\b"
                     r"|shared/specs|\b(?:DESIGN|ENVIRONMENT)\.md\b"
                     r"|\bspecs?\s+(?:app\.|appendix|fig\.|a\d|values|cite|reference)"
                     r"|\btest_\w*?(?<![a-z])specs?(?![a-z])|_specs?_(?:defaults|says|reference)")


def _checked_files():
    return sorted(SRC.rglob("*.py"))


def _prose_files():
    """Text files under tests/, benchmarks/ and workflow/, skipping caches and this file."""
    return sorted(path for root in PROSE_ROOTS for path in root.rglob("*")
                  if path.is_file() and path.suffix in PROSE_SUFFIXES
                  and path != Path(__file__).resolve()
                  and not any(part.startswith((".", "__pycache__")) for part in
                              path.relative_to(REPO).parts))


def _hits(files):
    return [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
            for path in files
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            if WORDING.search(line)]


def test_the_wording_rule_finds_spec_references_and_not_variables():
    found = [bool(WORDING.search(t)) for t in (
        "(spec §6.3)", "the spec's grid", "Errata 2", "spec 7 defaults", "see shared/specs",
        "spec Appendix A", "def test_values_of_spec_4_5():", "def test_x_match_spec():",
        "spec = block['model']", "for spec in specs", "spec.name", "module_from_spec(spec)",
        "figure_spec=spec", "def test_special_cases():")]
    assert found == [True] * 8 + [False] * 6


def test_the_core_and_every_wing_cite_papers_not_reading_aids():
    files = _checked_files()
    assert {SRC / "cli.py", PAPERS / "lapa" / "mechanism.py", PAPERS / "cdpb" / "design.py"} <= set(files)
    hits = _hits(files)
    assert not hits, "\n".join(hits)


def test_tests_benchmarks_and_workflow_cite_papers_not_reading_aids():
    files = _prose_files()
    here = Path(__file__).resolve()
    assert here not in files
    assert {REPO / "tests" / "core" / "test_claims.py", REPO / "benchmarks" / "README.md",
            REPO / "workflow" / "rules" / "common.smk"} <= set(files)
    hits = _hits(files)
    assert not hits, "\n".join(hits)
