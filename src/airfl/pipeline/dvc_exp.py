"""A one-knob experiment through DVC that leaves params.yaml as written and Snakemake agreeing.

`dvc exp run -S key=value` writes params.yaml back through its own YAML dumper, which turns flow
lists into block lists, re-wraps long lines, writes `null` as nothing and drops comments inside
flow mappings; and every job DVC runs leaves Snakemake's record of that output (its params and
code in `.snakemake/metadata`) as the previous Snakemake run wrote it, so `snakemake -n` plans
again the jobs DVC has just run ("Params have changed"). Both are DVC's and Snakemake's own
behaviour, so this module routes around them:

* `set_values` changes only the text of the values set (found by the YAML parser's marks), so
  every comment, blank line and flow collection of params.yaml stays byte for byte;
* `dvc_layout` writes params.yaml in the layout DVC's dumper keeps (`python -m
  airfl.pipeline.dvc_exp layout [--check]`), so that a plain `dvc exp run -S` changes only the
  lines of the values it sets too;
* `record_in_snakemake` lets Snakemake record (`snakemake --touch`) exactly the jobs it would
  rerun whose DVC stage is up to date in dvc.lock together with every stage upstream of it: the
  outputs are then the ones DVC made with the current parameters and code, and Snakemake's record
  of them becomes current. A job whose stage (or a stage above it) DVC did not run stays stale
  in both tools.

`python -m airfl.pipeline.dvc_exp run KEY=VALUE ... [-- DVC_ARGS]` (`make exp SET=...`) sets the
values, runs `dvc exp run` on the edited workspace and records the result in Snakemake;
`... record` does the last step alone (after `dvc repro` or a plain `dvc exp run`).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from airfl.params.config import ConfigError, _StrictLoader, read_params_file, read_yaml, set_dotted
from airfl.runtime.io import atomic_path

PARAMS = Path("params.yaml")


# -- params.yaml: change values, keep the text -----------------------------------------------

def _value_node(root: yaml.Node, dotted: str) -> yaml.Node:
    """The node holding the value of `dotted` (every key must exist: a new key is a typo here,
    as it is for the schema)."""
    node, walked = root, []
    for key in dotted.split("."):
        walked.append(key)
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{'.'.join(walked[:-1])} is not a mapping: cannot set {dotted}")
        for key_node, value_node in node.value:
            if key_node.value == key:
                node = value_node
                break
        else:
            raise ConfigError(f"{'.'.join(walked)}: no such key in params.yaml (set only keys "
                              "that are written there)")
    return node


def yaml_text(value: Any, block_column: int | None = None) -> str:
    """`value` as YAML text: one line with flow collections (floats as PyYAML writes them,
    `1.0e-05`, `.inf`), or, replacing a block collection that starts at `block_column`, block
    style with every line after the first indented to that column."""
    flow = block_column is None or not isinstance(value, (dict, list))
    text = yaml.safe_dump(value, default_flow_style=flow, width=math.inf, sort_keys=False)
    text = text.removesuffix("\n").removesuffix("\n...").strip("\n")
    return text if flow else text.replace("\n", "\n" + " " * block_column)


def _span(node: yaml.Node) -> tuple[int, int]:
    """Where the node's text starts and ends: a block collection ends with its last value (its
    end mark lies at the next key, past any comment lines between them)."""
    last = node
    while isinstance(last, (yaml.MappingNode, yaml.SequenceNode)) and not last.flow_style \
            and last.value:
        last = last.value[-1][1] if isinstance(last, yaml.MappingNode) else last.value[-1]
    return node.start_mark.index, last.end_mark.index


def set_values(text: str, values: dict[str, Any], source: str = "params.yaml") -> str:
    """`text` with the value of each dotted key replaced by `values[key]`, every other byte kept.

    The span replaced is the value node's (a scalar's own characters, a flow collection, or a
    block collection up to its last value, written back in block style); the result is read
    back and must equal the old document with exactly these values changed."""
    spans = []
    for dotted, value in values.items():
        loader = _StrictLoader(text)
        try:
            node = _value_node(loader.get_single_node(), dotted)
        finally:
            loader.dispose()
        block = isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style
        spans.append((*_span(node), yaml_text(value, node.start_mark.column if block else None),
                      dotted))
    spans.sort()
    for (_, end, _, key), (start, _, _, other) in zip(spans, spans[1:]):
        if start < end:
            raise ConfigError(f"{key} and {other} overlap: set one of them")
    out = text
    for start, end, new, _ in reversed(spans):
        out = out[:start] + new + out[end:]
    expected = read_yaml(text, source)
    for dotted, value in values.items():
        set_dotted(expected, dotted, value)
    if read_yaml(out, source) != expected:          # never write a file that reads otherwise
        raise ConfigError(f"{source}: setting {', '.join(values)} in place would change other "
                          "values; edit the file by hand")
    return out


def parse_assignments(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE words (values in YAML syntax, as `--set` and `dvc exp run -S` take them)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"expected KEY=VALUE, got {pair!r}")
        out[key] = read_yaml(value, f"value of {key}")
    return out


def set_params(path: Path, values: dict[str, Any]) -> None:
    """Validate params.yaml with `values` set, then write it changed in place (atomically)."""
    from airfl.pipeline.params import validate_params

    params = read_params_file(path)
    for dotted, value in values.items():
        set_dotted(params, dotted, value)
    validate_params(params)                         # a bad value stops here, nothing written
    text = set_values(path.read_text(), values, str(path))
    with atomic_path(path) as tmp:
        tmp.write_text(text)


# -- params.yaml in the layout DVC's `-S` writes back ---------------------------------------

DVC_WIDTH = 80
"""The line width of DVC's YAML dumper (ruamel.yaml's default, which DVC does not change): a
flow collection longer than this is wrapped at its commas."""


def dvc_round_trip(text: str, overrides: list[str] = ()) -> str:
    """What `dvc exp run -S OVERRIDE ...` leaves of params.yaml `text`: DVC's own code path
    (`dvc.utils.hydra.apply_overrides`: ruamel.yaml's round-trip loader, the overrides applied
    through OmegaConf, the result merged back and dumped by DVC's dumper), run on a copy."""
    import tempfile

    from dvc.utils.hydra import apply_overrides

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "params.yaml"
        path.write_text(text)
        apply_overrides(path, list(overrides))
        return path.read_text()


def _comments(text: str) -> list[str]:
    """The comments of a YAML text (params.yaml quotes no '#')."""
    return [line.split("#", 1)[1].strip() for line in text.splitlines() if "#" in line]


def dvc_layout(text: str, source: str = "params.yaml") -> str:
    """`text` in the layout that `dvc exp run -S` writes back unchanged but for the values set.

    DVC reads params.yaml with ruamel.yaml's round-trip loader and writes it back with
    `default_flow_style = False` and width DVC_WIDTH, after merging the overridden document into
    the loaded one (`dvc.utils.collections.merge_dicts`), which keeps every mapping (and its
    style) but replaces every list by a new one. So in a fixed point of that round trip:
    every list (and everything inside one) is in block style; a flow mapping fits on one line
    of DVC_WIDTH columns (longer ones become block mappings); a null inside a block mapping is
    written as nothing; a block list's dash sits at its key's column. Comments outside flow
    collections are kept; a comment inside a flow collection would be lost, so it stops here
    (move it to its key's line or above it)."""
    import io

    from dvc.utils.serialize._yaml import _dump, parse_yaml_for_update
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    def one_line(key: Any, node: Any) -> str:
        return f"{key}: {yaml_text(json.loads(json.dumps(node, default=str)))}"

    def block(node: Any) -> None:
        if isinstance(node, (CommentedMap, CommentedSeq)) and node:   # empty: [] or {}
            node.fa.set_block_style()
            for child in (node.values() if isinstance(node, CommentedMap) else node):
                block(child)

    def walk(node: CommentedMap, indent: int) -> None:
        for key, value in node.items():
            if isinstance(value, CommentedSeq):
                block(value)
            elif isinstance(value, CommentedMap):
                if not value.fa.flow_style() or indent + len(one_line(key, value)) > DVC_WIDTH:
                    value.fa.set_block_style()
                    walk(value, indent + 2)
                elif any(isinstance(v, CommentedSeq) for v in value.values()):
                    block(value)
                    walk(value, indent + 2)

    document = parse_yaml_for_update(text, source)
    walk(document, 0)
    out = io.StringIO()
    _dump(document, out)
    lost = [c for c in _comments(text) if c not in _comments(out.getvalue())]
    if lost:
        raise ConfigError(f"{source}: a comment inside a flow collection would be lost in DVC's "
                          f"layout: {lost[0]!r}; move it to its key's line")
    check_fixed_point(out.getvalue(), source)
    return out.getvalue()


def check_fixed_point(text: str, source: str = "params.yaml") -> None:
    """Stop unless DVC's round trip (`dvc_round_trip`, no override) gives `text` back byte for
    byte, naming the first line it changes. Besides the rules of `dvc_layout`, a full-line
    comment right after a block list is lost (ruamel.yaml attaches it to the list's last item,
    and DVC replaces the list): write it on the next key's line instead."""
    back = dvc_round_trip(text)
    if back != text:
        ours, theirs = text.splitlines(), back.splitlines()
        at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                  min(len(ours), len(theirs)))
        line = ours[at] if at < len(ours) else "<end of file>"
        raise ConfigError(f"{source}: `dvc exp run -S` would rewrite line {at + 1} "
                          f"({line.strip()!r}); a full-line comment after a block list is lost "
                          "there (write it on the next key's line); otherwise run `python -m "
                          "airfl.pipeline.dvc_exp layout`")


# -- Snakemake's record of outputs DVC made ----------------------------------------------------

def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(args)}` failed ({done.returncode}):\n"
                         f"{(done.stderr or done.stdout)[-2000:]}")
    return done


def pending_outputs(summary: str) -> list[str]:
    """The output files `snakemake --summary` plans to update (its `plan` column)."""
    lines = summary.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("output_file\t"))
    columns = lines[header].split("\t")
    rows = [dict(zip(columns, line.split("\t"))) for line in lines[header + 1:] if "\t" in line]
    return [row["output_file"] for row in rows if row.get("plan") == "update pending"]


def _path(entry: str | dict) -> str:
    return entry if isinstance(entry, str) else next(iter(entry))


def made_by(dvc_yaml: dict) -> dict[str, str]:
    """Each path a stage writes (its outs, plots and metrics) -> the stage."""
    return {_path(entry): name for name, stage in dvc_yaml.get("stages", {}).items()
            for kind in ("outs", "plots", "metrics") for entry in stage.get(kind, [])}


def current_stages(dvc_yaml: dict, lock: dict, status: dict) -> set[str]:
    """The stages DVC has up to date (in dvc.lock, not in `dvc status`) together with every
    stage upstream of them (the producers of their deps, recursively)."""
    stages = dvc_yaml.get("stages", {})
    producer = made_by(dvc_yaml)
    clean = {name for name in stages if name in lock.get("stages", {}) and name not in status}
    done: dict[str, bool] = {}

    def ok(name: str) -> bool:
        if name not in done:
            done[name] = False                      # a cycle is not current
            deps = [_path(d) for d in stages[name].get("deps", [])]
            done[name] = name in clean and all(ok(producer[d]) for d in deps if d in producer)
        return done[name]

    return {name for name in stages if ok(name)}


def outputs_to_record(pending: list[str], dvc_yaml: dict, current: set[str]) -> list[str]:
    """The pending outputs that a current DVC stage made."""
    producer = made_by(dvc_yaml)
    return [path for path in pending if producer.get(path) in current]


def record_in_snakemake(targets: list[str], snakemake: list[str]) -> list[str]:
    """Record in Snakemake the outputs DVC made current (see the module docstring); returns the
    outputs recorded."""
    pending = pending_outputs(_run([*snakemake, "--summary", *targets]).stdout)
    if not pending:
        return []
    status = json.loads(_run(["dvc", "status", "--json"]).stdout or "{}")
    dvc_yaml = yaml.safe_load(Path("dvc.yaml").read_text())
    lock_path = Path("dvc.lock")
    lock = yaml.safe_load(lock_path.read_text()) if lock_path.exists() else {}
    record = outputs_to_record(pending, dvc_yaml, current_stages(dvc_yaml, lock or {}, status))
    if record:
        _run([*snakemake, *record, "--touch", "--cores", "1", "--quiet"])
    return record


# -- the commands ------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m airfl.pipeline.dvc_exp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    setp = sub.add_parser("set", help="set values in params.yaml, keeping its comments and layout")
    runp = sub.add_parser("run", help="set values, `dvc exp run` (arguments after --), then "
                          "record the outputs in Snakemake")
    for p in (setp, runp):
        p.add_argument("assignments", nargs="+", metavar="KEY=VALUE")
        p.add_argument("--params", type=Path, default=PARAMS)
    layp = sub.add_parser("layout", help="rewrite params.yaml in the layout `dvc exp run -S` "
                          "keeps (dvc_layout); --check: only check it")
    layp.add_argument("--params", type=Path, default=PARAMS)
    layp.add_argument("--check", action="store_true")
    recp = sub.add_parser("record", help="record in Snakemake the outputs DVC made current")
    for p in (runp, recp):
        p.add_argument("--targets", nargs="*", default=[], help="Snakemake targets to check "
                       "(default: the whole DAG)")
    argv = sys.argv[1:] if argv is None else argv
    dvc_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, dvc_args = argv[:at], argv[at + 1:]
    args = parser.parse_args(argv)
    beside = Path(sys.executable).with_name("snakemake")      # the venv's, as Makefile runs it
    snakemake = [str(beside) if beside.exists() else "snakemake"]
    try:
        if args.command == "layout":
            text = args.params.read_text()
            if args.check:
                check_fixed_point(text, str(args.params))
            else:
                new = dvc_layout(text, str(args.params))
                if read_yaml(new, str(args.params)) != read_yaml(text, str(args.params)):
                    raise ConfigError(f"{args.params}: the layout would change values")
                with atomic_path(args.params) as tmp:
                    tmp.write_text(new)
            return 0
        if args.command in ("set", "run"):
            set_params(args.params, parse_assignments(args.assignments))
        if args.command == "run":
            done = subprocess.run(["dvc", "exp", "run", *dvc_args])
            if done.returncode != 0:
                return done.returncode
        if args.command in ("run", "record"):
            recorded = record_in_snakemake(args.targets, snakemake)
            print(f"recorded {len(recorded)} outputs DVC made in Snakemake's metadata")
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
