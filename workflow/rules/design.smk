rule design:
    input:
        "results/partitions/{paper}/{figure}.npz",
    output:
        "results/designs/{paper}/{figure}/{curve}.json",
    params:
        seed=config["seed"],
        curve=curve_params,
        setting=lambda w: {k: experiment_block(w)[k] for k in ("channel", "model", "scale")},
    log:
        "logs/design/{paper}/{figure}/{curve}.log",
    shell:
        "{AIRFL} design {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
