# One figure rule per experiment: an experiment's runs can feed several panels.
def figure_inputs(experiment):
    curves = list(experiment.curves(config))
    inputs = [str(paths.run_table(experiment.id, c)) for c in curves]
    if experiment.privacy:
        inputs += [str(paths.privacy(experiment.id, c)) for c in curves]
    if experiment.reference:
        inputs.append(str(paths.reference(experiment.reference.name, "json")))
    return inputs


def figure_targets(experiment):
    """Every panel's files; the PNGs go into the report (category paper, subcategory panel)."""
    return [as_report_item(o, experiment.paper) if o.endswith(".png") else o
            for o in dag.figure_outputs(experiment)]


def as_report_item(path, paper):
    return report(path, caption="../report/figure.rst", category=paper, subcategory=Path(path).stem)


for _experiment in active_experiments(config):

    rule:
        name: f"figure_{_experiment.paper}_{_experiment.figure}"
        input:
            figure_inputs(_experiment),
        output:
            figure_targets(_experiment),
        params:
            caption=figure_caption(_experiment),
            experiment=_experiment.id,
            # what the figure claims: a change reruns it even when no run is rebuilt, and the
            # figure stage refuses runs made with other parameters
            setting=dag.rule_params("figure", _experiment, config),
            code=code_version("figure", _experiment.id),
        log:
            f"logs/figure/{_experiment.id}.log",
        shell:
            "{AIRFL} figure {params.experiment} > {log} 2>&1"


# One rule per analytic figure (formulas only, no training): the params block is a rule param,
# so a change to it reruns the figure.
for _figure in all_analytic():

    rule:
        name: f"analytic_{_figure.paper}_{_figure.figure}"
        output:
            [as_report_item(o, _figure.paper) if o.endswith(".png") else o
             for o in dag.analytic_outputs(_figure)],
        params:
            declared=dag.declared_values("analytic", config, _figure.id),
            figure=_figure.id,
            caption=analytic_figure_caption(_figure),
            code=code_version("analytic", _figure.id),
        log:
            f"logs/analytic/{_figure.id}.log",
        shell:
            "{AIRFL} analytic {params.figure} > {log} 2>&1"


for _paper in papers():

    rule:
        name: f"claims_{_paper}"
        input:
            dag.claim_inputs(_paper, config),
        output:
            report(str(paths.claims_markdown(_paper)), caption="../report/claims.rst",
                   category="claims", subcategory=_paper),
            str(paths.claims_metrics(_paper)),
            str(paths.claims_rows(_paper)),
        params:
            declared=dag.declared_values("claims", config, _paper),
            paper=_paper,
            code=code_version("claims", _paper),
        log:
            f"logs/claims/{_paper}.log",
        shell:
            "{AIRFL} claims {params.paper} > {log} 2>&1"


rule claims:
    input:
        [str(paths.claims_rows(p)) for p in papers()] + dag.audit_json(
            {w.name for w in wings() if not w.catalogue}),
    output:
        report(str(paths.claims_markdown()), caption="../report/claims.rst", category="claims"),
        str(paths.claims_metrics()),
    params:
        declared=dag.declared_values("claims", config),
        code=code_version("claims"),
    log:
        "logs/claims.log",
    shell:
        "{AIRFL} claims > {log} 2>&1"


# One target per paper (`snakemake --cores 8 biased_fl`): its figures, partitions and claims;
# `snakemake analytic`: every figure computed from formulas alone.
for _paper in papers():

    rule:
        name: _paper
        input:
            dag.paper_targets(_paper, config),


rule analytic:
    input:
        dag.analytic_targets(),
