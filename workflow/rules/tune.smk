rule tune:
    input:
        dataset_manifest,
        str(paths.partition(EXPERIMENT)),
        reference_inputs,
    output:
        outputs("tune", EXPERIMENT, "{curve}"),
    params:
        setting=job_params("tune"),
        code=lambda w: code_version("tune", f"{w.paper}/{w.figure}", w.curve),
    resources:
        gpu=GPU_JOB,
    priority: job_priority("tune")
    log:
        log_file("tune", EXPERIMENT, "{curve}"),
    shell:
        "{AIRFL} tune {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
