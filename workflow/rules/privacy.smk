rule privacy:
    input:
        str(paths.run_records(EXPERIMENT, "{curve}")),
    output:
        outputs("privacy", EXPERIMENT, "{curve}"),
    params:
        setting=job_params("privacy"),   # privacy.delta; the records carry the rest
        code=lambda w: code_version("privacy", f"{w.paper}/{w.figure}", w.curve),
    log:
        log_file("privacy", EXPERIMENT, "{curve}"),
    shell:
        "{AIRFL} privacy {wildcards.paper}/{wildcards.figure} {wildcards.curve} > {log} 2>&1"
