rule calibrate:
    input:
        dataset_manifest,
        str(paths.partition(EXPERIMENT)),
    output:
        outputs("calibrate", EXPERIMENT),
    params:
        setting=job_params("calibrate"),   # seed, profile, threads (sums' last digits), block
        code=lambda w: code_version("calibrate", f"{w.paper}/{w.figure}"),
    threads: 1
    resources:
        gpu=GPU_JOB,
    log:
        log_file("calibrate", EXPERIMENT),
    shell:
        "{AIRFL} calibrate {wildcards.paper}/{wildcards.figure} > {log} 2>&1"
