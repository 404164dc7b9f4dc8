rule derive:
    input:
        lambda w: dag.derived_sources(experiment_of(w), w.name, experiment_block(w)["curves"]),
    output:
        outputs("derive", EXPERIMENT, "{name}"),
    params:
        setting=lambda w: dag.rule_params("derive", experiment_of(w), config, w.name,
                                          experiment_block(w)),
        code=lambda w: code_version("derive", f"{w.paper}/{w.figure}", w.name),
    threads: 1
    log:
        log_file("derive", EXPERIMENT, "{name}"),
    shell:
        "{AIRFL} derive {wildcards.paper}/{wildcards.figure} {wildcards.name} > {log} 2>&1"
