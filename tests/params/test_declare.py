"""The typed declaration layer (airfl.params.declare): what each node generates, the one
way to say "differs by profile" and its resolver, and that a declaration's schema validates (a
wrong key names its dotted path and what is allowed; a declared default is what the code gets)."""

from __future__ import annotations

import pytest

from airfl.params.config import ConfigError, validate_against
from airfl.params.declare import (UNSET, AllOf, ByProfile, Declaration, Enum, Int, ListOf, MapOf,
                                  Num, Obj, Ref, Str, resolve)

BOTH = {"type": "object", "additionalProperties": False, "required": ["quick", "paper"]}


def test_scalar_nodes_generate_their_json_schema():
    assert Int(minimum=1, maximum=16, default=16, description="bits").schema() == {
        "description": "bits", "type": "integer", "minimum": 1, "maximum": 16, "default": 16}
    assert Num(gt=0, lt=1).schema() == {"type": "number", "exclusiveMinimum": 0,
                                        "exclusiveMaximum": 1}
    assert Str(nullable=True, default=None).schema() == {"type": ["string", "null"],
                                                         "default": None}
    assert Enum(values=("a", "b")).schema() == {"enum": ["a", "b"]}
    assert Ref(name="positive", allow_infinity=True).schema() == {"$ref": "#/$defs/positive",
                                                                   "allowInfinity": True}
    assert ListOf(items=Int(), min_items=2, max_items=2, unique=True).schema() == {
        "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
        "uniqueItems": True}
    assert MapOf(values=Ref(name="curve"), key_pattern="^[a-z]+$", min_properties=1).schema() == {
        "type": "object", "minProperties": 1, "propertyNames": {"pattern": "^[a-z]+$"},
        "additionalProperties": {"$ref": "#/$defs/curve"}}
    assert AllOf(options=(Ref(name="x"),)).schema() == {"allOf": [{"$ref": "#/$defs/x"}]}


def test_a_block_is_closed_and_requires_exactly_its_required_fields():
    block = Obj(fields={"a": Int(required=True), "b": Int(default=3), "c": Num()})
    assert block.schema() == {"type": "object", "additionalProperties": False, "required": ["a"],
                              "properties": {"a": {"type": "integer"},
                                             "b": {"type": "integer", "default": 3},
                                             "c": {"type": "number"}}}
    assert block.defaults() == {"b": 3}
    assert Obj(fields={"x": Int()}).schema().get("required") is None
    assert Int().default is UNSET and Int(default=None).schema()["default"] is None


def test_by_profile_is_one_value_or_one_per_profile():
    """ByProfile(T): T for both profiles or {quick: T, paper: T}; always=True: both required."""
    either = ByProfile(of=Int(minimum=1), description="rounds").schema()
    assert either["description"] == "rounds"
    assert either["oneOf"] == [{"type": "integer", "minimum": 1},
                               {**BOTH, "properties": {"quick": {"type": "integer", "minimum": 1},
                                                       "paper": {"type": "integer",
                                                                 "minimum": 1}}}]
    assert ByProfile(of=Ref(name="scale"), always=True).schema() == {
        **BOTH, "properties": {"quick": {"$ref": "#/$defs/scale"},
                               "paper": {"$ref": "#/$defs/scale"}}}


def test_resolve_gives_the_active_profiles_value():
    assert resolve({"quick": 2, "paper": 200}, "quick") == 2
    assert resolve({"quick": 2, "paper": 200}, "paper") == 200
    assert resolve(7, "paper") == 7
    assert resolve({"quick": 1, "other": 2}, "quick") == {"quick": 1, "other": 2}
    with pytest.raises(ValueError, match="quick, paper"):
        resolve(7, "fast")


def _schema(block: Obj) -> dict:
    return {"type": "object", "additionalProperties": False,
            "properties": {"wing": block.schema()}, "$defs": {"positive": Num(gt=0).schema()}}


DECLARED = Obj(fields={"fig": Obj(required=True, fields={
    "lr": ByProfile(of=Ref(name="positive"), required=True),
    "rounds": ByProfile(of=Int(minimum=1), always=True, required=True),
    "solver": Enum(values=("CLARABEL", "SCS"), default="CLARABEL")})})


def test_a_declared_default_is_what_validated_params_hold():
    params = {"wing": {"fig": {"lr": 0.1, "rounds": {"quick": 2, "paper": 50}}}}
    validate_against(params, _schema(DECLARED))
    assert params["wing"]["fig"]["solver"] == "CLARABEL"
    assert resolve(params["wing"]["fig"]["rounds"], "quick") == 2
    params = {"wing": {"fig": {"lr": {"quick": 0.1, "paper": 0.05}, "rounds": {"quick": 2,
                                                                            "paper": 50}}}}
    validate_against(params, _schema(DECLARED))
    assert resolve(params["wing"]["fig"]["lr"], "paper") == 0.05


@pytest.mark.parametrize("fig, message", [
    ({"lr": 0.1, "rounds": {"quick": 2, "paper": 5}, "solvr": "SCS"},
     ["wing.fig", "solvr", "lr", "rounds", "solver"]),
    ({"lr": 0.1, "rounds": 2}, ["wing.fig.rounds"]),
    ({"lr": 0.1, "rounds": {"quick": 2, "paper": 5}, "solver": "ECOS"},
     ["wing.fig.solver", "CLARABEL", "SCS"]),
])
def test_a_wrong_key_names_its_dotted_path_and_what_is_allowed(fig, message):
    with pytest.raises(ConfigError) as info:
        validate_against({"wing": {"fig": fig}}, _schema(DECLARED))
    for part in message:
        assert part in str(info.value)


def test_a_declaration_yields_the_parts_the_pipeline_assembles():
    declaration = Declaration(properties={"wing": Ref(name="wing", required=True),
                                          "extra": Int()},
                              defs={"wing": Obj(fields={"k": Int(required=True)})},
                              curve_schemes={"mine": Obj(fields={"snr_db": Num(required=True),
                                                                 "bits": Int(default=8)}),
                                             "plain": Obj()})
    parts = declaration.parts()
    assert parts["required"] == ["wing"]
    assert parts["properties"]["wing"] == {"$ref": "#/$defs/wing"}
    assert parts["$defs"]["wing"]["required"] == ["k"]
    assert parts["curve_schemes"] == {
        "mine": {"required": ["snr_db"], "properties": {"snr_db": {"type": "number"},
                                                        "bits": {"type": "integer",
                                                                 "default": 8}}},
        "plain": {}}
