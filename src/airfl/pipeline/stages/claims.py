"""Stage `claims`: evaluate a paper's claims on its stored figure CSVs (figures/<paper>/CLAIMS.md,
results/claims/<paper>.json), or collect every paper's into figures/CLAIMS.md and
results/claims.json (the whole project's tally)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.pipeline import paths
from airfl.pipeline.registry import active_experiments, all_analytic, all_experiments, papers
from airfl.io import read_json, read_table, write_json, write_text


def evaluate_paper(paper: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The paper's claims on the figures the params run (`Experiment.enabled`): a claim over
    several panels reads those of its panels that exist in this profile."""
    from airfl.pipeline.artifacts import figure_names

    results = []
    inactive = {name for e in all_experiments() if e.paper == paper
                and params is not None and not e.is_enabled(params) for name in figure_names(e)}
    for experiment in active_experiments(params):
        if experiment.paper != paper:
            continue
        for claim in experiment.claims:
            stems = claim.panel if isinstance(claim.panel, tuple) else \
                (claim.panel or experiment.figure,)
            stems = tuple(s for s in stems if s not in inactive)
            if not stems:                   # every panel it reads is off in this profile
                continue
            frames = [read_table(paths.figure(f"{experiment.paper}/{stem}", "csv"))
                      .assign(figure=stem) for stem in stems]
            figure = f"{experiment.paper}/{'+'.join(stems)}"
            result = claim.evaluate(pd.concat(frames, ignore_index=True))
            results.append({"figure": figure, "claim": claim.name,
                            "statement": claim.statement, "numbers": result.numbers,
                            "holds": None if result.holds is None else bool(result.holds),
                            "verdict": result.verdict})
    for figure in all_analytic():
        if figure.paper != paper or figure.check is None:
            continue
        from airfl.pipeline.artifacts import load_frame

        for claim_id, statement, numbers, holds in figure.check(load_frame(figure)):
            results.append({"figure": figure.id, "claim": claim_id, "statement": statement,
                            "numbers": numbers,       # holds None: reported, not a claim
                            "holds": None if holds is None else bool(holds),
                            "verdict": "n/a" if holds is None else "yes" if holds else "no"})
    return results + audit_claims([paper])


def audit_claims(wing_names) -> list[dict[str, Any]]:
    """The privacy-audit claims of these wings (issue 16; stages.audit.claim_rows)."""
    from airfl.pipeline.registry import get_wing
    from airfl.pipeline.stages.audit import claim_rows

    return [row for name in wing_names if get_wing(name).audits for row in claim_rows(name)]


def markdown(results: list[dict[str, Any]], params: dict[str, Any]) -> str:
    lines = ["# Claims checked on the stored figure data", "",
             f"Profile `{params['profile']}`, seed {params['seed']}. A claim that does not hold is a "
             "finding, reported with our numbers; nothing is tuned to make it hold. An ordering "
             "claim is tested across trials, paired by trial (common random numbers): yes or no "
             "when the 95 % paired t interval of the difference excludes 0, tie when it holds "
             "0 or when the difference is below the numerical resolution of float32 results "
             "(2^-11.5 of the larger compared value; airfl.claims.RELATIVE_RESOLUTION).", "",
             "| figure | claim | paper's statement | our numbers | holds |",
             "|---|---|---|---|---|"]
    cell = lambda text: str(text).replace("|", "\\|")    # noqa: E731  (a literal | in a cell)
    for r in results:
        lines.append(f"| {r['figure']} | {r['claim']} | {cell(r['statement'])} | "
                     f"{cell(r['numbers'])} | {_shown(r['verdict'])} |")
    tally = _tally(results)
    lines += ["", f"{tally['held']} of {tally['checked']} claims hold"
              + "".join(f", {tally[k]} {k}" for k in ("ties", "n/a") if tally[k]) + ".", ""]
    return "\n".join(lines)


def _shown(verdict: str) -> str:
    return "**no**" if verdict == "no" else verdict


def _tally(results: list[dict[str, Any]]) -> dict[str, int]:
    """Claims that hold, claims checked (yes or no), ties (an ordering inside the spread over
    trials) and n/a (does not apply, e.g. the authors' paper-scale numbers on a quick run)."""
    verdicts = [r["verdict"] for r in results]
    return {"held": verdicts.count("yes"), "checked": verdicts.count("yes") + verdicts.count("no"),
            "ties": verdicts.count("tie"), "n/a": verdicts.count("n/a")}


# A verdict as a number, so that `dvc metrics diff` shows which claims flipped (issue 13, item 6);
# n/a (the claim does not apply to this run) has none and is left out.
SCORES = {"yes": 1.0, "tie": 0.5, "no": 0.0}


def metrics(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The DVC metrics file: every claim with its numbers, the tally (held, checked, ties, no,
    total) and each claim's verdict as a score per figure, 1 holds / 0.5 tie / 0 does not."""
    tally = _tally(results)
    scores: dict[str, dict[str, float]] = {}
    for r in results:
        if r["verdict"] in SCORES:
            scores.setdefault(r["figure"], {})[r["claim"]] = SCORES[r["verdict"]]
    return {"claims": results, "held": tally["held"], "checked": tally["checked"],
            "ties": tally["ties"], "no": tally["checked"] - tally["held"],
            "total": len(results), "verdicts": scores}


def run(params: dict[str, Any], paper: str | None = None) -> None:
    if paper is None:                 # every paper's, in the registry's order
        from airfl.pipeline.registry import wings

        results = [r for p in papers() for r in read_json(paths.claims_metrics(p))["claims"]] \
            + audit_claims([w.name for w in wings() if not w.catalogue])   # e.g. generic schemes
    else:
        results = evaluate_paper(paper, params)
    write_text(paths.claims_markdown(paper), markdown(results, params))
    write_json(paths.claims_metrics(paper), metrics(results))
