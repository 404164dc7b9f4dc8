# Every rule, generated from the stage table (airfl.pipeline.stage_table) by the one loop below:
# a rule per stage with its wildcards (a rule per job where a stage's outputs vary in number),
# then the collect targets (`snakemake <paper>`, `analytic`, `audit`); airfl.pipeline.
# snakemake_rules builds the list. A rule is defined inside a function so that its shell
# command binds this rule's own (a job's command is looked up when it runs, long after the loop).
# `snakemake --lint` warns of mixed rules and functions in one snakefile, and would have the
# functions in a common module: this one function is where the rules are written, so it stays.


def define(_rule):
    if _rule.shell is None:               # a collect target: its inputs, no job of its own
        rule:
            name: _rule.name
            input: _rule.input
        return
    rule:
        name: _rule.name
        input: _rule.input
        output: [report(f, **_rule.report[f]) if f in _rule.report else f for f in _rule.output]
        params: **_rule.params
        wildcard_constraints: **_rule.constraints
        priority: job_priority(_rule.name)
        resources: **_rule.resources
        log: _rule.log
        shell: _rule.shell


for _rule in snakemake_rules.rules(CONTEXT):
    define(_rule)
