"""Code cites the paper (section, equation) or states our reading; it never points at a reading
aid outside the repository ("spec §N", "the spec's", errata). Checked for the core and every
wing."""

from __future__ import annotations

import re

from conftest import REPO

SRC = REPO / "src" / "airfl"
PAPERS = SRC / "papers"
WORDING = re.compile(r"(?i)\berrata\b|\bspecs?(?:'s|\s+§|\s+\d|\s+section|-\d)|\bthe\s+spec\b"
                     r"|shared/specs|\b(?:DESIGN|ENVIRONMENT)\.md\b")


def _checked_files():
    return sorted(SRC.rglob("*.py"))


def test_the_wording_rule_finds_spec_references_and_not_variables():
    found = [bool(WORDING.search(t)) for t in (
        "(spec §6.3)", "the spec's grid", "Errata 2", "spec 7 defaults", "see shared/specs",
        "spec = block['model']", "for spec in specs", "spec.name", "module_from_spec(spec)")]
    assert found == [True] * 5 + [False] * 4


def test_the_core_and_every_wing_cite_papers_not_reading_aids():
    files = _checked_files()
    assert {SRC / "cli.py", PAPERS / "lapa" / "mechanism.py", PAPERS / "cdpb" / "design.py"} <= set(files)
    hits = []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if WORDING.search(line):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)
