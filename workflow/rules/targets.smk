# Collect targets: one per paper (`snakemake --cores 8 biased_fl`: its figures, partitions and
# claims), `snakemake analytic` (every figure computed from formulas alone) and `snakemake
# --cores 2 audit` (every registered audit, without the training DAG). A rule per paper needs a
# loop to be named for it; it generates targets only, no job.
for _paper in papers():

    rule:
        name: _paper
        input:
            dag.paper_targets(_paper, config),


rule analytic:
    input:
        dag.analytic_targets(),


rule audit:
    input:
        [o for _job in dag.audit_jobs() for o in dag.audit_outputs(*_job.args)],
