rule data:
    output:
        "results/data/{dataset}.json",
    params:
        data=lambda w: config["data"],
    log:
        "logs/data/{dataset}.log",
    shell:
        "{AIRFL} data {wildcards.dataset} > {log} 2>&1"


rule partition:
    input:
        dataset_manifest,
    output:
        "results/partitions/{paper}/{figure}.npz",
        "results/partitions/{paper}/{figure}.json",
        report(
            "figures/partitions/{paper}/{figure}.png",
            caption="../report/partition.rst",
            category="{paper}",
            subcategory="{figure}",
        ),
    params:
        seed=config["seed"],
        spec=lambda w: {k: experiment_block(w)[k] for k in ("dataset", "num_devices", "partition")},
    log:
        "logs/partition/{paper}/{figure}.log",
    shell:
        "{AIRFL} partition {wildcards.paper}/{wildcards.figure} > {log} 2>&1"
