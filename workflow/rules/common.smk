# Config validation, and what the generated rules share.
import os
from pathlib import Path
import shlex
import sys

from snakemake.utils import update_config, validate

from airfl.params.config import ConfigError, typed_config_overrides
from airfl.pipeline import dag, paths, snakemake_rules
from airfl.pipeline.job_priority import JobPriorities
from airfl.pipeline.params import override_args, schema_file, validate_params
from airfl.pipeline.registry import papers

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


# The DAG of this run's config: the rules' inputs, params and code digests (airfl.pipeline.dag),
# each experiment's block composed once (config is fixed for one Snakemake process).
CONTEXT = dag.Context(config)


# the longest jobs start first (airfl.pipeline.job_priority: each job's planned seconds, the
# plan's model at this run's params and the measured unit costs; the blocks and code digests
# are the DAG's own)
JOB_PRIORITIES = JobPriorities(config, Path(workflow.basedir) / "workflow" / "unit_costs.json",
                               CONTEXT.block, CONTEXT.code_digest)


def job_priority(rule):
    """The longest jobs start first (airfl.pipeline.job_priority: the job's planned seconds)."""
    return lambda wildcards: JOB_PRIORITIES.priority(rule, dict(wildcards.items()))


def all_targets():
    """Every paper's figures, partitions and claims, and the collected figures/CLAIMS.md."""
    return [str(paths.claims_markdown())] + [t for p in papers()
                                             for t in dag.paper_targets(p, config)]
