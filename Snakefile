# airfl: dataset -> partition -> design -> train -> privacy -> figure -> claims; analytic figures
# (formulas only) -> claims.
# A table of contents: load and validate the config, include the rules generated from the
# stage table (airfl.pipeline.stage_table).
from snakemake.utils import min_version

min_version("9.0")


# airfl's strict reader first: a YAML error names its line, a repeated key stops.
include: "workflow/rules/params_file.smk"


configfile: "params.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/stages.smk"    # every rule, generated from the stage table
include: "workflow/rules/cost.smk"      # the cost bound, checked when a run starts


rule all:
    input:
        all_targets(),
    default_target: True
