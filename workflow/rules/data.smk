rule data:
    output:
        outputs("data", "{dataset}"),
    params:
        declared=lambda w: dag.declared_values("data", config, w.dataset),
        code=lambda w: code_version("data", w.dataset),
    log:
        log_file("data", "{dataset}"),
    shell:
        "{AIRFL} data {wildcards.dataset} > {log} 2>&1"
