"""Benchmark: where a Snakemake run spent its time, job by job, from its own log (the
Biased FL paper profile's time and its split).

Usage (from the repository root)::

    snakemake --cores 2 figures/biased_fl/fig3b_snr30.png --config profile=paper > RUN.log 2>&1
    python benchmarks/snakemake_job_times.py RUN.log [MORE.log ...] [--top 12] [--json OUT]

Snakemake prints a `[timestamp]` line before each job's `rule <name>:` block and before each
`Finished jobid: <n>` line; a job's wall time is the difference (1 s resolution). For each log:
the number of jobs, the log's first-to-last span (the run's wall time), the sum of job walls
by rule (CPU-bound single-threaded jobs: about their CPU time on an idle machine), and the
longest jobs with their wildcards. Only the log is read; nothing is rerun.

With --metadata DIR (a run's `.snakemake/metadata`, which holds each output's job, rule, log and
start and end times: what a run with `-q` leaves when its log names no jobs) the jobs' times are
read from there instead, and --json writes them as {"jobs": {"<stage> <log path's job>": seconds}}
(the table `benchmarks/unit_costs.py --job-times` reads; 0.01 s resolution).

The workflow's job priorities do not read these times: they are each job's planned seconds
(`airfl.pipeline.job_priority`), from the unit costs measured by benchmarks/unit_costs.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\S+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")


def job_times(lines: list[str]) -> tuple[list[dict], float]:
    """[{rule, wildcards, seconds}] of every finished job, and the log's span in seconds."""
    stamp = first = None
    started: dict[str, dict] = {}
    current: dict | None = None
    jobs = []
    for line in lines:
        if m := STAMP.match(line):
            stamp = dt.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            first = first or stamp
        elif m := RULE.match(line):
            current = {"rule": m.group(1), "wildcards": "", "start": stamp}
        elif (m := JOBID.match(line)) and current is not None:
            started[m.group(1)] = current
        elif (m := WILDCARDS.match(line)) and current is not None:
            current["wildcards"] = m.group(1)
        elif (m := FINISHED.match(line)) and m.group(1) in started:
            job = started[m.group(1)]
            jobs.append({"rule": job["rule"], "wildcards": job["wildcards"],
                         "seconds": (stamp - job["start"]).total_seconds()})
    span = (stamp - first).total_seconds() if first and stamp else 0.0
    return jobs, span


def metadata_job_times(directory: Path) -> dict[str, float]:
    """{'<stage> <experiment/curve...>': seconds} of every job recorded in a Snakemake metadata
    folder (one record per output file; a job's outputs share its job_hash), named by its log
    path `logs/<stage>/<rest>.log`."""
    jobs: dict[str, float] = {}
    for record_path in sorted(directory.iterdir()):
        record = json.loads(record_path.read_text())
        logs = record.get("log") or []
        if record.get("incomplete") or not logs or record.get("endtime") is None:
            continue
        parts = Path(logs[0]).with_suffix("").parts     # logs, stage, rest...
        if len(parts) < 3 or parts[0] != "logs":
            continue
        seconds = record["endtime"] - record["starttime"]
        jobs[f"{parts[1]} {'/'.join(parts[2:])}"] = round(seconds, 2)
    return dict(sorted(jobs.items()))


def summary(path: Path, jobs: list[dict], span: float, top: int) -> dict:
    by_rule: dict[str, float] = {}
    for job in jobs:
        by_rule[job["rule"]] = by_rule.get(job["rule"], 0.0) + job["seconds"]
    return {"log": path.name, "jobs": len(jobs), "span_s": span,
            "sum_of_job_walls_s": sum(j["seconds"] for j in jobs), "by_rule_s": by_rule,
            "longest": sorted(jobs, key=lambda j: -j["seconds"])[:top]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", type=Path)
    parser.add_argument("--metadata", type=Path, help="a run's .snakemake/metadata folder")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.metadata:
        jobs = metadata_job_times(args.metadata)
        by_stage: dict[str, float] = {}
        for key, seconds in jobs.items():
            by_stage[key.split()[0]] = by_stage.get(key.split()[0], 0.0) + seconds
        print(f"{len(jobs)} jobs, job walls {sum(jobs.values()):.0f} s ("
              + ", ".join(f"{k} {v:.0f}"
                          for k, v in sorted(by_stage.items(), key=lambda kv: -kv[1]))
              + ")")
        if args.json:
            args.json.write_text(json.dumps({"jobs": jobs}, indent=1) + "\n")
        return 0
    parsed = {path: job_times(path.read_text().splitlines()) for path in args.logs}
    out = [summary(path, jobs, span, args.top) for path, (jobs, span) in parsed.items()]
    for s in out:
        rules = ", ".join(f"{k} {v:.0f}" for k, v in sorted(s["by_rule_s"].items(),
                                                           key=lambda kv: -kv[1]))
        print(f"{s['log']}: {s['jobs']} jobs, span {s['span_s']:.0f} s, job walls "
              f"{s['sum_of_job_walls_s']:.0f} s ({rules})")
        for job in s["longest"]:
            print(f"  {job['seconds']:7.0f} s  {job['rule']:8s} {job['wildcards']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
