def reference_inputs(wildcards):
    experiment = experiment_of(wildcards)
    return [str(paths.reference(experiment.reference.name, "json"))] if experiment.reference else []


rule reference:
    input:
        lambda w: str(paths.dataset_manifest(get_reference(w.name).dataset)),
    output:
        "results/reference/{name}.npz",
        "results/reference/{name}.json",
    params:
        declared=lambda w: dag.declared_values("reference", config, w.name),
        code=lambda w: code_version("reference", w.name),
    log:
        "logs/reference/{name}.log",
    shell:
        "{AIRFL} reference {wildcards.name} > {log} 2>&1"


def tuning_inputs(wildcards):
    from airfl.pipeline.tuning import tuning_file

    experiment = experiment_of(wildcards)
    source = tuning_file(experiment, experiment_block(wildcards), wildcards.curve)
    return [] if source is None else [str(source)]


rule tune:
    input:
        dataset_manifest,
        "results/partitions/{paper}/{figure}.npz",
        reference_inputs,
    output:
        "results/tuning/{paper}/{figure}/{curve}.json",
    params:
        setting=job_params("tune"),
        code=lambda w: code_version("tune", f"{w.paper}/{w.figure}", w.curve),
    priority: job_priority("tune")
    log:
        "logs/tune/{paper}/{figure}/{curve}.log",
    shell:
        "{AIRFL} tune {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"


def derived_inputs(wildcards):
    """The derivations (stage derive) whose parameters the curve trains with."""
    return dag.derived_inputs(experiment_of(wildcards), wildcards.curve,
                              experiment_block(wildcards)["curves"])


rule derive:
    input:
        lambda w: dag.derived_sources(experiment_of(w), w.name, experiment_block(w)["curves"]),
    output:
        "results/derived/{paper}/{figure}/{name}.json",
        "results/derived/{paper}/{figure}/{name}.csv",
        "results/derived/{paper}/{figure}/{name}.npz",
    params:
        setting=lambda w: dag.rule_params("derive", experiment_of(w), config, w.name,
                                          experiment_block(w)),
        code=lambda w: code_version("derive", f"{w.paper}/{w.figure}", w.name),
    threads: 1
    log:
        "logs/derive/{paper}/{figure}/{name}.log",
    shell:
        "{AIRFL} derive {wildcards.paper}/{wildcards.figure} {wildcards.name} > {log} 2>&1"


rule design:
    input:
        "results/partitions/{paper}/{figure}.npz",
        reference_inputs,
        tuning_inputs,
        derived_inputs,
    output:
        "results/designs/{paper}/{figure}/{curve}.json",
    params:
        setting=job_params("design"),
        code=lambda w: code_version("design", f"{w.paper}/{w.figure}", w.curve),
    log:
        "logs/design/{paper}/{figure}/{curve}.log",
    shell:
        "{AIRFL} design {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
