rule train:
    input:
        dataset_manifest,
        str(paths.partition(EXPERIMENT)),
        str(paths.design(EXPERIMENT, "{curve}")),
        reference_inputs,
        tuning_inputs,
        calibration_inputs,
        derived_inputs,
        trial_block_inputs,    # split (trials_per_job): the blocks it merges, else none
    output:
        outputs("train", EXPERIMENT, "{curve}"),
    params:
        setting=job_params("train"),     # device and threads too: rerun triggers
        code=lambda w: code_version("train", f"{w.paper}/{w.figure}", w.curve),
    threads: 1
    resources:
        gpu=lambda w: 0 if trial_block_inputs(w) else GPU_JOB,   # merging its blocks: no GPU
    priority: job_priority("train")
    log:
        log_file("train", EXPERIMENT, "{curve}"),
    shell:
        "{AIRFL} train {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
