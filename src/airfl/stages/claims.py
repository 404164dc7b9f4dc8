"""Stage `claims`: evaluate every experiment's claims on its figure CSV; write figures/CLAIMS.md."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl import paths
from airfl.experiments import all_analytic, all_experiments
from airfl.io import write_json, write_text


def evaluate_all(params: dict[str, Any]) -> list[dict[str, Any]]:
    results = []
    for experiment in all_experiments():
        for claim in experiment.claims:
            figure = f"{experiment.paper}/{claim.panel or experiment.figure}"
            result = claim.evaluate(pd.read_csv(paths.figure(figure, "csv")))
            results.append({"figure": figure, "claim": claim.name,
                            "statement": claim.statement, "numbers": result.numbers,
                            "holds": bool(result.holds)})
    for figure in all_analytic():
        if figure.check is None:
            continue
        from airfl.stages.analytic import load_frame

        for claim_id, statement, numbers, holds in figure.check(load_frame(figure)):
            results.append({"figure": figure.id, "claim": claim_id, "statement": statement,
                            "numbers": numbers, "holds": bool(holds)})
    return results


def markdown(results: list[dict[str, Any]], params: dict[str, Any]) -> str:
    lines = ["# Claims checked on the stored figure data", "",
             f"Profile `{params['profile']}`, seed {params['seed']}. A claim that does not hold is a "
             "finding, reported with our numbers; nothing is tuned to make it hold.", "",
             "| figure | claim | paper's statement | our numbers | holds |",
             "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['figure']} | {r['claim']} | {r['statement']} | {r['numbers']} | "
                     f"{'yes' if r['holds'] else '**no**'} |")
    held = sum(r["holds"] for r in results)
    lines += ["", f"{held} of {len(results)} claims hold.", ""]
    return "\n".join(lines)


def run(params: dict[str, Any]) -> None:
    results = evaluate_all(params)
    write_text(paths.claims_markdown(), markdown(results, params))
    write_json(paths.claims_metrics(), {"claims": results,
                                        "held": sum(r["holds"] for r in results),
                                        "total": len(results)})
