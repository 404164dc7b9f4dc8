# Config validation, the experiment registry, and input functions shared by the rules.
import os
from pathlib import Path
import re
import shlex
import sys

from snakemake.utils import update_config, validate

from airfl.config import ConfigError, typed_config_overrides
from airfl.pipeline import dag, paths, stage_table
from airfl.pipeline.job_priority import load_job_seconds, priority
from airfl.pipeline.params import override_args, schema_file, validate_params
from airfl.pipeline.registry import (active_experiments, all_analytic, get_analytic,
                                     get_experiment, get_reference, papers, wings)

os.environ.setdefault("OMP_NUM_THREADS", "1")      # one thread per job (faster on few cores)
os.environ.setdefault("MKL_NUM_THREADS", "1")

# nested --config values arrive as strings; type them as params.yaml would
update_config(config, typed_config_overrides(dict(workflow.config_settings.config)))
try:
    validate_params(config)                        # clear message naming the key, before any job
except ConfigError as error:
    raise WorkflowError(str(error))
validate(config, str(schema_file()))  # Snakemake's own check: the schema of the installed wings

# Jobs run `python -m airfl` with the interpreter that runs Snakemake (no PATH assumptions);
# every rule's shell starts with {AIRFL}. `snakemake --lint` warns that the shell reads a
# variable from outside the rule and would have it a param; it stays out of the params and the
# shell text on purpose, so that where the checkout or the interpreter lies, or a fork server,
# never reruns a job (the --config values it carries reach each job's params as its declared
# values). The lint's other warning, a conda environment or container per rule: every job runs
# in the one installed environment (requirements.lock), the interpreter running Snakemake;
# --config overrides reach every job as --set arguments. With AIRFL_FORKSERVER=<socket> in the
# environment, each job is forked from a server that has imported torch and the registry once
# (airfl.forkserver; .ci/run starts it): the same `airfl` command, without its ~2 s start-up.
_FORKSERVER = os.environ.get("AIRFL_FORKSERVER")
AIRFL = (f"{shlex.quote(sys.executable)} -m airfl.forkserver {shlex.quote(_FORKSERVER)} "
         if _FORKSERVER else f"{shlex.quote(sys.executable)} -m airfl ") + \
    override_args("params.yaml", config)


wildcard_constraints:
    paper="[a-z_]+",
    figure="[a-z0-9_]+",
    curve="[a-z][a-z0-9_]*",
    dataset="[a-z0-9_]+",
    name="[a-z0-9_]+",


# the longest jobs start first (airfl.pipeline.job_priority: seconds measured in a run's log)
JOB_SECONDS = load_job_seconds(Path(workflow.basedir) / "workflow" / "job_seconds.json")


# Paths come from the stage table (`stage_table.Stage.outputs`, built from pipeline/paths.py)
# with the wildcards for arguments: an experiment's id is "{paper}/{figure}".
EXPERIMENT = "{paper}/{figure}"


def outputs(stage, *args):
    return stage_table.stage(stage).files(*args)


def log_file(stage, *args):
    return str(paths.log(stage, *args))


def reported(files, caption, category, subcategory=None):
    """`files` with each PNG a report item (subcategory: its name, unless given)."""
    return [report(f, caption=caption, category=category,
                   subcategory=subcategory or Path(f).stem) if f.endswith(".png") else f
            for f in files]


def job_priority(rule):
    return lambda wildcards: priority(JOB_SECONDS, rule, dict(wildcards.items()))


def experiment_of(wildcards):
    return get_experiment(f"{wildcards.paper}/{wildcards.figure}")


_BLOCKS = {}      # experiment id -> resolved block; config is fixed for one Snakemake process


def experiment_block(wildcards):
    """The experiment's resolved block, composed once per run (read-only: shared by its jobs)."""
    experiment = experiment_of(wildcards)
    if experiment.id not in _BLOCKS:
        _BLOCKS[experiment.id] = experiment.params(config)
    return _BLOCKS[experiment.id]


def job_params(stage):
    """A rule's params for `stage`: its top-level knobs and its view of the block, the values
    behind the keys dvc.yaml lists, so a one-knob change reruns the same jobs."""
    return lambda w: dag.rule_params(stage, experiment_of(w), config,
                                     getattr(w, "curve", None), experiment_block(w))


def dataset_manifest(wildcards):
    return str(paths.dataset_manifest(experiment_block(wildcards)["dataset"]))


def reference_inputs(wildcards):
    experiment = experiment_of(wildcards)
    return [str(paths.reference(experiment.reference.name, "json"))] if experiment.reference else []


def tuning_inputs(wildcards):
    from airfl.pipeline.tuning import tuning_file

    experiment = experiment_of(wildcards)
    source = tuning_file(experiment, experiment_block(wildcards), wildcards.curve)
    return [] if source is None else [str(source)]


def calibration_inputs(wildcards):
    """The experiment's calibration (stage calibrate), when it has one."""
    experiment = experiment_of(wildcards)
    return [str(paths.calibration(experiment.id))] if experiment.calibration else []


def trial_block_inputs(wildcards):
    """A split curve's blocks of trials (stage trials), which its train job merges."""
    return dag.trial_block_inputs(experiment_of(wildcards), config, wildcards.curve,
                                  experiment_block(wildcards))


# Jobs that train on the GPU (params device: cuda) hold one `gpu` each: a GPU host runs one at a
# time with `--resources gpu=1`, and the SLURM executor asks for a GPU for them
# (profiles/slurm: the partition is chosen by the job's resources).
GPU_JOB = 1 if config.get("device") == "cuda" else 0


def derived_inputs(wildcards):
    """The derivations (stage derive) whose parameters the curve trains with."""
    return dag.derived_inputs(experiment_of(wildcards), wildcards.curve,
                              experiment_block(wildcards)["curves"])


def figure_inputs(experiment):
    curves = list(experiment.curves(config))
    inputs = [str(paths.run_table(experiment.id, c)) for c in curves]
    if experiment.privacy:
        inputs += [str(paths.privacy(experiment.id, c)) for c in curves]
    if experiment.reference:
        inputs.append(str(paths.reference(experiment.reference.name, "json")))
    return inputs


def one_of(names):
    """A wildcard constraint: exactly these names."""
    return "|".join(re.escape(n) for n in sorted(names))


def named_in_paper(ids):
    """A constraint on {name} in ".../<paper>/{name}..." paths: the name of each id
    "<paper>/<name>", only inside its own paper's folder (a lookbehind), so that another paper's
    file of that name is no match."""
    return "|".join(f"(?<=/{re.escape(p)}/){re.escape(n)}"
                    for p, n in sorted(i.split("/", 1) for i in ids))


_CODE = {}        # (stage, args) -> code digest; config and code are fixed for one process


def code_version(stage, *args):
    """A digest of the source files the job `airfl <stage> <args>` runs, the same files dvc.yaml
    lists as its code deps: a code edit reruns the same jobs in both tools.
    Memoised: Snakemake evaluates a job's params more than once."""
    if (stage, args) not in _CODE:
        _CODE[(stage, args)] = dag.code_digest(stage, list(args), config)
    return _CODE[(stage, args)]


def figure_caption(experiment):
    from airfl.pipeline.artifacts import caption, rst_text

    return rst_text(caption(config, experiment))       # literal text in the report's RST


def analytic_figure_caption(figure):
    from airfl.pipeline.artifacts import analytic_caption, rst_text

    return rst_text(analytic_caption(config, figure))


def all_targets():
    """Every paper's figures, partitions and claims, and the collected figures/CLAIMS.md."""
    return [str(paths.claims_markdown())] + [t for p in papers()
                                             for t in dag.paper_targets(p, config)]
