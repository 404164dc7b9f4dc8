"""Benchmark: the unit costs `airfl plan` reads (workflow/unit_costs.json), measured on this
machine, one thread, CPU time of this process.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/unit_costs.py \
        --job-times benchmarks/results/quick_job_times.json [--out workflow/unit_costs.json]

What it measures (the plan's cost model is in `airfl.pipeline.plan`):

* per model and batch size the plan's train jobs use in the quick and paper profiles: one SGD
  step of one client (`airfl.core.engine.local_sgd`, the engine `auto` runs, fp32), timed as
  `--clients` clients x `--steps` steps on random inputs of the dataset's shape, median of
  `--repeats` after a warm-up, divided by clients x steps;
* per model: one evaluation forward of one sample (`evaluate_many` on 2,048 samples);
* per model trained by full-batch gradient uploads: one sample's gradient when `--lockstep` runs
  go together (`client_gradients_many`, 10 clients x 100 samples, Biased FL's size);
* per stage of the stage table: a job's fixed cost, the median job of that stage in a
  measured Snakemake run (`--job-times`, written by `snakemake_job_times.py --metadata
  .snakemake/metadata --json`); the training stages get the design stage's median as their
  start-up, and a stage the run did not time its stand-in's (`STAND_INS`).

The machine (CPU model, logical cores, load average, date, torch version) is stored with the
numbers. A GPU unit cost, when one was measured (benchmarks/device_check.py), is kept, and so
are the horizon-bounded runs (horizon_rounds.py) and the audits (audit_costs.py).

`--step-update --models M` updates the client steps of models M alone after their step
changed (cnn_step.py's hand-written step replacing autograd's): it times both steps at every
batch size the plan needs in one run, interleaved, and scales the stored `client_step_s` by
their ratio (the load of the stored measurement kept); the ratios and the machine of that run
are stored as `step_update`.

`--eval-only` updates the evaluation forward alone after a change of the evaluation's chunk
(a model's `eval_chunk` in `airfl.models.flat`): it times the forward with the old chunk
(`--old-chunk`, one chunk of all 2,048 samples before) and the current one in one run and
scales the stored `eval_sample_s` by their ratio (the load of the stored measurement kept),
keeping the stored client steps, lockstep samples and stage costs; the ratios and the machine
of that run are stored as `eval_update`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from airfl.core.engine import (ClientData, client_gradients_many, eval_rows, evaluate_many,
                               local_sgd)
from airfl.data import dataset_info
from airfl.models.flat import build_model
from airfl.pipeline.params import load_params
from airfl.pipeline.plan import UNIT_COSTS
from airfl.pipeline.train_cost import train_work

EVAL_SAMPLES = 2048
KEPT_SECTIONS = ("horizon_runs", "audits")   # measured by horizon_rounds.py, audit_costs.py


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    return {"cpu": cpu_model(), "logical_cores": os.cpu_count(), "threads": torch.get_num_threads(),
            "date": dt.date.today().isoformat(), "torch": torch.__version__,
            "python": platform.python_version(), "load_average": list(os.getloadavg())}


def required(params_paths: str = "params.yaml") -> dict[str, dict]:
    """{model: {"shape": image shape, "batches": set of batch sizes}} over both profiles' train,
    tune and calibrate jobs."""
    from airfl.pipeline.registry import active_experiments
    out: dict[str, dict] = {}
    for profile in ("quick", "paper"):
        params = load_params(params_paths, {"profile": profile})
        for experiment in active_experiments(params):
            block = experiment.params(params)
            for curve in block["curves"].values():
                work = train_work(experiment, block, curve)
                entry = out.setdefault(work.model, {"dataset": block["dataset"], "batches": set(),
                                                    "lockstep": False})
                if work.lockstep_samples:
                    entry["lockstep"] = True
                else:
                    entry["batches"].add(work.batch)
    return out


def client_step(model_name: str, dataset: str, batch: int, clients: int, steps: int,
                repeats: int, manual_step: bool = True) -> float:
    """CPU seconds of one client's SGD step; `manual_step` False: the autograd step (the
    step a model without cnn_step.py's hand-written one ran)."""
    info = dataset_info(dataset)
    model = build_model(model_name, info.image_shape, info.num_classes)
    model.manual_step = manual_step
    gen = torch.Generator().manual_seed(0)
    per_client = max(batch, 64)
    n = clients * per_client
    x = torch.randn(n, *info.image_shape, generator=gen)
    y = torch.randint(0, info.num_classes, (n,), generator=gen)
    data = ClientData(x, y, torch.arange(n), torch.arange(0, n + 1, per_client),
                      torch.full((clients,), per_client))
    params = model.init(torch.Generator().manual_seed(1))
    local_sgd(model, params, data, 1, batch, 0.01, torch.Generator().manual_seed(2))   # warm-up
    times = []
    for _ in range(repeats):
        start = time.process_time()
        local_sgd(model, params, data, steps, batch, 0.01, torch.Generator().manual_seed(2))
        times.append((time.process_time() - start) / (clients * steps))
    return statistics.median(times)


def eval_sample(model_name: str, dataset: str, repeats: int, chunk: int | None = None) -> float:
    info = dataset_info(dataset)
    model = build_model(model_name, info.image_shape, info.num_classes)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(EVAL_SAMPLES, *info.image_shape, generator=gen)
    y = torch.randint(0, info.num_classes, (EVAL_SAMPLES,), generator=gen)
    params = model.init(torch.Generator().manual_seed(1)).unsqueeze(0)
    evaluate_many(model, params, x[:64], y[:64])
    times = []
    for _ in range(repeats):
        start = time.process_time()
        evaluate_many(model, params, x, y, chunk=chunk)
        times.append((time.process_time() - start) / EVAL_SAMPLES)
    return statistics.median(times)


def lockstep_sample(model_name: str, dataset: str, runs: int, repeats: int,
                    clients: int = 10, per_client: int = 100) -> float:
    info = dataset_info(dataset)
    model = build_model(model_name, info.image_shape, info.num_classes)
    gen = torch.Generator().manual_seed(0)
    n = clients * per_client
    x = torch.randn(n, *info.image_shape, generator=gen)
    y = torch.randint(0, info.num_classes, (n,), generator=gen)
    data = ClientData(x, y, torch.arange(n), torch.arange(0, n + 1, per_client),
                      torch.full((clients,), per_client))
    batch = data.full_batch()
    params = model.init(torch.Generator().manual_seed(1)).unsqueeze(0).repeat(runs, 1)
    client_gradients_many(model, params, batch)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        client_gradients_many(model, params, batch)
        times.append((time.process_time() - start) / (runs * n))
    return statistics.median(times)


STAND_INS = {"train": "design", "tune": "design", "calibrate": "design", "trials": "design",
             "derive": "design", "claims": "figure"}
"""A stage costed by another's median job: the training stages' start-up is the design job's
(the same process start, imports and data loading, without the training the plan adds), and
a stage the measured run did not time is costed by its nearest kind: derive (reads stored
runs, solves a step between trainings) by design, claims (reads stored tables, writes text) by
figure."""


def stage_costs(job_times: Path) -> dict[str, float]:
    """Every stage of the stage table's fixed cost: its median job in the measured run, or
    its stand-in's (`STAND_INS`); a stage with neither stops here, naming it."""
    from airfl.pipeline.stage_table import STAGES

    jobs = json.loads(job_times.read_text())["jobs"]
    by_stage: dict[str, list[float]] = {}
    for key, seconds in jobs.items():
        by_stage.setdefault(key.split()[0], []).append(float(seconds))
    out = {stage: round(statistics.median(v), 3) for stage, v in sorted(by_stage.items())
           if stage not in ("train", "tune", "calibrate")}
    for record in STAGES:
        if record.name in ("train", "tune", "calibrate") or record.name not in out:
            stand_in = STAND_INS.get(record.name)
            if stand_in not in out:
                raise SystemExit(f"stage {record.name!r}: no job of it in {job_times} and no "
                                 "stand-in measured (STAND_INS)")
            out[record.name] = out[stand_in]
    return out


def eval_only(previous: dict, wanted: dict[str, dict], args) -> int:
    """Scale `eval_sample_s` of the `wanted` models in the stored table `args.out` by the
    ratio of the current chunk's forward to the old chunk's, both timed in this run."""
    if not previous.get("models"):
        raise SystemExit(f"--eval-only: {args.out} holds no measured models to update")
    ratios = {}
    for name, entry in sorted(wanted.items()):
        info = dataset_info(entry["dataset"])
        model = build_model(name, info.image_shape, info.num_classes)
        if name not in previous["models"] or getattr(model, "eval_batch", None) \
                or eval_rows(model) == args.old_chunk:      # the same forwards as measured
            continue
        old = eval_sample(name, entry["dataset"], args.repeats, chunk=args.old_chunk)
        new = eval_sample(name, entry["dataset"], args.repeats)
        ratios[name] = new / old
        previous["models"][name]["eval_sample_s"] *= ratios[name]
        print(f"{name:12s} eval: {old * 1e6:9.2f} us per sample in chunks of {args.old_chunk},"
              f" {new * 1e6:9.2f} now (x{ratios[name]:.3f})", flush=True)
    previous["eval_update"] = {"machine": machine(), "old_chunk": args.old_chunk,
                               "ratio_new_to_old": ratios}
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(previous, indent=1) + "\n")
    tmp.replace(args.out)
    return 0


def step_update(previous: dict, wanted: dict[str, dict], args) -> int:
    """Scale `client_step_s` of the `--models` in the stored table `args.out` by the ratio of
    the current step (cnn_step.py's hand-written one where the model has it) to the autograd
    step, both timed in this run, interleaved, at every stored batch size (the load of the
    stored measurement kept); the ratios and the machine are stored as `step_update`."""
    if not args.models:
        raise SystemExit("--step-update: name the models whose step changed (--models)")
    ratios = {}
    for name, entry in sorted(wanted.items()):
        if name not in previous.get("models", {}):
            raise SystemExit(f"--step-update: {args.out} holds no measured step of {name}")
        ratios[name] = {}
        for batch in sorted(entry["batches"]):
            big = batch > 500
            clients, steps = (1, 1) if big else (args.clients, args.steps)
            old, new = [], []
            for _ in range(args.repeats):                 # interleaved, median of each
                old.append(client_step(name, entry["dataset"], batch, clients, steps, 1, False))
                new.append(client_step(name, entry["dataset"], batch, clients, steps, 1, True))
            ratio = statistics.median(new) / statistics.median(old)
            ratios[name][str(batch)] = ratio
            previous["models"][name]["client_step_s"][str(batch)] *= ratio
            print(f"{name:12s} batch {batch:5d}: autograd {statistics.median(old) * 1e3:8.3f} ms,"
                  f" now {statistics.median(new) * 1e3:8.3f} ms per client step (x{ratio:.3f})",
                  flush=True)
    previous["step_update"] = {"machine": machine(), "old": "autograd step",
                               "ratio_new_to_old": ratios}
    write_table(args.out, previous)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job-times", type=Path, default=None,
                        help="required unless --eval-only")
    parser.add_argument("--eval-only", action="store_true",
                        help="scale eval_sample_s by the measured new/old chunk ratio only")
    parser.add_argument("--old-chunk", type=int, default=4096)
    parser.add_argument("--step-update", action="store_true",
                        help="scale client_step_s of --models by the measured hand-written/"
                        "autograd step ratio only")
    parser.add_argument("--out", type=Path, default=UNIT_COSTS)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lockstep", type=int, default=15, help="runs in one lockstep")
    parser.add_argument("--models", default=None, help="comma-separated subset (default: all "
                        "the plan needs)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    wanted = required()
    if args.models:
        wanted = {m: v for m, v in wanted.items() if m in args.models.split(",")}
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.eval_only:
        return eval_only(previous, wanted, args)
    if args.step_update:
        return step_update(previous, wanted, args)
    if args.job_times is None:
        parser.error("--job-times is required (unless --eval-only)")
    models = previous.get("models", {}) if args.models else {}
    for name, entry in sorted(wanted.items()):
        steps = {}
        for batch in sorted(entry["batches"]):
            big = name == "resnet18_gn" or batch > 500
            seconds = client_step(name, entry["dataset"], batch, 1 if big else args.clients,
                                  1 if big else args.steps, args.repeats)
            steps[str(batch)] = seconds
            print(f"{name:12s} batch {batch:5d}: {seconds * 1e3:9.3f} ms per client step",
                  flush=True)
        models[name] = {"dataset": entry["dataset"], "client_step_s": steps,
                        "eval_sample_s": eval_sample(name, entry["dataset"], args.repeats)}
        if entry["lockstep"]:
            models[name]["lockstep_sample_s"] = lockstep_sample(name, entry["dataset"],
                                                                args.lockstep, args.repeats)
            print(f"{name:12s} lockstep gradient: "
                  f"{models[name]['lockstep_sample_s'] * 1e6:9.3f} us per sample and run",
                  flush=True)
        print(f"{name:12s} eval: {models[name]['eval_sample_s'] * 1e6:9.2f} us per sample",
              flush=True)
    table = {"machine": machine(), "clock": "cpu (time.process_time, one thread)",
             "method": "benchmarks/unit_costs.py", "job_times": str(args.job_times),
             "stage_s": stage_costs(args.job_times), "models": models,
             "gpu": previous.get("gpu", {}),
             **{k: previous[k] for k in KEPT_SECTIONS if k in previous}}
    write_table(args.out, table)
    return 0


def write_table(path: Path, table: dict) -> None:
    """Write the unit-cost table atomically (a temporary file beside it, then renamed)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table, indent=1) + "\n")
    tmp.replace(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
