"""Reference results: a paper's figures, their data and its claims, copied out of a finished
run into the repository's reference/<paper>/<profile>/ with a manifest per figure, so that a
fresh clone shows the paper-scale figures beside the paper's own numbers without running.

Layout of reference/<paper>/<profile>/ (reference/quick_summary.json, the cross-CPU check, is
another file and stays where it is):

- `<figure>.csv` (`.csv.gz` when large: `reference_layout`), `<figure>.png`: the figure's
  stored data and the plot drawn from it (an
  analytic figure's resolved parameters beside them, `<figure>.analytic.json`, an audit's
  points, `<figure>.audit.json`: what its claims read besides the CSV);
- `<figure>.manifest.json`: what made it (commit and whether the tree was dirty; profile,
  `--set` overrides, and every params.yaml key the figure's jobs declare with its value and a
  hash of them; the command; the machine; wall and CPU time; the date);
- `claims.rows.json`, `CLAIMS.md`: the paper's claims evaluated on the published figures (the
  claims stage's evaluation, `stages.claims.evaluate_paper`, on the copies in the folder): every
  claim whose panels are all published.

`publish` merges: figures published earlier and not named again are kept, so a reference
built in pieces (each a set of figures whose runs finished) grows piece by piece, and the
claims are evaluated again on all of them (a claim over two panels published in two pieces is
decided when the second lands). The folder is assembled beside its place and swapped in, so a
failing publish leaves the previous one.
`check` compares every manifest with the current declarations (a key that is no longer
declared, a key that is declared now and was not, a value that differs) and dry-runs
Snakemake for the figure; `rebuild` runs the command a manifest recorded.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from airfl.params.config import ConfigError, get_dotted
from airfl.runtime.io import git_commit, json_form, read_json, write_json, write_text
from airfl.pipeline import paths
from airfl.pipeline.reference_layout import PROFILES, ROOT, folder, read_csv_bytes, store_csv



class ReferenceError(RuntimeError):
    """Bad input or a missing result: the one-line message the CLI prints."""


def manifest_path(paper: str, profile: str, figure: str) -> Path:
    return folder(paper, profile) / f"{figure}.manifest.json"


def load(profile: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """params.yaml resolved for `profile` with the `--set` overrides (dotted keys)."""
    from airfl.pipeline.params import load_params

    if profile not in PROFILES:
        raise ReferenceError(f"profile {profile!r} is not one of {', '.join(PROFILES)}")
    return load_params("params.yaml", {**(overrides or {}), "profile": profile})


def paper_jobs(paper: str, params: dict[str, Any], figures: list[str] | None = None) -> list:
    """The DAG's jobs that can make `paper`'s figures (`figures`, default all): every stage of
    no experiment, and the paper's experiments when one of the figures is an experiment's panel
    (a panel reads only its own paper's runs; analytic and audit figures, no experiment's).
    The whole DAG's jobs would cost a minute of deriving parameters, a paper's some seconds."""
    from airfl.pipeline.dag import jobs

    return jobs(params, papers=[paper] if needs_panels(paper, figures) else [])


def needs_panels(paper: str, figures: list[str] | None) -> bool:
    """Whether `figures` (None: all of the paper's) may need an experiment's jobs: any that is
    not one of the paper's analytic or audit figures (a name that is neither, unknown ones
    included, gets the whole paper's jobs, so that an error lists every figure)."""
    from airfl.pipeline.registry import all_analytic, get_wing

    try:
        wing = get_wing(paper)
    except KeyError:                           # a paper no longer installed: nothing is alone
        return True
    alone = {f.figure for f in all_analytic() if f.paper == paper} | \
        {f"audit_{name}" for name in (wing.audits or {})}
    return figures is None or any(f not in alone for f in figures)


def figure_csvs(paper: str, all_jobs: list) -> dict[str, str]:
    """Every figure CSV of `paper` that a job of the DAG draws (experiment panels, analytic and
    audit figures), by figure name (the file's stem)."""
    prefix = f"{paths.FIGURES}/{paper}/"
    drawn = {p.path for job in all_jobs for p in job.plots} | \
        {o for job in all_jobs for o in job.outs}
    return {Path(p).stem: p for p in sorted(drawn)
            if p.startswith(prefix) and p.endswith(".csv") and "/" not in p[len(prefix):]}


def declared_keys(csv: str, all_jobs: list) -> list[str]:
    """The params.yaml keys read by the jobs that make `csv` and everything upstream of it."""
    from airfl.pipeline.plan import needed_jobs

    return sorted({key for job in needed_jobs(all_jobs, [csv]) for key in job.params})


def key_values(keys: list[str], params: dict[str, Any]) -> dict[str, Any]:
    """Each key's value in `params` (as stored in JSON)."""
    return json_form({key: get_dotted(params, key) for key in keys})


def params_hash(values: dict[str, Any]) -> str:
    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def machine() -> dict[str, Any]:
    """The CPU model (/proc/cpuinfo, else the platform's name), the cores, and the GPU when torch
    sees one."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = None
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "gpu": gpu, "system": platform.system()}


def snakemake_command(targets: list[str], profile: str, overrides: dict[str, Any],
                      cores: int = 2) -> str:
    """The Snakemake command that builds `targets` in `profile` with `overrides`."""
    return shlex.join(["snakemake", *targets, "--cores", str(cores), "--config",
                       *config_words(profile, overrides)])


def config_words(profile: str, overrides: dict[str, Any]) -> list[str]:
    """Snakemake's `--config` words for the profile and the `--set` overrides (dotted keys): one
    nested mapping per top-level key, which Snakemake merges into params.yaml's."""
    nested: dict[str, Any] = {}
    for key, value in sorted(overrides.items()):
        *parents, leaf = key.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return [f"profile={profile}"] + [f"{k}={json.dumps(v)}" for k, v in sorted(nested.items())]


def _targets(csvs: list[str]) -> list[str]:
    return [t for csv in csvs for t in (csv, str(Path(csv).with_suffix(".png")))]


def publish(paper: str, profile: str, figures: list[str] | None = None,
            overrides: dict[str, Any] | None = None, command: str | None = None,
            wall_s: float | None = None, cpu_s: float | None = None,
            partial: str | None = None) -> list[str]:
    """Copy `paper`'s figures (those named, or every one whose CSV exists) and its claims into
    reference/<paper>/<profile>/ with a manifest each; returns the figures published.
    `partial`: why the run's times count only part of its figures' jobs (a resumed run, outputs
    reused), recorded as the manifests' `partial` (`airfl reference-results plan-check` then
    leaves the run out of the plan's check)."""
    from airfl.pipeline.registry import papers

    if paper not in papers():
        raise ReferenceError(f"unknown paper {paper!r}; allowed: {', '.join(papers())}")
    overrides = dict(overrides or {})
    params = load(profile, overrides)
    all_jobs = paper_jobs(paper, params, figures)
    known = figure_csvs(paper, all_jobs)
    if figures:
        unknown = [f for f in figures if f not in known]
        if unknown:
            raise ReferenceError(f"{paper} has no figure {unknown[0]!r} in profile {profile}; "
                                 f"allowed: {', '.join(known)}")
        chosen = {f: known[f] for f in figures}
    else:
        chosen = {f: c for f, c in known.items() if Path(c).is_file()}
    if not chosen:
        raise ReferenceError(f"no figure of {paper} is built (figures/{paper}/*.csv); run "
                             f"`snakemake --cores 2 {paper} --config profile={profile}` first")
    for name, csv in chosen.items():
        for path in (Path(csv), Path(csv).with_suffix(".png")):
            if not path.is_file():
                raise ReferenceError(f"{path} is missing; `snakemake {path} --config "
                                     f"profile={profile}` makes it")
    _made_with(_targets(list(chosen.values())), profile, overrides)
    stamp = {"commit": git_commit(), "machine": machine(),
             "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
             "wall_s": wall_s, "cpu_s": cpu_s, **({"partial": partial} if partial else {})}
    target = folder(paper, profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{profile}.", dir=target.parent))
    try:
        if target.is_dir():                     # figures published earlier stay
            shutil.copytree(target, staging, dirs_exist_ok=True)
        for name, csv in chosen.items():
            keys = declared_keys(csv, all_jobs)
            values = key_values(keys, params)
            store_csv(Path(csv), staging, name)
            shutil.copyfile(Path(csv).with_suffix(".png"), staging / f"{name}.png")
            for kind, source in _claim_inputs(paper, name).items():
                shutil.copyfile(source, staging / f"{name}.{kind}.json")
            run_command = command or snakemake_command(_targets([csv]), profile, overrides)
            write_json(staging / f"{name}.manifest.json", {
                "paper": paper, "figure": name, "source": csv,
                "params": {"profile": profile, "overrides": overrides, "keys": values,
                           "hash": params_hash(values)},
                "command": run_command,
                "rebuild": snakemake_command(_targets([csv]), profile, overrides),
                **stamp})
        write_claims(staging, paper, params)
        _swap(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return sorted(chosen)


def _claim_inputs(paper: str, name: str) -> dict[str, Path]:
    """What a figure's claims read besides its CSV, by kind: an analytic figure's stored
    attributes (`artifacts.load_frame`), an audit's points (`claims.audit_claim_rows`)."""
    from airfl.pipeline.registry import all_analytic

    if any(f.paper == paper and f.figure == name for f in all_analytic()):
        return {"analytic": paths.analytic(f"{paper}/{name}")}
    if name.startswith("audit_"):
        return {"audit": paths.audit(paper, name[len("audit_"):])}
    return {}


def write_claims(where: Path, paper: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Evaluate `paper`'s claims on the figures published in `where` (every claim whose panels
    are all there) and write claims.rows.json and CLAIMS.md beside them. The claims stage's own
    evaluation reads figures/ and results/ of the working directory: it runs in a throwaway
    copy of that layout holding the published files only, so nothing else can leak in."""
    from airfl.pipeline.stages import claims

    where = Path(where).resolve()
    published = sorted(p.name[:-len(".manifest.json")] for p in where.glob("*.manifest.json"))
    with tempfile.TemporaryDirectory(prefix=".claims.", dir=where.parent) as view:
        for name in published:
            _place(read_csv_bytes(where, name), Path(view) / paths.figure(f"{paper}/{name}", "csv"))
            for kind, source in _claim_inputs(paper, name).items():
                _place((where / f"{name}.{kind}.json").read_bytes(), Path(view) / source)
        with contextlib.chdir(view):
            rows = claims.evaluate_paper(paper, params, published=published)
    write_json(where / "claims.rows.json", {"claims": rows})
    write_text(where / "CLAIMS.md", claims.markdown(rows, params))
    return rows


def _place(data: bytes, destination: Path) -> None:
    """Put a published file's bytes (a CSV already decompressed) where the claims stage reads."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_bytes(data)


def _made_with(targets: list[str], profile: str, overrides: dict[str, Any]) -> None:
    """Stop unless Snakemake has nothing to do for `targets` in `profile` with `overrides`: the
    files in figures/ are then those these parameters and this code make (a figure left by a run
    of another profile, or of older code, is not published under this one)."""
    args = shlex.split(snakemake_command(targets, profile, overrides))
    done = subprocess.run([args[0], "-n", *args[1:]], capture_output=True, text=True)
    said = done.stdout + done.stderr
    if done.returncode != 0 or "Nothing to be done" not in said:
        raise ReferenceError(f"the built files are not what profile {profile} makes now "
                             f"(`{shlex.join([args[0], '-n', *args[1:]])}` plans jobs); run "
                             f"`{shlex.join(args)}` first")


def _swap(staging: Path, target: Path) -> None:
    """Put the assembled folder in place of the published one (two renames; the old copy is
    removed only after the new one is in place)."""
    staging.chmod(0o777 & ~_umask())
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        old.rmdir()
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def manifests(root: Path = ROOT) -> list[Path]:
    """Every committed manifest under reference/."""
    return sorted(root.glob("*/*/*.manifest.json"))


def check_manifest(path: Path, dry_run: bool = True,
                   plans: dict[str, Any] | None = None) -> list[str]:
    """What no longer matches in one manifest, a line each (empty: it matches): keys it
    recorded that no figure job declares now, keys declared now that it lacks, values that
    differ, and, with `dry_run`, whether Snakemake still plans the figure's jobs. `plans`:
    the params and jobs already built, by paper, profile and overrides (`check` shares them
    between the manifests of one paper)."""
    manifest = read_json(path)
    recorded = manifest["params"]
    plans = {} if plans is None else plans
    panel = needs_panels(manifest["paper"], [manifest["figure"]])
    key = json.dumps([manifest["paper"], panel, recorded["profile"],
                      recorded.get("overrides") or {}], sort_keys=True)
    if key not in plans:
        try:
            params = load(recorded["profile"], recorded.get("overrides"))
            plans[key] = (params, paper_jobs(manifest["paper"], params, [manifest["figure"]]))
        except ConfigError as error:
            plans[key] = error
    if isinstance(plans[key], ConfigError):
        said = " ".join(str(plans[key]).split())           # one line, as the CLI prints it
        return [f"{path}: its parameters are no longer valid: {said}"]
    params, all_jobs = plans[key]
    csv = figure_csvs(manifest["paper"], all_jobs).get(manifest["figure"])
    if csv is None:
        return [f"{path}: figure {manifest['figure']!r} is no longer made in profile "
                f"{recorded['profile']}"]
    current = declared_keys(csv, all_jobs)
    problems = [f"{path}: stale key {k} (no job of the figure declares it now)"
                for k in sorted(set(recorded["keys"]) - set(current))]
    problems += [f"{path}: new key {k} (declared now, not in the reference)"
                 for k in sorted(set(current) - set(recorded["keys"]))]
    values = key_values([k for k in current if k in recorded["keys"]], params)
    problems += [f"{path}: {k} is {json.dumps(values[k])} now, the reference used "
                 f"{json.dumps(recorded['keys'][k])}"
                 for k in sorted(values) if values[k] != recorded["keys"][k]]
    if dry_run and not problems:
        args = shlex.split(manifest["rebuild"])
        done = subprocess.run([args[0], "-n", *args[1:]], capture_output=True, text=True)
        if done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).split())[-300:]
            problems.append(f"{path}: `snakemake -n` does not plan the figure: {tail}")
    return problems


def check(root: Path = ROOT, dry_run: bool = True) -> list[str]:
    """`check_manifest` for every manifest under `root`, the jobs built once per paper; with
    `dry_run`, one `snakemake -n` for all the matching figures of one profile and overrides
    (a Snakemake start costs seconds, a manifest a few milliseconds)."""
    plans: dict[str, Any] = {}
    problems: list[str] = []
    planned: dict[str, tuple[str, dict[str, Any], list[str]]] = {}
    for path in manifests(root):
        found = check_manifest(path, dry_run=False, plans=plans)
        problems += found
        if not found:
            recorded = read_json(path)
            config = recorded["params"]
            overrides = config.get("overrides") or {}
            key = json.dumps([config["profile"], overrides], sort_keys=True)
            planned.setdefault(key, (config["profile"], overrides, []))[2].append(
                recorded["source"])
    if dry_run:
        for profile, overrides, sources in planned.values():
            args = shlex.split(snakemake_command(_targets(sources), profile, overrides))
            done = subprocess.run([args[0], "-n", *args[1:]], capture_output=True, text=True)
            if done.returncode != 0:
                tail = " ".join((done.stderr or done.stdout).split())[-300:]
                problems.append(f"{root}: `snakemake -n` does not plan the {profile} "
                                f"figures {', '.join(sources)}: {tail}")
    return problems


def rebuild_command(paper: str, figure: str, profile: str) -> list[str]:
    """The Snakemake command a manifest recorded to rebuild its figure."""
    path = manifest_path(paper, profile, figure)
    if not path.is_file():
        published = sorted(p.name[:-len(".manifest.json")]
                           for p in folder(paper, profile).glob("*.manifest.json"))
        raise ReferenceError(f"no reference figure {paper}/{profile}/{figure}; published: "
                             f"{', '.join(published) or 'none'}")
    return shlex.split(read_json(path)["rebuild"])


def run_targets(paper: str, figures: list[str] | None) -> list[str]:
    """Snakemake's targets for a piece: the figures named (CSV and PNG; not the paper's claims,
    whose job reads every figure of the paper, training included), else the whole paper."""
    return [paper] if not figures else \
        _targets([f"{paths.FIGURES}/{paper}/{f}.csv" for f in figures])


def reused_outputs(paper: str, params: dict[str, Any], figures: list[str] | None,
                   targets: list[str]) -> str | None:
    """Why a run about to start would count only part of its targets' jobs (None: no output of
    them exists yet, so Snakemake makes every one): outputs of some jobs already there, which
    Snakemake may reuse. `run` records it as the manifests' `partial`."""
    from airfl.pipeline.dag import paper_targets
    from airfl.pipeline.plan import needed_jobs

    wanted = [o for t in targets for o in (paper_targets(t, params) if t == paper else [t])]
    needed = needed_jobs(paper_jobs(paper, params, figures), wanted)
    there = [job for job in needed if any(Path(out).exists() for out in
                                          job.outs + [p.path for p in job.plots] + job.metrics)]
    if not there:
        return None
    return (f"outputs of {len(there)} of its {len(needed)} jobs existed when the run started "
            "(Snakemake may have reused them: its CPU time may miss their work; -F remakes "
            "every job)")


def run(paper: str, profile: str, figures: list[str] | None, overrides: dict[str, Any],
        snakemake_args: list[str]) -> list[str]:
    """Run Snakemake for the paper's figures (those named: only their jobs, not the paper's
    claims job, which reads every figure; else the whole paper), measure the wall time and the
    CPU time of every process it started (RUSAGE_CHILDREN), then publish them with that command
    and those times; unless Snakemake remakes every job (`-F`), a run that found outputs of its
    targets' jobs already there is recorded as partial (`reused_outputs`). Snakemake runs
    without the fork server (AIRFL_FORKSERVER is left out of its environment): jobs a server
    forks are the server's children, not ours, and their CPU time would be missing from the
    manifest."""
    import resource
    import time

    targets = run_targets(paper, figures)
    config = config_words(profile, overrides)
    # targets first: an option of Snakemake taking any number of values ends before --config
    args = ["snakemake", *targets, *(snakemake_args or ["--cores", "2"]), "--config", *config]
    forced = any(a in ("-F", "--forceall") for a in args)
    partial = None if forced else reused_outputs(paper, load(profile, overrides), figures,
                                                 targets)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "AIRFL_FORKSERVER"}
    done = subprocess.run(args, env=env)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise ReferenceError(f"`{shlex.join(args)}` failed (exit {done.returncode}); nothing "
                             "published")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return publish(paper, profile, figures, overrides, shlex.join(args), wall, cpu, partial)


def main(args, overrides: dict[str, Any]) -> int:
    """`airfl reference-results <action>` (the CLI's parsed arguments; `overrides`: its `--set`)."""
    import sys

    from airfl.pipeline.reference_pages import write_docs

    try:
        if args.action == "check":
            problems = check(dry_run=not args.no_dry_run)
            for line in problems:
                print(line, file=sys.stderr)
            print(f"{len(manifests())} reference manifests checked, {len(problems)} problems")
            return 1 if problems else 0
        if args.action == "rebuild":
            command = rebuild_command(args.paper, args.figure, args.profile)
            print(shlex.join(command))
            return 0 if args.print_only else subprocess.run(command).returncode
        if args.action == "docs":
            print(write_docs(args.paper))
            return 0
        if args.action == "run":
            names = run(args.paper, args.profile, args.figure, overrides, args.snakemake_args)
        else:
            names = publish(args.paper, args.profile, args.figure, overrides, args.command,
                            args.wall_s, args.cpu_s, args.partial)
        print(f"published {len(names)} figures of {args.paper} into "
              f"{folder(args.paper, args.profile)}: {', '.join(names)}")
        print(write_docs(args.paper))
        return 0
    except (ReferenceError, ConfigError) as error:
        print(f"airfl reference-results: {error}", file=sys.stderr)
        return 2
