"""Where `airfl reference-results` keeps a paper's published figures: reference/<paper>/<profile>/
(read by the publishing and checking code, `reference_results`, and by the page section,
`reference_pages`). Not in `paths`: no stage reads or writes it, so it is no stage's code."""

from __future__ import annotations

from pathlib import Path

ROOT = Path("reference")
PROFILES = ("quick", "paper")


def folder(paper: str, profile: str) -> Path:
    return ROOT / paper / profile
