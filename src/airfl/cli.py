"""`airfl <stage> ...`: the single entry point that both Snakemake and DVC call.

Every stage reads params.yaml (plus `--set key=value` overrides, values in YAML syntax, as
Snakemake's `--config` and `dvc exp run -S` give them), validates it against the schema, and
calls the stage's importable function.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

from airfl.pipeline import stage_table


# Stages that need neither torch nor the experiment registry: they skip importing them (~1.5 s
# of a job's start-up; the quick DAG runs one privacy job per private curve).
def light_stages() -> frozenset[str]:
    return frozenset({"validate", *(s.name for s in stage_table.STAGES if s.light)})


def _overrides(pairs: list[str]) -> dict:
    """`--set` values read as params.yaml is (strictly, aliases bounded: airfl.params.config.read_yaml)."""
    from airfl.params.config import read_yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {pair!r}")
        out[key] = read_yaml(value, f"--set {key}")       # a ConfigError stops main: exit 2
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("airfl")
    except PackageNotFoundError:                # a source tree on PYTHONPATH, not installed
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="airfl", description=__doc__.splitlines()[0],
        epilog="Snakemake and DVC call these stages; `airfl <stage> --help` describes one. "
               "`airfl list` names the experiments and curves.")
    parser.add_argument("--version", action="version", version=f"airfl {_version()}")
    parser.add_argument("--params", default="params.yaml", help="parameter file (default params.yaml)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a dotted key of params.yaml (repeatable)")
    parser.add_argument("--yes", action="store_true", help="start a train, tune, calibrate or "
                        "audit job whose estimate exceeds confirm_cost_above_core_hours")
    sub = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")

    def stage(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text)

    stage("validate", "validate params.yaml and print the resolved profile")
    for record in stage_table.STAGES:       # the pipeline's stages: the stage table
        sub_parser = stage(record.name, record.help)
        for arg in record.args:
            sub_parser.add_argument(arg.name, help=arg.help, **({"nargs": "?"} if arg.optional
                                                                else {}))
    gen = stage("dvc-yaml", "write dvc.yaml generated from the experiment registry")
    gen.add_argument("--check", action="store_true", help="fail if the committed dvc.yaml differs")
    gen.add_argument("--stamp", metavar="PATH", help="the `dvc-dag` stage: check as --check does, "
                     "name what differs in a few lines, and write PATH when nothing does")
    plan = stage("plan", "jobs, core-hours and GPU-hours of a run before it starts, per paper "
                 "and in total (unit costs: workflow/unit_costs.json)")
    plan.add_argument("target", nargs="?", help="all (default), a paper, or an output path")
    plan.add_argument("--profile", choices=("quick", "paper"), help="the profile to plan "
                      "(default: params.yaml's)")
    plan.add_argument("--units", default="workflow/unit_costs.json", help="unit-cost table")
    plan.add_argument("--json", action="store_true", help="print the per-paper table as JSON")
    stage("list", "list the installed wings, their experiments and curves")
    schema = stage("schema", "write workflow/schemas/params.schema.yaml, the schema assembled "
                   "from the installed wings, and docs/parameters.md, the parameter reference")
    schema.add_argument("--check", action="store_true", help="fail if the committed copy differs")
    _reference_parser(stage("reference-results", "publish a finished run's figures and claims "
                            "into reference/<paper>/<profile>/ (a manifest per figure), check "
                            "the manifests, rebuild a figure from its manifest"))
    return parser


def _reference_parser(parser: argparse.ArgumentParser) -> None:
    """`airfl reference-results`'s actions (airfl.pipeline.reference_results)."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    help="run, publish, check, plan-check, rebuild or docs")
    for name, text in (("run", "run Snakemake for a paper's figures (all, or --figure), time it "
                        "(wall, and CPU of every process it started), then publish them; "
                        "Snakemake's own arguments go after --"),
                       ("publish", "publish a paper's built figures (all, or --figure) and "
                        "claims; --set overrides the run used are recorded")):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("paper")
        action.add_argument("--profile", choices=("quick", "paper"), default="paper")
        action.add_argument("--figure", action="append", metavar="NAME",
                            help="a figure's name (its CSV's stem); repeatable")
        if name != "run":       # run: Snakemake's arguments after `--` (default --cores 2)
            action.add_argument("--command", help="the command that made the figures "
                                "(default: the Snakemake command that rebuilds each)")
            action.add_argument("--wall-s", type=float, help="the run's wall time, seconds")
            action.add_argument("--cpu-s", type=float, help="the run's CPU time, seconds")
            action.add_argument("--partial", metavar="REASON", help="why the run's times count "
                                "only part of its figures' jobs (a resumed run): recorded in "
                                "the manifests; plan-check leaves the run out")
    text = "check every manifest under reference/ against the current parameter declarations " \
        "and dry-run Snakemake for its figure; one line per problem, exit 1 on any"
    check = actions.add_parser("check", help=text, description=text)
    check.add_argument("--no-dry-run", action="store_true", help="skip `snakemake -n`")
    text = "plan each published run's targets (airfl plan's model) and compare the planned " \
        "core-seconds with the run's CPU time; one row per run, excluded runs with their reason"
    plan_check = actions.add_parser("plan-check", help=text, description=text)
    plan_check.add_argument("--strict", action="store_true", help="exit 1 when a compared run "
                            "is outside the factor")
    text = "run (or with --print-only print) the Snakemake command a figure's manifest recorded"
    rebuild = actions.add_parser("rebuild", help=text, description=text)
    rebuild.add_argument("paper")
    rebuild.add_argument("figure")
    rebuild.add_argument("--profile", choices=("quick", "paper"), default="paper")
    rebuild.add_argument("--print-only", action="store_true")
    text = "write the reference-results section of docs/papers/<paper>.md"
    docs = actions.add_parser("docs", help=text, description=text)
    docs.add_argument("paper")


def _allowed(what: str, name: str, allowed, where: str = "") -> str:
    return f"unknown {what} {name!r}{where}; allowed: {', '.join(sorted(allowed))}"


def check_names(args: argparse.Namespace, params: dict) -> str | None:
    """The one-line message naming an experiment, curve, analytic figure, paper, reference or
    dataset that is not there, with the allowed values; None when every name is known. Checked
    before a stage starts, so a typo writes nothing."""
    from airfl.pipeline import registry

    experiment_id = getattr(args, "experiment", None)
    if args.stage == "analytic":
        ids = [f.id for f in registry.all_analytic()]
        return None if experiment_id in ids else _allowed("analytic figure", experiment_id, ids)
    if experiment_id is not None:
        ids = {e.id: e for e in registry.active_experiments(params)}
        if experiment_id not in ids:
            if experiment_id in {e.id for e in registry.all_experiments()}:
                return (f"experiment {experiment_id!r} does not run in profile "
                        f"{params['profile']}; it runs: {', '.join(sorted(ids))}")
            return _allowed("experiment", experiment_id, ids)
        curve = getattr(args, "curve", None)
        curves = ids[experiment_id].curves(params)
        if curve is not None and curve not in curves:
            return _allowed("curve", curve, curves, f" of {experiment_id}")
        block = getattr(args, "block", None)       # stage trials: one of the curve's blocks
        if block is not None:
            from airfl.pipeline.trial_blocks import trial_blocks

            experiment = ids[experiment_id]
            blocks = trial_blocks(params, experiment, experiment.params(params)) or ()
            if block not in blocks:
                return (f"unknown trials block {block!r} of {experiment_id} {curve} "
                        f"(trials_per_job {params.get('trials_per_job')}); allowed: "
                        + (", ".join(blocks) or "none, every trial is in the curve's train job"))
    if args.stage == "claims" and args.paper is not None and args.paper not in registry.papers():
        return _allowed("paper", args.paper, registry.papers())
    if args.stage == "reference":
        names = {e.reference.name for e in registry.all_experiments() if e.reference is not None}
        if args.name not in names:
            return _allowed("reference", args.name, names)
    if args.stage == "data":
        from airfl.data.catalogue import canonical_name
        try:
            canonical_name(args.dataset)
        except ValueError as error:
            return str(error)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    passed_on: list[str] = []
    if "reference-results" in argv and "--" in argv:    # Snakemake's own arguments
        at = argv.index("--")
        argv, passed_on = argv[:at], argv[at + 1:]
    args = _parser().parse_args(argv)
    args.snakemake_args = passed_on
    if args.stage == "schema":                  # needs no valid params.yaml
        from airfl.pipeline.params import write_schema
        return write_schema(check=args.check)
    if args.stage == "reference-results":       # loads params.yaml per profile itself
        from airfl.params.config import ConfigError
        from airfl.pipeline.reference_results import main as reference_main
        try:
            overrides = _overrides(args.set)
        except ConfigError as error:
            print(f"airfl: {error}", file=sys.stderr)
            return 2
        if args.action == "plan-check":
            from airfl.pipeline.reference_plan import main as plan_check
            try:
                return plan_check(strict=args.strict)
            except ConfigError as error:
                print(f"airfl reference-results: {error}", file=sys.stderr)
                return 2
        return reference_main(args, overrides)
    from airfl.params.config import ConfigError
    from airfl.pipeline.params import load_params

    try:
        overrides = _overrides(args.set)
        if args.stage == "plan" and args.profile:
            overrides["profile"] = args.profile
        params = load_params(args.params, overrides)
    except ConfigError as error:
        print(f"airfl: {error}", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", str(params["threads"]))
    if args.stage not in light_stages():
        import torch

        torch.set_num_threads(params["threads"])

    if args.stage == "validate":
        print(f"params valid; profile {params['profile']}")
    elif args.stage == "dvc-yaml":
        from airfl.params.config import read_params
        from airfl.pipeline import dvcgen
        raw = read_params(args.params, _overrides(args.set))
        if args.stamp:
            return dvcgen.guard(params, raw, args.stamp)
        return dvcgen.main(params, check=args.check, raw=raw)
    elif args.stage == "plan":
        from airfl.pipeline import plan
        try:
            return plan.main(params, args.target, args.units, args.json)
        except ConfigError as error:
            print(f"airfl plan: {error}", file=sys.stderr)
            return 2
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
        from airfl.runtime.io import ArtifactError
        from airfl.pipeline import job_lock
        from airfl.pipeline.stage_error import OverBound
        from airfl.pipeline.stages import StageError

        if args.stage not in light_stages():
            unknown = check_names(args, params)
            if unknown:
                print(f"airfl {args.stage}: {unknown}", file=sys.stderr)
                return 2
        record = stage_table.stage(args.stage)
        positional = [getattr(args, a.name) for a in record.args
                      if getattr(args, a.name) is not None]
        guard: dict[str, object] = {}
        if not args.yes:                            # its estimate first (airfl plan's costs)
            from airfl.pipeline.cost_guard import BUILT_FIRST, job_over_bound
            if args.stage in BUILT_FIRST:           # costed by the job once its work is built
                guard["over_bound"] = functools.partial(job_over_bound, args.stage,
                                                        positional, params)
            elif costly := job_over_bound(args.stage, positional, params):
                print(costly, file=sys.stderr)
                return 2
        run = record.load()
        try:
            lock = job_lock.hold(args.stage, positional)      # held until the job returns
            with lock:
                started = time.monotonic()
                run(params, *positional, **guard)
                # the job's log says what ran, with which settings and for how long (a failure
                # is the one line below instead)
                print(f"airfl {' '.join([args.stage, *positional])}: done in "
                      f"{time.monotonic() - started:.1f} s (profile {params['profile']}, seed "
                      f"{params['seed']}, device {params['device']}, threads {params['threads']})",
                      file=sys.stderr)
        except OverBound as error:                  # a guard in the job, before any output
            print(error, file=sys.stderr)
            return 2
        except (StageError, ArtifactError, DatasetUnavailableError, job_lock.JobRunning,
                FileNotFoundError) as error:
            # a known failure (a stage's own, a corrupt or missing stored input, a dataset that
            # cannot be supplied): its message, no traceback
            if args.stage in light_stages() and isinstance(error, (ArtifactError,
                                                                 FileNotFoundError)):
                unknown = check_names(args, params)     # names unchecked so far (no registry)
                if unknown:
                    job_lock.discard(args.stage, positional)
                    print(f"airfl {args.stage}: {unknown}", file=sys.stderr)
                    return 2
            message = str(error)
            if isinstance(error, FileNotFoundError) and not isinstance(error, ArtifactError):
                message = (f"missing input {error.filename or error} (an earlier stage writes "
                           "it: run `snakemake` for this target, `snakemake -n` shows the jobs)")
            print(f"airfl {args.stage}: {message}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
