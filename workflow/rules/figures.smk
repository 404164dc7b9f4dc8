def figure_inputs(wildcards):
    experiment = experiment_of(wildcards)
    curves = list(experiment.curves(config))
    return (
        [str(paths.run_table(experiment.id, c)) for c in curves]
        + [str(paths.privacy(experiment.id, c)) for c in curves]
        + reference_inputs(wildcards)
    )


rule figure:
    input:
        figure_inputs,
    output:
        "figures/{paper}/{figure}.csv",
        report(
            "figures/{paper}/{figure}.png",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="{figure}",
        ),
        "figures/{paper}/{figure}.pdf",
        "results/summaries/{paper}/{figure}.json",
    params:
        caption=figure_caption,
        profile=config["profile"],
    log:
        "logs/figure/{paper}/{figure}.log",
    shell:
        "{AIRFL} figure {wildcards.paper}/{wildcards.figure} > {log} 2>&1"


rule claims:
    input:
        [str(paths.figure(e.id, "csv")) for e in all_experiments()],
    output:
        report("figures/CLAIMS.md", caption="../report/claims.rst", category="claims"),
        "results/claims.json",
    params:
        profile=config["profile"],
    log:
        "logs/claims.log",
    shell:
        "{AIRFL} claims > {log} 2>&1"
