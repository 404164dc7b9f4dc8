"""Every shell command of README.md and docs/ runs, so none can rot.

The commands of each fenced ```bash / ```sh block run in a copy of the repository (the workspace
of the end-to-end tests), with the venv's tools first on PATH. A command that would take minutes
or change the machine runs in its tool's dry form:

- `snakemake ...`: Snakemake's own argument parser reads the command as written (so a target
  after `--config` or `--configfile`, which Snakemake reads as a config entry or file, fails),
  its config entries are parsed as Snakemake parses them and its config files must exist; then
  the commands with the same options are dry-run together (`snakemake -n TARGETS OPTIONS`: the
  DAG is built and params.yaml validated for every target, no job runs), one Snakemake start
  per set of options instead of one per command.
- `make ...` -> `make -n ...`; `pip install ...` -> `pip install --dry-run ...`
- `airfl ...`, `python ...`, `dvc status`, `dvc params diff`, `dvc metrics diff`: as written;
  `... &` (a server started in the background) runs until its block ends.

A command whose program has no rule here fails the test: add a rule (its dry form, or run it)
when the docs gain a new kind of command. Blocks meant as text to copy, not to run (a template
with placeholders, a file's content), are fenced without a shell language.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shlex
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from checkout import REPO, data_mirror
from workspace import make_workspace, tool_env

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[A-Za-z]*)[ \t]*$")
SHELLS = {"bash", "sh", "shell", "console"}
DRY = {  # program -> how its dry form is made from the command as written
    "snakemake": lambda c: re.sub(r"\bsnakemake\b", "snakemake -n", c, count=1),
    "make": lambda c: re.sub(r"\bmake\b", "make -n", c, count=1),
}
RUN_AS_WRITTEN = {"airfl", "python"}
DVC_AS_WRITTEN = {"status", "params", "metrics"}


def shell_blocks(path: Path) -> list[tuple[int, list[str]]]:
    """(first line number, commands) of each fenced shell block: continuation lines joined,
    comments and blank lines dropped."""
    blocks, lines, inside, start, lang, indent = [], path.read_text().splitlines(), False, 0, "", ""
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence and not inside:
            inside, start, lang, indent, body = True, number, fence["lang"], fence["indent"], []
        elif fence and inside:
            inside = False
            if lang in SHELLS:
                blocks.append((start, _commands([b.removeprefix(indent) for b in body])))
        elif inside:
            body.append(line)
    assert not inside, f"{path}: a fence opened at line {start} is not closed"
    return blocks


def _commands(body: list[str]) -> list[str]:
    joined = "\n".join(body).replace("\\\n", " ")
    return [command for command in map(_without_comment, joined.splitlines()) if command]


def _without_comment(line: str) -> str:
    """The line up to a `#` that starts a word outside quotes (bash's comment), spaces
    collapsed; quoting and brace expansion are left to bash."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            line = line[:index]
            break
    return re.sub(r"[ \t]+", " ", line).strip()


def dry_form(command: str) -> str:
    """The command as the test runs it, or a failure naming the program without a rule."""
    words = shlex.split(command)
    while words and ENV_ASSIGNMENT.fullmatch(words[0]):
        words.pop(0)
    program = words[0]
    if program in DRY:
        return DRY[program](command)
    if program == "pip" and words[1:2] == ["install"]:
        return command.replace("pip install", "pip install --dry-run", 1)
    if program == "dvc" and words[1:2] and words[1] in DVC_AS_WRITTEN:
        return command
    if program in RUN_AS_WRITTEN:
        return command
    pytest.fail(f"no rule for `{program}` in `{command}`: add its dry form to {__name__}")


def is_snakemake(command: str) -> bool:
    words = [w for w in shlex.split(command) if not ENV_ASSIGNMENT.fullmatch(w)]
    return words[0] == "snakemake"


def expand(command: str, root: Path) -> list[str]:
    """The words bash makes of the command (braces, $PWD), without running it."""
    done = subprocess.run(["bash", "-c", f"printf '%s\\0' {command}"], cwd=root,
                          capture_output=True, text=True, check=True)
    return done.stdout.split("\0")[:-1]


def snakemake_groups(commands: list[str], root: Path) -> dict[tuple, list[str]]:
    """Each documented Snakemake command read by Snakemake's own parser, grouped by its
    environment and options: (env words, option words) -> targets (`all`: the default)."""
    from snakemake.cli import parse_args, parse_config

    groups: dict[tuple, list[str]] = {}
    for command in commands:
        words = expand(command, root)
        env = tuple(itertools.takewhile(ENV_ASSIGNMENT.fullmatch, words))
        words = words[len(env):]
        with contextlib.chdir(root):            # where Snakemake finds profiles/default
            _, args = parse_args(words[1:])
        if args.config:
            parse_config(args.config)           # raises on an entry that is not key=value
        for configfile in args.configfile or []:
            assert (root / configfile).is_file(), f"`{command}`: no config file {configfile}"
        targets = list(args.targets)
        options = list(words[1:])
        for target in targets:
            options.remove(target)
        groups.setdefault((env, tuple(options)), []).extend(targets or ["all"])
    return groups


ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
CASES = [pytest.param(path, start, commands, id=f"{path.relative_to(REPO)}:{start}")
         for path in DOCUMENTS for start, commands in shell_blocks(path)]
SNAKEMAKE = [c for case in CASES for c in case.values[2] if is_snakemake(c)]


def test_the_documents_have_shell_blocks_and_every_command_has_a_rule():
    assert any(path.name == "README.md" for path, *_ in (c.values for c in CASES))
    assert SNAKEMAKE
    for case in CASES:
        for command in case.values[2]:
            dry_form(command.removesuffix("&").strip())


def test_the_extractor_reads_continuations_comments_and_indented_fences(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("text\n  ```bash\n  snakemake --cores 2 a \\\n      b   # two targets\n"
                   "  # only a comment\n\n  airfl list\n  ```\n```\nnot run\n```\n"
                   "```sh\nsnakemake x/{a,b}.csv  # braces\n```\n")
    assert shell_blocks(doc) == [(2, ["snakemake --cores 2 a b", "airfl list"]),
                                 (12, ["snakemake x/{a,b}.csv"])]
    assert dry_form("make test") == "make -n test"
    assert expand("AIRFL_X=$PWD/s snakemake x/{a,b}.csv", tmp_path) == [
        f"AIRFL_X={tmp_path}/s", "snakemake", "x/a.csv", "x/b.csv"]
    with pytest.raises(pytest.fail.Exception, match="no rule for `rm`"):
        dry_form("rm -rf results")


def test_a_target_after_config_is_refused_as_snakemake_refuses_it(tmp_path):
    (tmp_path / "over.yaml").write_text("profile: paper\n")
    assert snakemake_groups(["snakemake --cores 2 a b --config profile=paper",
                             "snakemake --cores 2 c --config profile=paper",
                             "snakemake --cores 2"], tmp_path) == {
        ((), ("--cores", "2", "--config", "profile=paper")): ["a", "b", "c"],
        ((), ("--cores", "2")): ["all"]}
    with pytest.raises(Exception, match="name=value"):
        snakemake_groups(["snakemake --cores 2 --config profile=paper figures/CLAIMS.md"],
                         tmp_path)
    with pytest.raises(AssertionError, match="no config file a.csv"):
        snakemake_groups(["snakemake --cores 2 --configfile over.yaml a.csv"], tmp_path)


@pytest.fixture(scope="module")
def docs_workspace(tmp_path_factory):
    env = tool_env(data_mirror() or REPO / "data")
    root = make_workspace(REPO, tmp_path_factory.mktemp("docs") / "repo", env, lambda p: p)
    return root, env


def test_every_documented_snakemake_command_dry_runs(docs_workspace):
    """Two dry runs at a time (each is one CPU-bound Snakemake start); --nolock lets them share
    the workspace."""
    root, env = docs_workspace

    def dry_run(group):
        (env_words, options), targets = group
        run = [*env_words, "snakemake", "-n", "--nolock", *dict.fromkeys(targets), *options]
        done = subprocess.run(["env", *run], cwd=root, env=env, capture_output=True, text=True,
                              timeout=600)
        return run, done

    with ThreadPoolExecutor(max_workers=2) as pool:
        for run, done in pool.map(dry_run, snakemake_groups(SNAKEMAKE, root).items()):
            assert done.returncode == 0, (f"`{shlex.join(run)}` failed ({done.returncode}):\n"
                                          f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


@pytest.mark.parametrize("path, start, commands",
                         [c for c in CASES if not all(map(is_snakemake, c.values[2]))])
def test_every_other_documented_command_runs(path, start, commands, docs_workspace):
    root, env = docs_workspace
    background = []
    try:
        for command in commands:
            if is_snakemake(command):           # dry-run together above
                continue
            if command.endswith("&"):
                background.append(_start(command.removesuffix("&").strip(), root, env))
                continue
            run = dry_form(command)
            done = subprocess.run(["bash", "-c", run], cwd=root, env=env, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, (f"{path.name}:{start}: `{run}` failed "
                                          f"({done.returncode}):\n{done.stdout[-2000:]}\n"
                                          f"{done.stderr[-2000:]}")
    finally:
        for process in background:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def _start(command: str, root: Path, env: dict) -> subprocess.Popen:
    """A documented background server: started as written; when it names a socket
    (`--serve PATH`), the block goes on once the socket exists."""
    process = subprocess.Popen(["bash", "-c", f"exec {dry_form(command)}"], cwd=root, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    serve = re.search(r"--serve\s+(\S+)", command)
    if serve:
        socket = root / serve.group(1)
        deadline = time.monotonic() + 120
        while not socket.exists():
            assert process.poll() is None, f"`{command}` stopped: {process.stderr.read()}"
            assert time.monotonic() < deadline, f"`{command}` made no socket in 120 s"
            time.sleep(0.2)
    return process
