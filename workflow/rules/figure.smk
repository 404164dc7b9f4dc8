# One figure rule per experiment (the one loop that generates jobs' rules): an experiment's runs
# can feed several panels, so its outputs are a list no wildcard pattern spells.
for _experiment in active_experiments(config):

    rule:
        name: f"figure_{_experiment.paper}_{_experiment.figure}"
        input:
            figure_inputs(_experiment),
        output:
            reported(outputs("figure", _experiment.id), "../report/figure.rst",
                     _experiment.paper),
        params:
            caption=figure_caption(_experiment),
            experiment=_experiment.id,
            # what the figure claims: a change reruns it even when no run is rebuilt, and the
            # figure stage refuses runs made with other parameters
            setting=dag.rule_params("figure", _experiment, config),
            code=code_version("figure", _experiment.id),
        log:
            log_file("figure", _experiment.id),
        shell:
            "{AIRFL} figure {params.experiment} > {log} 2>&1"
