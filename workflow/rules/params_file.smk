# Read params.yaml (and any --configfile) with airfl's strict YAML reader before Snakemake's
# `configfile:` does: Snakemake's loader reports a syntax error without its line and keeps the
# last of two repeated keys silently.
from airfl.params.config import ConfigError, read_params_file

for _path in ["params.yaml", *map(str, workflow.config_settings.configfiles)]:
    try:
        read_params_file(_path)
    except ConfigError as error:
        raise WorkflowError(str(error))
