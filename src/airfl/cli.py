"""`airfl <stage> ...`: the single entry point that both Snakemake and DVC call.

Every stage reads params.yaml (plus `--set key=value` overrides, values in YAML syntax, as
Snakemake's `--config` and `dvc exp run -S` give them), validates it against the schema, and
calls the stage's importable function.
"""

from __future__ import annotations

import argparse
import os
import sys


# Stages that need neither torch nor the experiment registry: they skip importing them (~1.5 s
# of a job's start-up; the quick DAG runs one privacy job per private curve).
LIGHT_STAGES = frozenset({"validate", "privacy"})


def _overrides(pairs: list[str]) -> dict:
    """`--set` values read as params.yaml is (strictly, aliases bounded: airfl.config.read_yaml)."""
    from airfl.config import read_yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {pair!r}")
        out[key] = read_yaml(value, f"--set {key}")       # a ConfigError stops main: exit 2
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="airfl", description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="params.yaml", help="parameter file (default params.yaml)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a dotted key of params.yaml (repeatable)")
    sub = parser.add_subparsers(dest="stage", required=True)
    sub.add_parser("validate", help="validate params.yaml and print the resolved profile")
    sub.add_parser("data", help="fetch and md5-check a dataset").add_argument("dataset")
    sub.add_parser("partition", help="partition an experiment's data").add_argument("experiment")
    sub.add_parser("reference", help="a paper's reference optimum and constants").add_argument("name")
    sub.add_parser("calibrate", help="an experiment's calibration at theta_0").add_argument(
        "experiment")
    derive = sub.add_parser("derive", help="a step between trainings: parameters of some curves "
                            "from other curves' stored runs (e.g. LAPA's DDPG power control)")
    derive.add_argument("experiment")
    derive.add_argument("derivation")
    for stage in ("tune", "design", "train", "privacy"):
        p = sub.add_parser(stage, help=f"{stage} stage of one curve of an experiment")
        p.add_argument("experiment")
        p.add_argument("curve")
    audit = sub.add_parser("audit", help="audit a registered DP mechanism (results/audit/)")
    audit.add_argument("paper", help="the wing that registers it (e.g. cdpb, generic)")
    audit.add_argument("mechanism")
    sub.add_parser("figure", help="draw an experiment's figure").add_argument("experiment")
    sub.add_parser("analytic", help="compute and draw an analytic figure").add_argument("experiment")
    sub.add_parser("claims", help="evaluate one paper's claims (figures/<paper>/CLAIMS.md), or "
                   "with no paper collect every paper's into figures/CLAIMS.md").add_argument(
        "paper", nargs="?")
    gen = sub.add_parser("dvc-yaml", help="write dvc.yaml generated from the experiment registry")
    gen.add_argument("--check", action="store_true", help="fail if the committed dvc.yaml differs")
    gen.add_argument("--stamp", metavar="PATH", help="the `dvc-dag` stage: check as --check does, "
                     "name what differs in a few lines, and write PATH when nothing does")
    sub.add_parser("list", help="list the installed wings, their experiments and curves")
    schema = sub.add_parser("schema", help="write workflow/schemas/params.schema.yaml, the "
                                           "schema assembled from the installed wings")
    schema.add_argument("--check", action="store_true", help="fail if the committed copy differs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.stage == "schema":                  # needs no valid params.yaml
        from airfl.pipeline.params import write_schema
        return write_schema(check=args.check)
    from airfl.config import ConfigError
    from airfl.pipeline.params import load_params

    try:
        params = load_params(args.params, _overrides(args.set))
    except ConfigError as error:
        print(f"airfl: {error}", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", str(params["threads"]))
    import importlib

    if args.stage not in LIGHT_STAGES:
        import torch

        torch.set_num_threads(params["threads"])

    if args.stage == "validate":
        print(f"params valid; profile {params['profile']}")
    elif args.stage == "dvc-yaml":
        from airfl.config import read_params
        from airfl.pipeline import dvcgen
        raw = read_params(args.params, _overrides(args.set))
        if args.stamp:
            return dvcgen.guard(params, raw, args.stamp)
        return dvcgen.main(params, check=args.check, raw=raw)
    elif args.stage == "list":
        from airfl.pipeline.registry import wings
        for wing in wings():
            print(f"wing {wing.name} ({wing.package}): {len(wing.schemes)} schemes")
            for experiment in wing.experiments():
                print(" ", experiment.id, " ".join(experiment.curves(params)))
            for figure in wing.analytic():
                print(" ", figure.id, "(analytic)")
    else:
        from airfl.data.catalogue import DatasetUnavailableError
        from airfl.io import ArtifactError
        from airfl.pipeline import job_lock
        from airfl.pipeline.stages import StageError

        stage = importlib.import_module(f"airfl.pipeline.stages.{args.stage}")
        positional = [getattr(args, k) for k in ("dataset", "name", "experiment", "curve",
                                                 "derivation", "paper", "mechanism")
                      if getattr(args, k, None) is not None]
        try:
            lock = job_lock.hold(args.stage, positional)      # held until the job returns
            with lock:
                stage.run(params, *positional)
        except (StageError, ArtifactError, DatasetUnavailableError, job_lock.JobRunning) as error:
            # a known failure (a stage's own, a corrupt stored input, a dataset that cannot be
            # supplied): its message, no traceback
            print(f"airfl {args.stage}: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
