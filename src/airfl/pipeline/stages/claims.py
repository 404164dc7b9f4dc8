"""Stage `claims`: evaluate a paper's claims on its stored figure CSVs (figures/<paper>/CLAIMS.md,
its rows in full in results/claims/<paper>.rows.json and its DVC metrics in
results/claims/<paper>.json), or collect every paper's into figures/CLAIMS.md and
results/claims.json (the whole project's tally).

CLAIMS.md reads top down: the counts by verdict per paper, then every contradicted and
inconclusive claim with the one line that decides it, then every claim in full. The metrics are
compact (counts by verdict, each claim's verdict), so that `dvc metrics diff` shows the flips."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import pandas as pd

from airfl.core.experiments import (CONTRADICTED, INCONCLUSIVE, NOT_APPLICABLE, VERDICTS,
                                    ClaimResult)
from airfl.pipeline import paths
from airfl.pipeline.registry import all_analytic, all_experiments, get_wing, papers
from airfl.runtime.io import read_json, read_table, write_json, write_text
from airfl.pipeline.stage_params import declared


REACH = 10
"""How many times a profile's trials more trials count as within its reach: an inconclusive
claim whose observed differences would be decided by at most REACH x its trials can be decided
by raising that profile's trials (the interval shrinks as ~1/sqrt(trials), so REACH x the trials
narrows it ~3.2-fold); one that needs more is left to a larger scale (the paper profile)."""


def more_trials(result: ClaimResult) -> str:
    """What more trials would do for this claim, from its numbers (`ClaimResult.trials` and
    `trials_to_decide`, a power calculation with the observed differences and spreads): empty
    for a claim decided without trials (formulas, audits) or not applicable."""
    n, need = result.trials, result.trials_to_decide
    if result.verdict != INCONCLUSIVE:
        return f"decided at {n} trials" if n is not None and result.verdict != NOT_APPLICABLE \
            else ""
    if n is not None and n < 2:
        return "one trial: no spread to size more trials by (2 or more would)"
    if n is None or need is None:
        return "not sized (not a comparison over trials)"
    if math.isinf(need):
        return "no number of trials: the observed difference sits on the boundary"
    if need <= REACH * n:
        return f"~{int(need)} trials decide it (now {n}): within this scale"
    return f"needs ~{int(need)} trials (now {n}, over {REACH}x): a larger scale"


def row(figure: str, claim: str, statement: str, result: ClaimResult) -> dict[str, Any]:
    """One claim's record: what CLAIMS.md prints and the rows file stores, with the trials its
    comparisons had and, for an inconclusive one, the trials that would decide it (null: not
    sized, or none would; `more_trials` says which)."""
    need = result.trials_to_decide
    return {"figure": figure, "claim": claim, "statement": statement, "numbers": result.numbers,
            "verdict": result.verdict, "reason": result.why, "trials": result.trials,
            "trials_to_decide": None if need is None or math.isinf(need) else int(need),
            "more_trials": more_trials(result)}


def evaluate_paper(paper: str, params: dict[str, Any] | None = None,
                   published: Collection[str] | None = None) -> list[dict[str, Any]]:
    """The paper's claims on the figures the params run (`Experiment.enabled`): a claim over
    several panels reads those of its panels that exist in this profile. `published`: only the
    claims whose panels (those of this profile) are all among these figure names, and the
    analytic and audit figures among them (a reference published figure by figure)."""
    from airfl.pipeline.artifacts import figure_names

    have = (lambda stems: True) if published is None else \
        (lambda stems: set(stems) <= set(published))

    results = []
    inactive = {name for e in all_experiments() if e.paper == paper
                and params is not None and not e.is_enabled(params) for name in figure_names(e)}
    for experiment in all_experiments():        # this paper's only: a stage reads its own
        if experiment.paper != paper or (params is not None and not experiment.is_enabled(params)):
            continue
        for claim in experiment.claims:
            stems = claim.panel if isinstance(claim.panel, tuple) else \
                (claim.panel or experiment.figure,)
            stems = tuple(s for s in stems if s not in inactive)
            if not stems or not have(stems):    # every panel it reads is off, or not given
                continue
            frames = [read_table(paths.figure(f"{experiment.paper}/{stem}", "csv"))
                      .assign(figure=stem) for stem in stems]
            figure = f"{experiment.paper}/{'+'.join(stems)}"
            result = claim.evaluate(pd.concat(frames, ignore_index=True))
            results.append(row(figure, claim.name, claim.statement, result))
    for figure in all_analytic():
        if figure.paper != paper or figure.check is None or not have([figure.figure]):
            continue
        from airfl.pipeline.artifacts import load_frame

        for claim_id, statement, numbers, holds in figure.check(load_frame(figure)):
            # a formula's claim is deterministic: holds or contradicted (None: reported, n/a)
            results.append(row(figure.id, claim_id, statement,
                               ClaimResult(None if holds is None else bool(holds), numbers)))
    audits = [r for r in audit_claims([paper]) if have([r["figure"].split("/", 1)[1]])] \
        if published is None or any(f.startswith("audit_") for f in published) else []
    return results + audits


def audit_claims(wing_names) -> list[dict[str, Any]]:
    """The privacy-audit claims of these wings (`audit_claim_rows`)."""
    return [row for name in wing_names if get_wing(name).audits for row in audit_claim_rows(name)]


def _number(value: Any) -> str:
    value = float(value)
    return "inf" if math.isinf(value) else f"{value:.3g}"


def audit_claim_rows(wing: str) -> list[dict[str, Any]]:
    """The claims of a wing's audits: "audited lower bound <= claimed epsilon" per point, with
    the tightness (lower bound / claimed) in the numbers. Read from the stored audit JSONs.

    The statement names the accounting the claimed epsilon comes from (the point's
    ``claimed_accountant``), so a contradicted row says which accounting is exceeded; the
    numbers say whether the epsilon of the mechanism as simulated (its exact accounting) holds
    too: a bound above the claim but below it is the claim's accounting that does not describe
    what the code runs, one above both is a leak of the code."""
    rows = []
    for name in sorted(get_wing(wing).audits):
        for p in read_json(paths.audit(wing, name))["points"]:
            simulated = "holds" if p["holds_simulated"] else "exceeded"
            numbers = (f"claimed {_number(p['eps_claimed'])}, as simulated "
                       f"{_number(p['eps_simulated'])} ({simulated}), audited >= "
                       f"{_number(p['eps_audited_lower'])} (point "
                       f"{_number(p['eps_audited_point'])}, upper "
                       f"{_number(p['eps_audited_upper'])}), tightness {_number(p['tightness'])}")
            rows.append({"figure": f"{wing}/audit_{name}", "claim": f"audit_{p['mechanism']}",
                         "statement": f"privacy audit (delta {p['delta']:g}, Clopper-Pearson "
                         f"{1 - p['alpha']:.0%}): audited lower bound <= claimed epsilon of "
                         f"{p['claimed_accountant']}; contradicted: that accounting is exceeded",
                         "numbers": numbers,
                         "verdict": "holds" if p["holds"] else "contradicted", "reason": numbers})
    return rows


def paper_of(record: dict[str, Any]) -> str:
    """The paper (or wing) a claim row belongs to: its figure id's first part."""
    return str(record["figure"]).split("/", 1)[0]


def counts(results: list[dict[str, Any]]) -> dict[str, int]:
    """How many claims have each verdict, and the total."""
    verdicts = [r["verdict"] for r in results]
    return {**{v: verdicts.count(v) for v in VERDICTS}, "total": len(verdicts)}


def by_paper(results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """`counts` per paper, in the order the rows come."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(paper_of(r), []).append(r)
    return {p: counts(rows) for p, rows in groups.items()}


EXPLANATION = (
    "A claim that does not hold is a finding, reported with our numbers; nothing is tuned to "
    "make it hold. A comparison is tested across trials, paired by trial (common random "
    "numbers), against the equivalence margin declared with the claim (the difference the paper "
    "would call the same; printed beside each interval): **holds** when the 95 % paired t "
    "interval of the difference excludes 0 on the claimed side, **contradicted** when it "
    "excludes 0 on the other, **equivalent** when it lies inside ± the margin (two one-sided "
    "tests) or the difference is below the numerical resolution of float32 results (2^-11.5 of "
    "the larger compared value; airfl.core.resolution.RELATIVE_RESOLUTION), **inconclusive** when none of "
    "these: the trials cannot decide (the row says the smallest difference they could have "
    "detected, at 80 % power, and where the paper gives its own gap, how many trials would "
    "detect it). One trial never decides a random quantity. A claim that A beats B which comes "
    "out equivalent does not hold. Analytic claims (formulas, no randomness) are holds or "
    "contradicted; **n/a**: the claim does not apply to this run. Beside each inconclusive "
    "claim, a power calculation from its own numbers (the observed differences and spreads "
    "taken as true, 80 % power, the interval shrinking as ~1/sqrt(trials)) says how many trials "
    f"would decide it: within this scale when at most {REACH}x its trials, otherwise a larger "
    "scale.")

SHOWN = {CONTRADICTED: "**contradicted**", INCONCLUSIVE: "*inconclusive*"}


def reach_summary(results: list[dict[str, Any]]) -> str:
    """One line: how many inconclusive claims this scale's trials could decide (`more_trials`)."""
    texts = [str(r.get("more_trials", "")) for r in results if r["verdict"] == INCONCLUSIVE]
    within = sum("within this scale" in t for t in texts)
    larger = sum("a larger scale" in t for t in texts)
    return (f"Of {len(texts)} inconclusive claims, {within} would be decided within this scale "
            f"(at most {REACH}x its trials), {larger} need a larger scale, "
            f"{len(texts) - within - larger} cannot be sized by trials (one trial, no number of "
            "trials, or not a comparison over trials).")


def markdown(results: list[dict[str, Any]], params: dict[str, Any]) -> str:
    cell = lambda text: str(text).replace("|", "\\|")    # noqa: E731  (a literal | in a cell)
    lines = ["# Claims checked on the stored figure data", "",
             f"Profile `{params['profile']}`, seed {params['seed']}. {EXPLANATION}", "",
             "## Verdicts by paper", "",
             "| paper | " + " | ".join(VERDICTS) + " | total |",
             "|---|" + "---:|" * (len(VERDICTS) + 1)]
    tallies = by_paper(results)
    for paper, tally in tallies.items():
        lines.append(f"| {paper} | " + " | ".join(str(tally[v]) for v in VERDICTS)
                     + f" | {tally['total']} |")
    if len(tallies) > 1:
        total = counts(results)
        lines.append("| **all** | " + " | ".join(str(total[v]) for v in VERDICTS)
                     + f" | {total['total']} |")
    open_rows = [r for r in results if r["verdict"] in (CONTRADICTED, INCONCLUSIVE)]
    lines += ["", "## Contradicted and inconclusive", ""]
    if open_rows:
        lines += [reach_summary(results), "",
                  "| figure | claim | verdict | what decides it | more trials |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['figure']} | {r['claim']} | {SHOWN[r['verdict']]} | "
                  f"{cell(r['reason'])} | {cell(r.get('more_trials', ''))} |"
                  for r in open_rows]
    else:
        lines.append("None.")
    lines += ["", "## Every claim", "",
              "| figure | claim | paper's statement | our numbers | verdict |",
              "|---|---|---|---|---|"]
    lines += [f"| {r['figure']} | {r['claim']} | {cell(r['statement'])} | {cell(r['numbers'])} | "
              f"{SHOWN.get(r['verdict'], r['verdict'])} |" for r in results]
    return "\n".join(lines) + "\n"


def metrics(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The DVC metrics file, compact: the counts by verdict (all, and per paper) and each
    claim's verdict per figure, so that `dvc metrics diff` shows which claims flipped and how
    the counts moved. The numbers and statements stay in the rows file and CLAIMS.md."""
    verdicts: dict[str, dict[str, str]] = {}
    for r in results:
        verdicts.setdefault(r["figure"], {})[r["claim"]] = r["verdict"]
    return {"counts": counts(results), "papers": by_paper(results), "verdicts": verdicts}


@declared("claims")
def run(params: dict[str, Any], paper: str | None = None) -> None:
    if paper is None:                 # every paper's, in the registry's order
        from airfl.pipeline.registry import wings

        results = [r for p in papers() for r in read_json(paths.claims_rows(p))["claims"]] \
            + audit_claims([w.name for w in wings() if not w.catalogue])   # e.g. generic schemes
    else:
        results = evaluate_paper(paper, params)
        write_json(paths.claims_rows(paper), {"claims": results})
    write_text(paths.claims_markdown(paper), markdown(results, params))
    write_json(paths.claims_metrics(paper), metrics(results))
