"""Read params.yaml, validate it against a JSON schema, and give resolved views of it.

The schema itself is assembled from the core's and every installed wing's declarations by the
pipeline (`airfl.pipeline.params`); this module holds the machinery that does not depend on which
wings are installed. A wrong key, type or value stops before any stage runs, with a message
naming the key and what is allowed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

class ConfigError(ValueError):
    """params.yaml does not match the schema; the message names the key and what is allowed."""


def read_yaml(text: str) -> Any:
    """YAML 1.1 as `yaml.safe_load` reads it, with libyaml's parser where PyYAML has it (every
    job parses params.yaml and the schema: the pure-Python parser is ~8x slower)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


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


def validate_against(params: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Validate params (in place, filling defaults) and return them; raise ConfigError."""
    validator = _DefaultingValidator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for error in errors:
            error = _deepest(error)
            lines.append(f"  {_key_path(error)}: {error.message}.{_allowed_here(error)}")
        raise ConfigError("params.yaml is invalid:\n" + "\n".join(lines))
    return params


def read_params(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """Read and override (dotted keys, as `--config` / `dvc exp run -S`); not yet validated."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: parameter file not found")
    params = read_yaml(path.read_text()) or {}
    for dotted, value in (overrides or {}).items():
        set_dotted(params, dotted, value)
    return params


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


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value."""
    if isinstance(node, dict) and node:
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}
