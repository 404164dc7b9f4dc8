# One paper's claims (figures/<paper>/CLAIMS.md), then every paper's collected.
rule paper_claims:
    input:
        lambda w: dag.claim_inputs(w.paper, config),
    output:
        [report(f, caption="../report/claims.rst", category="claims", subcategory="{paper}")
         if f.endswith(".md") else f for f in outputs("claims", "{paper}")],
    params:
        declared=lambda w: dag.declared_values("claims", config, w.paper),
        paper=lambda w: w.paper,
        code=lambda w: code_version("claims", w.paper),
    wildcard_constraints:
        paper=one_of(papers()),
    log:
        log_file("claims", "{paper}"),
    shell:
        "{AIRFL} claims {params.paper} > {log} 2>&1"


rule claims:
    input:
        [str(paths.claims_rows(p)) for p in papers()] + dag.audit_json(
            {w.name for w in wings() if not w.catalogue}),
    output:
        [report(f, caption="../report/claims.rst", category="claims")
         if f.endswith(".md") else f for f in outputs("claims")],
    params:
        declared=dag.declared_values("claims", config),
        code=code_version("claims"),
    log:
        log_file("claims"),
    shell:
        "{AIRFL} claims > {log} 2>&1"
