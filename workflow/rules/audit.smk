# Privacy audits: one rule per mechanism a wing registers (`Wing(audits=...)`); the
# jobs, their outputs and params come from dag.audit_jobs(), as dvc.yaml's audit stages do.
for _job in dag.audit_jobs():

    rule:
        name: _job.name.replace("-", "_")
        output:
            [as_report_item(o, _job.args[0]) if o.endswith(".png") else o
             for o in dag.audit_outputs(*_job.args)[1:]],
            str(paths.audit(*_job.args)),
        params:  # the values behind the keys dvc.yaml lists for the stage
            declared=dag.declared_values("audit", config, *_job.args),
            wing=_job.args[0],
            mechanism=_job.args[1],
            code=code_version("audit", *_job.args),
        log:
            f"logs/audit/{_job.args[0]}/{_job.args[1]}.log",
        shell:
            "{AIRFL} audit {params.wing} {params.mechanism} > {log} 2>&1"


# `snakemake --cores 2 audit`: every registered audit, without the training DAG.
rule audit:
    input:
        [o for _job in dag.audit_jobs() for o in dag.audit_outputs(*_job.args)],
