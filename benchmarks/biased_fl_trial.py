"""Benchmark: where the time of one paper-scale Biased FL trial goes.

Usage (from the repository root, one thread)::

    OMP_NUM_THREADS=1 python benchmarks/biased_fl_trial.py [--workdir DIR] [--json OUT]
        [--ota CURVE] [--digital CURVE] [--offset-db DB] [--repeats N]

It builds, in a scratch folder (default: a temporary one), the paper profile's inputs the trial
needs (MNIST from the data mirror, the reference w*, the panel's partition, the curve's design for
trial 0) with the pipeline's own stages, then runs trial 0 of one OTA curve (Fig. 2(b),
default `proposed`) and one digital curve (Fig. 3(b), default `proposed`) exactly as the train
stage does (`airfl.pipeline.stages.train.run_trials`, paper profile: full 10,000-image test set, the
panel's evaluation schedule), once as the train stage runs it and once as the tune stage runs it
(`final_only`: evaluation only at the end). Each run is timed whole and split by wrapping the round
loop's parts (the wrappers only add perf_counter calls):

* local gradients: `airfl.core.loop.client_updates` (full-batch gradients of the N devices);
* aggregation: the scheme's `aggregate` (channel-dependent weights, quantization, noise draw);
* channel draw: `airfl.core.loop.draw_channel_power` (|h|^2 of the round, its stream);
* server step: `airfl.core.loop.server_step` (gradient step and projection);
* evaluation: `DeferredEvaluation.flush` (batched test / train / objective evaluation);
* Python overhead: the rest of the trial (round streams, records, rows, the DataFrame).

Times are the minimum over `--repeats` runs (the machine is shared); the outputs of the timed runs
are checked to be byte-identical to each other (determinism).

Tune job inputs, before/after in this one run: the tune stage runs each of the grid's candidate
step sizes through `run_trials`, which loads the devices' data and the test set. Before the
per-process cache (`airfl.pipeline.trial.dataset_split`) every candidate re-read and md5-checked
MNIST ("cold"); now only the first does ("warm" for the others). Reported: one candidate's input
preparation cold and warm, and a 5-candidate tune job's total, 5 x cold vs cold + 4 x warm.

Quantizer, before/after in this one run: the proposed digital scheme quantizes only the rows of
the devices that transmit (`weighted_quantized_sums` on the rows of `Plan.used`; ~1 of 10 at the
literal SNR). The digital trial runs again with every row quantized (weight 0 on the others) and
the two tables are compared byte for byte.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import tempfile
import time
from pathlib import Path

import torch
import yaml

import airfl.core.loop as loop
from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment

PARTS = ("local gradients", "aggregation", "channel draw", "server step", "evaluation")


class Timers:
    """Accumulated seconds per part and calls per wrapped function, filled by wrappers around
    the round loop's functions (also used by tune_batching.py with its own parts)."""

    def __init__(self, parts=PARTS):
        self.seconds = dict.fromkeys(parts, 0.0)
        self.calls: dict[str, int] = {}

    def wrap(self, part, fn):
        def timed(*args, **kwargs):
            self.calls[fn.__name__] = self.calls.get(fn.__name__, 0) + 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start
        return timed


@contextlib.contextmanager
def instrumented(timers: Timers):
    """Wrap the loop's parts (module attributes the loop looks up at call time)."""
    originals = {"client_updates": loop.client_updates, "draw_channel_power": loop.draw_channel_power,
                 "server_step": loop.server_step, "flush": loop.DeferredEvaluation.flush}
    loop.client_updates = timers.wrap("local gradients", originals["client_updates"])
    loop.draw_channel_power = timers.wrap("channel draw", originals["draw_channel_power"])
    loop.server_step = timers.wrap("server step", originals["server_step"])
    loop.DeferredEvaluation.flush = timers.wrap("evaluation", originals["flush"])
    try:
        yield
    finally:
        loop.client_updates = originals["client_updates"]
        loop.draw_channel_power = originals["draw_channel_power"]
        loop.server_step = originals["server_step"]
        loop.DeferredEvaluation.flush = originals["flush"]


def paper_params(repo: Path) -> dict:
    raw = yaml.safe_load((repo / "params.yaml").read_text())
    raw["profile"] = "paper"
    raw["threads"] = 1
    return validate_params(raw)


def prepare(params: dict, experiment_id: str, curve: str, curve_params: dict) -> list[dict]:
    """The paper profile's inputs of one curve: data, reference, partition, trial 0's design."""
    from airfl.pipeline import paths
    from airfl.pipeline import trial as setup
    from airfl.pipeline.stages import data, partition, reference
    from airfl.pipeline.runs import design_trials

    experiment = get_experiment(experiment_id)
    if not paths.dataset_manifest("mnist").exists():
        data.run(params, "mnist")
    if not paths.reference("biased_fl", "json").exists():
        reference.run(params, "biased_fl")
    if not paths.partition(experiment_id).exists():
        partition.run(params, experiment_id)
    for split in ("train", "test"):         # the trials' times exclude reading MNIST
        setup.dataset_split("mnist", str(params["data"]["root"]), split)
    return design_trials(params, experiment_id, experiment.params(params), curve, curve_params,
                         range(1))


def timed_trial(params: dict, experiment_id: str, curve: str, curve_params: dict,
                designs: list[dict], final_only: bool) -> tuple[dict, bytes]:
    """Run trial 0 as the train (or tune) stage does; the split and the table's bytes."""
    import airfl.core.scheme as scheme_module
    from airfl.pipeline.runs import run_trials

    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    timers = Timers()
    build = scheme_module.build_scheme

    def build_timed(name, kind_params):          # time the scheme's aggregate of this run
        scheme = build(name, kind_params)
        scheme.aggregate = timers.wrap("aggregation", scheme.aggregate)
        return scheme

    import airfl.pipeline.stages.train as train
    train.build_scheme = build_timed
    try:
        with instrumented(timers):
            start = time.perf_counter()
            frame, _ = run_trials(params, experiment, block, curve, curve_params,
                                  curve_params.get("eta", block["training"]["server_lr"]),
                                  designs, range(1), progress=False, final_only=final_only)
            total = time.perf_counter() - start
    finally:
        train.build_scheme = build
    split = {part: round(s, 4) for part, s in timers.seconds.items()}
    split["Python overhead"] = round(total - sum(timers.seconds.values()), 4)
    rounds = int(frame["round"].max())
    return ({"total_s": round(total, 4), "rounds": rounds,
             "ms_per_round": round(1e3 * total / max(rounds, 1), 4), "split_s": split},
            frame.to_csv(index=False).encode())


def measure(params, experiment_id, curve, offset_db, repeats) -> dict:
    experiment = get_experiment(experiment_id)
    curve_params = copy.deepcopy(experiment.params(params)["curves"][curve])
    curve_params["snr_offset_db"] = offset_db
    designs = prepare(params, experiment_id, curve, curve_params)
    out = {}
    for mode, final_only in (("train", False), ("tune", True)):
        runs = [timed_trial(params, experiment_id, curve, curve_params, designs, final_only)
                for _ in range(repeats)]
        identical = all(r[1] == runs[0][1] for r in runs)
        best = min((r[0] for r in runs), key=lambda r: r["total_s"])
        out[mode] = {**best, "byte_identical_over_repeats": identical}
    return out


def tune_inputs(params, experiment_id: str, repeats: int) -> dict:
    """One candidate's input preparation (devices' data, test set, training-loss subset), with
    the split cache cleared (as before the cache) and filled (after)."""
    from airfl.pipeline import trial as setup

    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    device = torch.device("cpu")

    def prepare_inputs():
        start = time.perf_counter()
        data = setup.client_data(params, block, setup.load_partition(experiment_id, block, 0),
                                 device)
        setup.test_data(params, block, device)
        setup.train_eval_data(params, block, data, experiment_id)
        return time.perf_counter() - start

    cold, warm = [], []
    for _ in range(repeats):
        setup.dataset_split.cache_clear()
        cold.append(prepare_inputs())
        warm.append(prepare_inputs())
    cold_s, warm_s = min(cold), min(warm)
    return {"candidate_cold_s": round(cold_s, 4), "candidate_warm_s": round(warm_s, 4),
            "tune_job_5_candidates_before_s": round(5 * cold_s, 4),
            "tune_job_5_candidates_after_s": round(cold_s + 4 * warm_s, 4),
            "saved_per_tune_job_s": round(4 * (cold_s - warm_s), 4)}


def quantizer_before_after(params, curve: str, offset_db: float, repeats: int) -> dict:
    """The digital trial with every row quantized (before) and with only the transmitting rows
    (after), in this run; byte-identical tables expected."""
    import dataclasses

    from airfl.papers.biased_fl.schemes import digital as schemes_digital

    experiment_id = "biased_fl/fig3b"
    curve_params = copy.deepcopy(get_experiment(experiment_id).params(params)["curves"][curve])
    curve_params["snr_offset_db"] = offset_db
    designs = prepare(params, experiment_id, curve, curve_params)
    original = schemes_digital.weighted_quantized_sums   # aggregate_many looks it up at call time

    def every_row(x, scale, plans, states):         # unused rows computed, then weighted by 0
        return original(x, scale, [dataclasses.replace(plan, used=torch.ones_like(plan.used))
                                   for plan in plans], states)

    out = {}
    for label, fn in (("before", every_row), ("after", original)):
        schemes_digital.weighted_quantized_sums = fn
        try:
            runs = [timed_trial(params, experiment_id, curve, curve_params, designs, True)
                    for _ in range(repeats)]
        finally:
            schemes_digital.weighted_quantized_sums = original
        best = min((r[0] for r in runs), key=lambda r: r["total_s"])
        out[label] = {"total_s": best["total_s"], "aggregation_s": best["split_s"]["aggregation"],
                      "table": runs[0][1]}
    identical = out["before"].pop("table") == out["after"].pop("table")
    return {**out, "byte_identical": identical,
            "speed_up_trial": round(out["before"]["total_s"] / out["after"]["total_s"], 3),
            "speed_up_aggregation": round(out["before"]["aggregation_s"]
                                          / out["after"]["aggregation_s"], 3)}


def report(name: str, result: dict) -> None:
    for mode, r in result.items():
        print(f"{name} [{mode}]: {r['total_s']:.2f} s, {r['rounds']} rounds, "
              f"{r['ms_per_round']:.3f} ms/round, byte-identical: {r['byte_identical_over_repeats']}")
        for part, s in r["split_s"].items():
            print(f"    {part:16s} {s:8.3f} s  {100 * s / r['total_s']:5.1f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=None, help="scratch folder (default: temporary)")
    parser.add_argument("--ota", default="proposed", help="curve of biased_fl/fig2b")
    parser.add_argument("--digital", default="proposed", help="curve of biased_fl/fig3b")
    parser.add_argument("--offset-db", type=float, default=0.0, help="SNR offset, dB (E_s scaled by 10^(offset/10))")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    repo = Path(__file__).resolve().parents[1]
    params = paper_params(repo)
    import airfl.schemes  # noqa: F401  (registers the generic schemes)

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="airfl-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    results = {"offset_db": args.offset_db, "threads": torch.get_num_threads(),
               "ota": {"curve": f"biased_fl/fig2b {args.ota}",
                       **measure(params, "biased_fl/fig2b", args.ota, args.offset_db, args.repeats)},
               "digital": {"curve": f"biased_fl/fig3b {args.digital}",
                           **measure(params, "biased_fl/fig3b", args.digital, args.offset_db,
                                     args.repeats)}}
    results["tune_inputs"] = tune_inputs(params, "biased_fl/fig2b", max(args.repeats, 3))
    for kind in ("ota", "digital"):
        report(results[kind]["curve"], {m: results[kind][m] for m in ("train", "tune")})
    print("tune job inputs (biased_fl/fig2b):", json.dumps(results["tune_inputs"]))
    results["quantizer"] = quantizer_before_after(params, args.digital, args.offset_db,
                                                  args.repeats)
    print("digital trial (tune mode), every row vs transmitting rows quantized:",
          json.dumps(results["quantizer"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
