rule partition:
    input:
        dataset_manifest,
    output:
        reported(outputs("partition", EXPERIMENT), "../report/partition.rst", "{paper}",
                 "{figure}"),
    params:
        setting=job_params("partition"),
        code=lambda w: code_version("partition", f"{w.paper}/{w.figure}"),
    log:
        log_file("partition", EXPERIMENT),
    shell:
        "{AIRFL} partition {wildcards.paper}/{wildcards.figure} > {log} 2>&1"
