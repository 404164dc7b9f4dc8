"""Parameters: the typed declarations of params.yaml (declare), the core's part of them (core), and
reading and validating params.yaml against the assembled schema (config). Light (stdlib, yaml,
jsonschema): every job validates params.yaml."""
