rule data:
    output:
        "results/data/{dataset}.json",
    params:
        declared=lambda w: dag.declared_values("data", config, w.dataset),
        code=lambda w: code_version("data", w.dataset),
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
        setting=job_params("partition"),
        code=lambda w: code_version("partition", f"{w.paper}/{w.figure}"),
    log:
        "logs/partition/{paper}/{figure}.log",
    shell:
        "{AIRFL} partition {wildcards.paper}/{wildcards.figure} > {log} 2>&1"
