# Before the first job: a run whose estimate (airfl.pipeline.plan: the jobs this run starts,
# from measured unit costs) exceeds confirm_cost_above_core_hours prints the estimate and stops.
# Snakemake calls onstart only for a real run: dry runs (-n) never cost anything here.
from airfl.pipeline.cost_guard import snakemake_over_bound


onstart:
    if not workflow.touch:                # --touch records outputs, it starts no job
        _message = snakemake_over_bound(
            [(job.rule.name, dict(job.wildcards.items())) for job in workflow.dag.needrun_jobs()],
            config, Path(workflow.basedir) / "workflow" / "unit_costs.json")
        if _message:
            raise WorkflowError(_message)
