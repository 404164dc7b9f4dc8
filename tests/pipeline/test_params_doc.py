"""docs/parameters.md, the parameter reference, is generated from the declarations (as the params
schema is) and every declared parameter has a description."""

from __future__ import annotations

import difflib

from airfl.params.declare import Declaration, Int, Obj, Ref
from airfl.pipeline.params import params_schema
from airfl.pipeline.params_doc import every_parameter, params_markdown, undescribed


def test_committed_parameter_reference_is_the_generated_one(repo_root):
    """Regenerate it with `airfl schema` after changing a declaration."""
    committed = (repo_root / "docs" / "parameters.md").read_text()
    generated = params_markdown(params_schema())
    assert committed == generated, "".join(difflib.unified_diff(
        committed.splitlines(True), generated.splitlines(True), "committed", "generated"))


def test_every_declared_parameter_has_a_description():
    missing = undescribed(params_schema())
    assert not missing, f"{len(missing)} parameters without a description: {missing}"


def _schema(declaration: Declaration) -> dict:
    parts = declaration.parts()
    return {"properties": parts.get("properties", {}), "$defs": parts.get("$defs", {})}


def test_a_parameter_without_a_description_is_named_by_its_key_path():
    """Nested keys, list elements and bare references to a value type need their own; a
    reference to a described block type is described by it."""
    schema = _schema(Declaration(
        properties={"block": Obj(description="a block", fields={
            "rounds": Int(description="rounds", minimum=1),
            "trials": Int(minimum=1),
            "lr": Ref(name="positive"),
            "setting": Ref(name="setting")})},
        defs={"positive": Int(description="a positive integer", minimum=1),
              "setting": Obj(description="a setting", fields={"n": Int()})}))
    assert undescribed(schema) == ["block.trials", "block.lr", "$defs.setting.n"]
    paths = [path for path, _ in every_parameter(schema)]
    assert paths == ["block", "block.rounds", "block.trials", "block.lr", "block.setting",
                     "$defs.positive", "$defs.setting", "$defs.setting.n"]


def test_the_reference_tabulates_type_default_and_per_profile_defaults():
    """A row per key: its path, type with bounds, default (both profiles' where it differs by
    profile) and description; the page links named types."""
    from airfl.params.declare import ByProfile

    schema = _schema(Declaration(properties={"block": Obj(description="the block", fields={
        "rounds": ByProfile(description="rounds T (Eq. 3)", of=Int(minimum=1),
                            default={"quick": 5, "paper": 500}),
        "lr": Ref(description="step size | eta", name="positive", default=0.1)})},
        defs={"positive": Int(description="a positive number", minimum=1)}))
    page = params_markdown(schema)
    assert ("| `block.rounds` | integer ≥ 1, per profile | quick: `5`; paper: `500` | "
            "rounds T (Eq. 3) |") in page
    assert "| `block.lr` | [positive](#def-positive) | `0.1` | step size \\| eta |" in page
    assert '<a id="def-positive"></a>' in page and '<a id="key-block"></a>' in page


def test_descriptions_cite_the_paper_not_a_reading_aid():
    """A description cites the paper (section, equation) or states our reading plainly; it
    never names an outside reading aid or a tag of one."""
    import re

    wording = re.compile(r"\bspec\b|\berrata\b|\[[ARM](?:[:\]])", re.IGNORECASE)
    found = [f"{path}: {sub['description']}" for path, sub in every_parameter(params_schema())
             if wording.search(sub.get("description") or "")]
    assert not found, "\n".join(found)


def test_a_named_type_lists_the_keys_that_use_it_as_params_yaml_spells_them():
    """A type that one top-level key is (e.g. `cdpb`) lends that key to the paths inside it."""
    from airfl.pipeline.params_doc import used_at

    schema = _schema(Declaration(
        properties={"paper": Ref(description="a paper", name="paper")},
        defs={"positive": Int(description="a positive integer", minimum=1),
              "paper": Obj(description="the paper's block", fields={
                  "rounds": Ref(description="rounds", name="positive"),
                  "trials": Ref(description="trials", name="positive")})}))
    assert used_at(schema) == {"paper": ["paper"],
                               "positive": ["paper.rounds", "paper.trials"]}
    page = params_markdown(schema)
    assert "Used at: `paper.rounds`, `paper.trials`." in page


def test_text_that_would_open_an_html_tag_is_escaped_outside_code():
    """`audit.<wing>` in a description would vanish as an HTML tag; `< 0.5` and code stay."""
    schema = _schema(Declaration(properties={"audit": Obj(
        description="settings as audit.<wing> (stage `audit.<wing>`)", fields={
            "alpha": Int(description="below 0.5: alpha < 0.5", minimum=1)})}))
    page = params_markdown(schema)
    assert "settings as audit.&lt;wing> (stage `audit.<wing>`)" in page
    assert "below 0.5: alpha < 0.5 |" in page
