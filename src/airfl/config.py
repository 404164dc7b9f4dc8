"""Load and validate params.yaml against the one JSON schema, and give resolved views of it.

The schema (params.schema.yaml, beside this module) is the single source of truth: the CLI
validates with it here and the Snakefile calls Snakemake's `validate` on the same file. A wrong
key, type or value stops before any stage runs, with a message naming the key and what is
allowed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

SCHEMA_PATH = Path(__file__).with_name("params.schema.yaml")


class ConfigError(ValueError):
    """params.yaml does not match the schema; the message names the key and what is allowed."""


def read_yaml(text: str) -> Any:
    """YAML 1.1 as `yaml.safe_load` reads it, with libyaml's parser where PyYAML has it (every
    job parses params.yaml and the schema: the pure-Python parser is ~8x slower)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_schema() -> dict[str, Any]:
    return read_yaml(SCHEMA_PATH.read_text())


def _with_defaults(validator_class):
    """A validator that also fills in `default` values (as Snakemake's validate does)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})


_DefaultingValidator = _with_defaults(Draft202012Validator)


def _key_path(error) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def _allowed_here(error) -> str:
    """A hint listing what the schema allows at the failing location."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties" and "properties" in schema:
        return " Allowed keys: " + ", ".join(sorted(schema["properties"])) + "."
    if error.validator == "enum":
        return " Allowed values: " + ", ".join(map(str, schema["enum"])) + "."
    if error.validator == "required":
        return ""
    if "description" in schema:
        return f" ({schema['description']})"
    return ""


def _deepest(error):
    """For allOf/if-then and anyOf failures, report the most specific underlying error."""
    while error.context:
        error = max(error.context, key=lambda e: len(list(e.absolute_path)))
    return error


def validate_params(params: dict[str, Any]) -> dict[str, Any]:
    """Validate params (in place, filling defaults) and return them; raise ConfigError."""
    validator = _DefaultingValidator(load_schema())
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for error in errors:
            error = _deepest(error)
            lines.append(f"  {_key_path(error)}: {error.message}.{_allowed_here(error)}")
        raise ConfigError("params.yaml is invalid:\n" + "\n".join(lines))
    return params


def load_params(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """Read, override (dotted keys, as `--config` / `dvc exp run -S`), validate."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: parameter file not found")
    params = read_yaml(path.read_text()) or {}
    for dotted, value in (overrides or {}).items():
        set_dotted(params, dotted, value)
    return validate_params(params)


def set_dotted(params: dict[str, Any], dotted: str, value: Any) -> None:
    node = params
    keys = dotted.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def get_dotted(params: dict[str, Any], dotted: str) -> Any:
    node = params
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            raise ConfigError(f"params.yaml has no key {dotted!r} (missing {key!r})")
        node = node[key]
    return node


def profiled(value: Any, profile: str) -> Any:
    """A `{quick: ..., paper: ...}` value resolved for the profile; other values as they are
    (wings whose figures share one block with per-profile entries)."""
    if isinstance(value, dict) and set(value) == {"quick", "paper"}:
        return value[profile]
    return value


def experiment_params(params: dict[str, Any], config_key: str) -> dict[str, Any]:
    """One experiment's block with `scale` resolved for the active profile."""
    block = copy.deepcopy(get_dotted(params, config_key))
    block["scale"] = block["scale"][params["profile"]]
    return block


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict) and node:
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def override_args(path: str | Path, effective: dict[str, Any]) -> str:
    """`--set key=value` arguments for the keys where `effective` differs from the file.

    Snakemake's `--config key=value` changes its in-memory config only; jobs call the CLI, which
    reads params.yaml, so the Snakefile passes the differences on explicitly.
    """
    import json
    import shlex

    on_file = _flatten(load_params(path))
    wanted = _flatten(validate_params(copy.deepcopy(effective)))
    changed = sorted(k for k in wanted if on_file.get(k, object()) != wanted[k])
    return " ".join(f"--set {shlex.quote(f'{k}={json.dumps(wanted[k])}')}" for k in changed)
