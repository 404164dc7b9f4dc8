# airfl: dataset -> partition -> design -> train -> privacy -> figure -> claims; analytic figures
# (formulas only) -> claims.
# A table of contents: load and validate the config, include one rules file per stage family.
from snakemake.utils import min_version

min_version("9.0")


# airfl's strict reader first: a YAML error names its line, a repeated key stops.
include: "workflow/rules/params_file.smk"


configfile: "params.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/design.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/cost.smk"


rule all:
    input:
        all_targets(),
    default_target: True
