"""Where every artifact lives; the Snakefile, dvc.yaml and the stages all take paths from here."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path("results")
FIGURES = Path("figures")


def dataset_manifest(dataset: str) -> Path:
    return RESULTS / "data" / f"{dataset}.json"


def partition(experiment_id: str) -> Path:
    return RESULTS / "partitions" / f"{experiment_id}.npz"


def partition_summary(experiment_id: str) -> Path:
    return RESULTS / "partitions" / f"{experiment_id}.json"


def partition_heatmap(experiment_id: str) -> Path:
    return FIGURES / "partitions" / f"{experiment_id}.png"


def dvc_stamp() -> Path:
    """Written by the `dvc-dag` stage when dvc.yaml is the DAG params.yaml describes; every
    DVC stage depends on it, so that the check runs first."""
    return RESULTS / "dvc_dag.txt"


def dvc_jobs() -> Path:
    """The `dvc-dag` stage's manifests: one JSON a DVC stage, the values of the params.yaml keys
    it reads and the digests of the code files it runs (its only params and code dependency)."""
    return RESULTS / "dvc"


def dvc_job(name: str) -> Path:
    return dvc_jobs() / f"{name}.json"


def calibration(experiment_id: str) -> Path:
    """An experiment's calibration (parameters measured at theta_0 that every curve trains with)."""
    return RESULTS / "calibration" / f"{experiment_id}.json"


def derived(experiment_id: str, name: str, suffix: str = "json") -> Path:
    """A derivation's output (stage `derive`): json (parameters, report), csv (its table) or npz
    (its arrays)."""
    return RESULTS / "derived" / experiment_id / f"{name}.{suffix}"


def reference(name: str, suffix: str) -> Path:
    return RESULTS / "reference" / f"{name}.{suffix}"


def tuning(experiment_id: str, curve: str) -> Path:
    return RESULTS / "tuning" / experiment_id / f"{curve}.json"


def design(experiment_id: str, curve: str) -> Path:
    return RESULTS / "designs" / experiment_id / f"{curve}.json"


def run_table(experiment_id: str, curve: str) -> Path:
    return RESULTS / "runs" / experiment_id / f"{curve}.csv"


def run_records(experiment_id: str, curve: str) -> Path:
    return RESULTS / "runs" / experiment_id / f"{curve}.records.json"


def run_info(experiment_id: str, curve: str) -> Path:
    return RESULTS / "runs" / experiment_id / f"{curve}.json"


def trial_block(experiment_id: str, curve: str, block: str, suffix: str) -> Path:
    """One job's block `first-last` of a split curve's trials (stage `trials`; pipeline.
    trial_blocks): its table (npz: every column's exact values and type, which the merge
    concatenates), its records (records.json) and what made it (json)."""
    return RESULTS / "trials" / experiment_id / curve / f"{block}.{suffix}"


def privacy(experiment_id: str, curve: str) -> Path:
    return RESULTS / "privacy" / experiment_id / f"{curve}.csv"


def figure(experiment_id: str, suffix: str) -> Path:
    return FIGURES / f"{experiment_id}.{suffix}"


def analytic(figure_id: str) -> Path:
    """An analytic figure's frame attributes (the resolved parameters) and provenance."""
    return RESULTS / "analytic" / f"{figure_id}.json"


def summary(experiment_id: str) -> Path:
    return RESULTS / "summaries" / f"{experiment_id}.json"


def claims_markdown(paper: str | None = None) -> Path:
    """A paper's claims (figures/<paper>/CLAIMS.md), or every paper's (figures/CLAIMS.md)."""
    return FIGURES / "CLAIMS.md" if paper is None else FIGURES / paper / "CLAIMS.md"


def claims_metrics(paper: str | None = None) -> Path:
    """The claims' DVC metrics, compact: counts by verdict and each claim's verdict (a paper's,
    or every paper's)."""
    return RESULTS / "claims.json" if paper is None else RESULTS / "claims" / f"{paper}.json"


def claims_rows(paper: str) -> Path:
    """A paper's claims in full (statement, numbers, reason, verdict): what the collected
    figures/CLAIMS.md is written from (no metric: its strings stay out of `dvc metrics`)."""
    return RESULTS / "claims" / f"{paper}.rows.json"


def audit(paper: str, mechanism: str) -> Path:
    """One audited mechanism's results: every audited point, bounds and epsilons."""
    return RESULTS / "audit" / paper / f"{mechanism}.json"


def audit_figure(paper: str, mechanism: str, suffix: str) -> Path:
    """Its figure (claimed, simulated and audited epsilons) and the CSV that is drawn."""
    return FIGURES / paper / f"audit_{mechanism}.{suffix}"


LOGS = Path("logs")


def log(stage: str, *args: str) -> Path:
    """The log of the job `airfl <stage> <args>` (logs/<stage>/<args>.log; logs/<stage>.log for
    a job without arguments)."""
    return LOGS / stage / f"{'/'.join(args)}.log" if args else LOGS / f"{stage}.log"
