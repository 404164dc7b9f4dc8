"""Typed declarations of params.yaml: each part of the code declares its parameters once, and the
declaration generates its part of the JSON schema (draft 2020-12) that `airfl validate` and
Snakemake's `validate` use.

A declaration is a tree of small frozen dataclasses, one per kind of value: `Int`, `Num`, `Str`,
`Bool`, `Enum`, `Const`, `ListOf`, `Ref` (a named `$defs` type), `OneOf`, `Obj` (a closed block
of named fields), `MapOf` (free names, one value type) and `ByProfile`. Every node carries a
`description`, a `default` (filled in by validation, so a declared default is what the code
reads) and `required` (whether the enclosing `Obj` must have the key). `node.schema()` is the
node's JSON schema; `extra` holds the rare keyword the nodes do not name (`allowInfinity`,
`if`/`then`/`else`).

`ByProfile(T)` is THE one way to say "differs by profile": params.yaml holds one value of T for
both profiles or `{quick: T, paper: T}`; `ByProfile(T, always=True)` requires both (a `scale`
block, whose two profiles never agree). `resolve(value, profile)` is the one resolver that
gives code the value for the active profile.

Why this shape and not pydantic or annotated dataclasses per block: the schema must stay plain
JSON schema (Snakemake validates with it, `$ref`s to shared `$defs`, an if/then per scheme kind),
every job validates params.yaml so the import must be cheap (stdlib only: ~14 ms for this
module, ~1 ms for the core's declaration, at load ~10 on 2 cores), and a tree of nodes maps one
to one onto the schema, so the generated file reads like the declaration. The key order of a
declaration is the schema's, and so the order in which validation fills defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

PROFILES = ("quick", "paper")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()     # a node without a default (None is a default: `null`)


@dataclass(frozen=True, kw_only=True)
class Node:
    """One declared value. Subclasses add their own JSON-schema keywords in `_keywords`."""

    description: str | None = None
    default: Any = UNSET
    required: bool = False
    allow_infinity: bool = False        # inf is a value here (airfl.params.config rejects it elsewhere)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.description is not None:
            out["description"] = self.description
        out.update(self._keywords())
        if self.default is not UNSET:
            out["default"] = self.default
        if self.allow_infinity:
            out["allowInfinity"] = True
        out.update(self.extra)
        return out

    def _keywords(self) -> dict[str, Any]:
        return {}


def _type(name: str, nullable: bool) -> Any:
    return [name, "null"] if nullable else name


def _bounds(**bounds: Any) -> dict[str, Any]:
    return {key: value for key, value in bounds.items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class Any_(Node):
    """Any value (the `scheme` key of a kind's branch, checked by the branch's `if`)."""


@dataclass(frozen=True, kw_only=True)
class Int(Node):
    minimum: int | None = None
    maximum: int | None = None
    nullable: bool = False

    def _keywords(self):
        return {"type": _type("integer", self.nullable),
                **_bounds(minimum=self.minimum, maximum=self.maximum)}


@dataclass(frozen=True, kw_only=True)
class Num(Node):
    """A real number; `gt`/`lt` are exclusive bounds, `minimum`/`maximum` inclusive."""

    minimum: float | None = None
    maximum: float | None = None
    gt: float | None = None
    lt: float | None = None
    nullable: bool = False

    def _keywords(self):
        return {"type": _type("number", self.nullable),
                **_bounds(minimum=self.minimum, maximum=self.maximum, exclusiveMinimum=self.gt,
                          exclusiveMaximum=self.lt)}


@dataclass(frozen=True, kw_only=True)
class Str(Node):
    pattern: str | None = None
    nullable: bool = False

    def _keywords(self):
        return {"type": _type("string", self.nullable), **_bounds(pattern=self.pattern)}


@dataclass(frozen=True, kw_only=True)
class Bool(Node):
    def _keywords(self):
        return {"type": "boolean"}


@dataclass(frozen=True, kw_only=True)
class Enum(Node):
    values: tuple = ()

    def _keywords(self):
        return {"enum": list(self.values)}


@dataclass(frozen=True, kw_only=True)
class Const(Node):
    value: Any = None

    def _keywords(self):
        return {"const": self.value}


@dataclass(frozen=True, kw_only=True)
class Ref(Node):
    """A named type of the schema's `$defs` (declared once, used by many blocks)."""

    name: str = ""

    def _keywords(self):
        return {"$ref": f"#/$defs/{self.name}"}


@dataclass(frozen=True, kw_only=True)
class ListOf(Node):
    items: Node | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False
    nullable: bool = False

    def _keywords(self):
        out: dict[str, Any] = {"type": _type("array", self.nullable)}
        if self.items is not None:
            out["items"] = self.items.schema()
        out.update(_bounds(minItems=self.min_items, maxItems=self.max_items))
        if self.unique:
            out["uniqueItems"] = True
        return out


@dataclass(frozen=True, kw_only=True)
class OneOf(Node):
    options: tuple[Node, ...] = ()

    def _keywords(self):
        return {"oneOf": [option.schema() for option in self.options]}


@dataclass(frozen=True, kw_only=True)
class AllOf(Node):
    """Every option holds (e.g. a shared block type plus keys this use requires)."""

    options: tuple[Node, ...] = ()

    def _keywords(self):
        return {"allOf": [option.schema() for option in self.options]}


@dataclass(frozen=True, kw_only=True)
class Obj(Node):
    """A block of named fields; closed (a wrong key is an error naming the allowed ones)."""

    fields: Mapping[str, Node] = field(default_factory=dict)
    nullable: bool = False
    min_properties: int | None = None

    def _keywords(self):
        out: dict[str, Any] = {"type": _type("object", self.nullable),
                               "additionalProperties": False}
        out["required"] = [name for name, node in self.fields.items() if node.required]
        if not out["required"]:
            del out["required"]
        out.update(_bounds(minProperties=self.min_properties))
        out["properties"] = {name: node.schema() for name, node in self.fields.items()}
        return out

    def defaults(self) -> dict[str, Any]:
        """The declared defaults of the block's fields (what validation fills in)."""
        return {name: node.default for name, node in self.fields.items()
                if node.default is not UNSET}


@dataclass(frozen=True, kw_only=True)
class MapOf(Node):
    """Free names (matching `key_pattern`), every value of one type (e.g. a figure's curves)."""

    values: Node | None = None          # None: any value
    key_pattern: str | None = None
    min_properties: int | None = None

    def _keywords(self):
        out: dict[str, Any] = {"type": "object"}
        out.update(_bounds(minProperties=self.min_properties))
        if self.key_pattern is not None:
            out["propertyNames"] = {"pattern": self.key_pattern}
        if self.values is not None:
            out["additionalProperties"] = self.values.schema()
        return out


def both_profiles(value: Node) -> dict[str, Any]:
    """The schema of `{quick: T, paper: T}`."""
    schema = value.schema()
    return {"type": "object", "additionalProperties": False, "required": list(PROFILES),
            "properties": {profile: schema for profile in PROFILES}}


@dataclass(frozen=True, kw_only=True)
class ByProfile(Node):
    """A value that differs by profile: one T for both or `{quick: T, paper: T}`; with
    `always`, both are required. Code reads it through `resolve`."""

    of: Node = field(default_factory=Any_)
    always: bool = False

    def _keywords(self):
        if self.always:
            return both_profiles(self.of)
        return {"oneOf": [self.of.schema(), both_profiles(self.of)]}


def resolve(value: Any, profile: str) -> Any:
    """The one resolver of a `ByProfile` value: the active profile's entry of
    `{quick: ..., paper: ...}`, any other value as it is."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    if isinstance(value, dict) and set(value) == set(PROFILES):
        return value[profile]
    return value


@dataclass(frozen=True)
class Declaration:
    """A wing's (or the core's) part of params.yaml: its top-level keys (`properties`; a
    required one has `required=True`), its named types (`defs`) and `curve_schemes`, the
    parameters of scheme kinds any training experiment's generic curves may use (kind ->
    `Obj` of its keys besides `scheme`)."""

    properties: Mapping[str, Node] = field(default_factory=dict)
    defs: Mapping[str, Node] = field(default_factory=dict)
    curve_schemes: Mapping[str, Obj] = field(default_factory=dict)

    def parts(self) -> dict[str, Any]:
        """The schema parts the pipeline assembles (same shape as a wing's YAML fragment had)."""
        parts: dict[str, Any] = {}
        if self.properties:
            parts["properties"] = {name: node.schema() for name, node in self.properties.items()}
            parts["required"] = [name for name, node in self.properties.items() if node.required]
        if self.defs:
            parts["$defs"] = {name: node.schema() for name, node in self.defs.items()}
        if self.curve_schemes:
            parts["curve_schemes"] = {kind: _curve_kind(obj)
                                      for kind, obj in self.curve_schemes.items()}
        return parts


def _curve_kind(obj: Obj) -> dict[str, Any]:
    required = [name for name, node in obj.fields.items() if node.required]
    properties = {name: node.schema() for name, node in obj.fields.items()}
    return {**({"required": required} if required else {}),
            **({"properties": properties} if properties else {})}


__all__ = ["UNSET", "PROFILES", "Node", "Any_", "Int", "Num", "Str", "Bool", "Enum", "Const",
           "Ref", "ListOf", "OneOf", "AllOf", "Obj", "MapOf", "ByProfile", "both_profiles",
           "resolve", "Declaration"]
