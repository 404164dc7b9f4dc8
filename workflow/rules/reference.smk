rule reference:
    input:
        lambda w: str(paths.dataset_manifest(get_reference(w.name).dataset)),
    output:
        outputs("reference", "{name}"),
    params:
        declared=lambda w: dag.declared_values("reference", config, w.name),
        code=lambda w: code_version("reference", w.name),
    log:
        log_file("reference", "{name}"),
    shell:
        "{AIRFL} reference {wildcards.name} > {log} 2>&1"
