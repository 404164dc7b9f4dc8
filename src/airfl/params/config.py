"""Read params.yaml, validate it against a JSON schema, and give resolved views of it.

The schema itself is assembled from the core's and every installed wing's declarations by the
pipeline (`airfl.pipeline.params`); this module holds the machinery that does not depend on which
wings are installed. A wrong key, type or value stops before any stage runs, with a message
naming the key and what is allowed.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

from airfl.params.declare import resolve


class ConfigError(ValueError):
    """params.yaml does not match the schema; the message names the key and what is allowed."""


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """`yaml.safe_load`'s reading with libyaml's parser where PyYAML has it (every job parses
    params.yaml and the schema: the pure-Python parser is ~8x slower), except that a mapping
    with a repeated key is an error (PyYAML keeps the last silently)."""


def _mapping_without_duplicates(loader, node):
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":     # `<<:` merges may repeat keys
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {seen[key] + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark.line
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_without_duplicates)


# How many nodes YAML aliases may add to a document beyond the nodes written in it. An alias
# re-uses its anchor's whole subtree, so ten short lines of aliases of aliases can stand for
# 10^9 nodes (a "billion laughs"), which every later walk of the tree (the NaN check, schema
# validation, Snakemake's config handling) pays for. params.yaml uses no aliases at all.
MAX_ALIAS_NODES = 10_000


def _check_alias_expansion(root: yaml.Node, source: str) -> None:
    """Stop when aliases expand the composed document past MAX_ALIAS_NODES extra nodes (or
    make it contain itself); the size of each distinct node is computed once, so this check
    is linear in the text however large the expansion."""
    sizes: dict[int, int] = {}
    written: set[int] = set()
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in open_:
            raise ConfigError(f"{source}, line {node.start_mark.line + 1}: a YAML alias refers "
                              "to a node that contains it (a recursive alias)")
        written.add(key)
        open_.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    extra = sizes[id(root)] - len(written)
    if extra > MAX_ALIAS_NODES:
        raise ConfigError(f"{source}: YAML aliases expand the document by more than "
                          f"{MAX_ALIAS_NODES:,} nodes ({extra:,}); write the values out instead "
                          "of aliasing aliases")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def read_yaml(text: str, source: str = "<yaml>") -> Any:
    """Parse YAML strictly (duplicate keys rejected, aliases bounded: MAX_ALIAS_NODES); a syntax
    error becomes a ConfigError naming `source`, line and column in one line instead of a
    parser traceback."""
    try:
        loader = _StrictLoader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                return None
            _check_alias_expansion(root, source)
            return loader.construct_document(root)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}, line {mark.line + 1}, column {mark.column + 1}" if mark else source
        what = "; ".join(str(p) for p in (error.context, error.problem) if p)
        raise ConfigError(f"{where}: {what}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: {error}") from None


def read_params_file(path: str | Path) -> dict[str, Any]:
    """params.yaml as a mapping, read strictly (read_yaml); the Snakefile calls this before its
    `configfile:` so that Snakemake's loader, which gives no line, never sees a broken file."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: parameter file not found")
    params = read_yaml(path.read_text(), str(path))
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys, got "
                          f"{type(params).__name__}")
    return params


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


def _strict_integers(validator_class):
    """A validator whose `integer` is an integer written as one: JSON Schema counts any number
    with no fractional part (1.0e+9) as an integer, which then reaches `range()` as a float."""
    checker = validator_class.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    return validators.extend(validator_class, type_checker=checker)


_DefaultingValidator = _with_defaults(_strict_integers(Draft202012Validator))


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
        # deepest first; at equal depth a violated bound or a missing key says more than "not
        # of type" (e.g. a `{quick: ...}` value without `paper` against `ByProfile(of=Int())`)
        error = max(error.context, key=lambda e: (len(list(e.absolute_path)),
                                                  e.validator != "type"))
    return error


def _non_finite(node: Any, path: tuple = ()) -> list[tuple[tuple, float]]:
    """(key path, value) of every NaN or infinite float in a loaded params tree."""
    if isinstance(node, float) and not math.isfinite(node):
        return [(path, node)]
    if isinstance(node, dict):
        return [hit for key, value in node.items() for hit in _non_finite(value, (*path, key))]
    if isinstance(node, list):
        return [hit for i, value in enumerate(node) for hit in _non_finite(value, (*path, i))]
    return []


def _resolve(schema: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """A subschema with its $ref targets and combinator branches: all that apply to one value."""
    if not isinstance(schema, dict):
        return []
    out = [schema]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        out += _resolve(target, root)
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key, []):
            out += _resolve(branch, root)
    for key in ("then", "else"):
        out += _resolve(schema.get(key), root)
    return out


def _child_schemas(schemas: list[dict[str, Any]], key: Any, root: dict[str, Any]
                   ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for schema in schemas:
        if isinstance(key, int):
            items = schema.get("items")
            out += _resolve(items, root)
        elif key in schema.get("properties", {}):
            out += _resolve(schema["properties"][key], root)
        else:
            out += _resolve(schema.get("additionalProperties"), root)
    return out


def _infinity_allowed(schema: dict[str, Any], path: tuple) -> bool:
    """Whether the schema marks the value at `path` `allowInfinity: true` (a quantity whose
    unbounded value the paper uses, e.g. DP as a perk's model domain D = inf)."""
    schemas = _resolve(schema, schema)
    for key in path:
        schemas = _child_schemas(schemas, key, schema)
        if any(s.get("allowInfinity") for s in schemas):
            return True
    return False


def _non_finite_errors(params: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """NaN is never a parameter, nor is infinity outside `allowInfinity` keys: the schema's
    `type: number` and its bounds let both through."""
    lines = []
    for path, value in _non_finite(params):
        if math.isnan(value) or not _infinity_allowed(schema, path):
            key = ".".join(map(str, path)) or "<top level>"
            lines.append(f"  {key}: {value} is not a finite number (NaN and infinity are "
                         "rejected).")
    return lines


def validate_against(params: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Validate params (in place, filling defaults) and return them; raise ConfigError."""
    validator = _DefaultingValidator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    lines = []
    for error in errors:
        error = _deepest(error)
        lines.append(f"  {_key_path(error)}: {error.message}.{_allowed_here(error)}")
    lines += _non_finite_errors(params, schema)
    if lines:
        raise ConfigError("params.yaml is invalid:\n" + "\n".join(sorted(lines)))
    return params


def read_params(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """Read and override (dotted keys, as `--config` / `dvc exp run -S`); not yet validated."""
    params = read_params_file(path)
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


def experiment_params(params: dict[str, Any], config_key: str) -> dict[str, Any]:
    """One experiment's block with `scale` resolved for the active profile."""
    block = copy.deepcopy(get_dotted(params, config_key))
    block["scale"] = resolve(block["scale"], params["profile"])
    return block


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value."""
    if isinstance(node, dict) and node:
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def _typed_scalar(text: str) -> Any:
    """A `--config` leaf as params.yaml would hold it: int, float, then YAML's reading."""
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    value = read_yaml(text, "--config value")
    return value if isinstance(value, (bool, int, float, str)) or value is None else text


def typed_config_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """Snakemake's `--config key=value` entries with their nested scalars typed.

    Snakemake parses a top-level value with int/float/bool, but a nested one
    (`--config 'baselines={accuracy_vs_rounds: {training: {lr: 0.04}}}'`) with YAML's
    BaseLoader, which leaves every scalar a string, so a nested number failed validation.
    Top-level values come back as Snakemake gave them."""
    def typed(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: typed(v) for k, v in node.items()}
        if isinstance(node, list):
            return [typed(v) for v in node]
        return _typed_scalar(node) if isinstance(node, str) else node

    return {key: typed(value) if isinstance(value, (dict, list)) else value
            for key, value in overrides.items()}
