# airfl: dataset -> partition -> design -> train -> privacy -> figure -> claims; analytic figures
# (formulas only) -> claims.
# A table of contents: load and validate the config, include one rules file per stage.
from snakemake.utils import min_version

min_version("9.0")


# airfl's strict reader first: a YAML error names its line, a repeated key stops.
include: "workflow/rules/params_file.smk"


configfile: "params.yaml"


include: "workflow/rules/common.smk"


# one rules file per stage, named for it, in the stage table's order (airfl.pipeline.stage_table)
for _stage in stage_table.STAGES:

    include: f"workflow/rules/{_stage.name}.smk"


include: "workflow/rules/targets.smk"
include: "workflow/rules/cost.smk"      # the cost bound, checked when a run starts


rule all:
    input:
        all_targets(),
    default_target: True
