def calibration_inputs(wildcards):
    """The experiment's calibration (stage calibrate), when it has one."""
    experiment = experiment_of(wildcards)
    return [str(paths.calibration(experiment.id))] if experiment.calibration else []


rule calibrate:
    input:
        dataset_manifest,
        "results/partitions/{paper}/{figure}.npz",
    output:
        "results/calibration/{paper}/{figure}.json",
    params:
        setting=job_params("calibrate"),   # seed, profile, threads (sums' last digits), block
        code=lambda w: code_version("calibrate", f"{w.paper}/{w.figure}"),
    threads: 1
    log:
        "logs/calibrate/{paper}/{figure}.log",
    shell:
        "{AIRFL} calibrate {wildcards.paper}/{wildcards.figure} > {log} 2>&1"


rule train:
    input:
        dataset_manifest,
        "results/partitions/{paper}/{figure}.npz",
        "results/designs/{paper}/{figure}/{curve}.json",
        reference_inputs,
        tuning_inputs,
        calibration_inputs,
        derived_inputs,
    output:
        "results/runs/{paper}/{figure}/{curve}.csv",
        "results/runs/{paper}/{figure}/{curve}.records.json",
        "results/runs/{paper}/{figure}/{curve}.json",
    params:
        setting=job_params("train"),     # device and threads too: rerun triggers
        code=lambda w: code_version("train", f"{w.paper}/{w.figure}", w.curve),
    threads: 1
    priority: job_priority("train")
    log:
        "logs/train/{paper}/{figure}/{curve}.log",
    shell:
        "{AIRFL} train {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"


rule privacy:
    input:
        "results/runs/{paper}/{figure}/{curve}.records.json",
    output:
        "results/privacy/{paper}/{figure}/{curve}.csv",
    params:
        setting=job_params("privacy"),   # privacy.delta; the records carry the rest
        code=lambda w: code_version("privacy", f"{w.paper}/{w.figure}", w.curve),
    log:
        "logs/privacy/{paper}/{figure}/{curve}.log",
    shell:
        "{AIRFL} privacy {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
