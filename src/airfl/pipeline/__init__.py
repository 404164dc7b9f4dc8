"""The pipeline's own floor, above the wings: the registry that finds wings through entry points,
the DAG both tools run (Snakemake rules, generated dvc.yaml), where artifacts live, and the
stages the CLI dispatches to. Nothing below this package imports it (import-linter contracts in
pyproject.toml, checked in CI)."""
