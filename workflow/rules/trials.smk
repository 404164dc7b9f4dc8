# A split curve's block of trials (params.yaml trials_per_job; pipeline.trial_blocks): the
# curve's train job merges the blocks into its run table.
rule trials:
    input:
        dataset_manifest,
        str(paths.partition(EXPERIMENT)),
        str(paths.design(EXPERIMENT, "{curve}")),
        reference_inputs,
        tuning_inputs,
        calibration_inputs,
        derived_inputs,
    output:
        outputs("trials", EXPERIMENT, "{curve}", "{block}"),
    params:
        setting=job_params("trials"),    # the train job's, and the curve's blocks
        code=lambda w: code_version("trials", f"{w.paper}/{w.figure}", w.curve, w.block),
    wildcard_constraints:
        block="[0-9]+-[0-9]+",
    threads: 1
    resources:
        gpu=GPU_JOB,
    priority: job_priority("trials")
    log:
        log_file("trials", EXPERIMENT, "{curve}", "{block}"),
    shell:
        "{AIRFL} trials {wildcards.paper}/{wildcards.figure} {wildcards.curve} {wildcards.block} "
        "> {log} 2>&1"
