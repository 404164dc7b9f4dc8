rule design:
    input:
        str(paths.partition(EXPERIMENT)),
        reference_inputs,
        tuning_inputs,
        derived_inputs,
    output:
        outputs("design", EXPERIMENT, "{curve}"),
    params:
        setting=job_params("design"),
        code=lambda w: code_version("design", f"{w.paper}/{w.figure}", w.curve),
    log:
        log_file("design", EXPERIMENT, "{curve}"),
    shell:
        "{AIRFL} design {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
