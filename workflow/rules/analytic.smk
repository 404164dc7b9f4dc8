# One job per analytic figure (formulas only, no training): the params block is a rule param,
# so a change to it reruns the figure.
rule analytic_figure:
    output:
        reported(outputs("analytic", "{paper}/{name}"), "../report/figure.rst", "{paper}",
                 "{name}"),
    params:
        declared=lambda w: dag.declared_values("analytic", config, f"{w.paper}/{w.name}"),
        figure=lambda w: f"{w.paper}/{w.name}",
        caption=lambda w: analytic_figure_caption(get_analytic(f"{w.paper}/{w.name}")),
        code=lambda w: code_version("analytic", f"{w.paper}/{w.name}"),
    wildcard_constraints:
        name=named_in_paper(f.id for f in all_analytic()),
    log:
        log_file("analytic", "{paper}/{name}"),
    shell:
        "{AIRFL} analytic {params.figure} > {log} 2>&1"
