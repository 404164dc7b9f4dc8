rule train:
    input:
        dataset_manifest,
        "results/partitions/{paper}/{figure}.npz",
        "results/designs/{paper}/{figure}/{curve}.json",
        reference_inputs,
        tuning_inputs,
    output:
        "results/runs/{paper}/{figure}/{curve}.csv",
        "results/runs/{paper}/{figure}/{curve}.records.json",
        "results/runs/{paper}/{figure}/{curve}.json",
    params:
        seed=config["seed"],
        device=config["device"],
        curve=curve_params,
        setting=lambda w: {k: v for k, v in experiment_block(w).items() if k != "curves"},
    threads: 1
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
        curve=curve_params,
    log:
        "logs/privacy/{paper}/{figure}/{curve}.log",
    shell:
        "{AIRFL} privacy {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
