# Privacy audits: one job per mechanism a wing registers (`Wing(audits=...)`), as dvc.yaml's
# audit stages (dag.audit_jobs()).
rule audit_mechanism:
    output:
        reported(outputs("audit", "{paper}", "{mechanism}"), "../report/figure.rst", "{paper}"),
    params:  # the values behind the keys dvc.yaml lists for the stage
        declared=lambda w: dag.declared_values("audit", config, w.paper, w.mechanism),
        wing=lambda w: w.paper,
        mechanism=lambda w: w.mechanism,
        code=lambda w: code_version("audit", w.paper, w.mechanism),
    wildcard_constraints:
        paper=one_of(w.name for w in wings() if w.audits),
        mechanism=one_of(n for w in wings() for n in w.audits),
    log:
        log_file("audit", "{paper}", "{mechanism}"),
    shell:
        "{AIRFL} audit {params.wing} {params.mechanism} > {log} 2>&1"
