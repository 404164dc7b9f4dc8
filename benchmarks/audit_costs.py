"""Benchmark: the unit costs of the privacy audits `airfl plan` reads (`audits` in
workflow/unit_costs.json), measured on short slices, one thread, CPU time of this process.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/audit_costs.py [--profile paper] \
        [--out workflow/unit_costs.json] [--only WING/MECHANISM ...] [--max-points N]

An audit job (`airfl audit <wing> <mechanism>`, stages/audit.py) builds its points with the
wing's audit factory, then per point draws the statistic in both worlds and bounds epsilon
(`airfl.privacy.auditing.run_audit`). What it costs scales with (the plan's model,
`airfl.pipeline.plan`'s docstring):

* points x 2 worlds x draws x releases per draw: a batched sampler
  (`airfl.core.audit_draws.linear_draws`: DP as a perk, LAPA, OTA-FD, the generic DP-FedAvg and
  OTA schemes) gets a draw per coordinate of one release (width 65,536), so its draw costs a
  coordinate of the scheme's aggregation over its devices; a loop sampler (`loop_draws`: CDPB's
  fresh fading and coins a draw) makes one aggregation call a draw (K devices x the audit's
  dimension d); a multi-round statistic (OTA-FD, DP-FedAvg's `multi_round`) sums T releases a
  draw (`AuditableMechanism.releases`);
* per point the bound (`audit_threshold`): a fixed part and a part per draw;
* once, building the points (the factory: designs, accountants);
* where a point's release-draw grows with the model dimension (its `dim`: CDPB's aggregation
  call runs K clients x d coordinates), d: the release-draw is measured at every d of `--dims`
  (and the profile's own d) and stored per d (`release_draw_by_dim`), which the plan and the
  audit stage's cost guard evaluate at the audited point's d (`unit_costs.release_draw_at`).
  A batched draw is one coordinate of a release as wide as the batch, whatever d (DP as a perk,
  LAPA, OTA-FD, the generic schemes, the arena): their points carry no `dim`.

For each registered audit, at the profile's declared settings (`--profile`, paper by default:
the scale the plan must get right), each point is sampled on a slice of its draws (loop:
`--loop-draws`; batched: at least 65,536 draws, `--release-draws` release-draws), after a
warm-up of a few draws, and the CPU time of both worlds divided by their release-draws; the
audit's unit is the mean over its points weighted by their release-draws at full scale (its
points' costs differ by up to ~2x: OTA-FD's soft labels against its FL benchmark). The bound is
timed on Gaussian draws of two sizes (its cost depends on the number of draws only) and fitted
as fixed + per draw. Each slice takes well under a second; the whole run ~20-40 s. At each d
of `--dims` the first `--dim-points` points are sampled, on fewer loop draws the larger d is
(`loop_draws` x min(1, 1000 / d), at least 20), their mean stored for that d: ~10 s for CDPB.

The `audits` section of the table (with this machine and the profile) is replaced; the rest is
kept. With `--only`, only the named audits are measured and replace their entries (each with
its own `measured` record: machine, date, slice), the other entries are kept as stored.
`--max-points N` samples the first N points of an audit (its unit their weighted mean): the
arena's points are alike (one scheme class each, every one the run's T = 200 rounds of the same
devices a draw, ~1 min a point's slice at the paper profile) and its designs are built once for
`factory_s` whatever N. Dated results: benchmarks/results/audit_costs.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from airfl.pipeline.params import load_params
from airfl.pipeline.plan import UNIT_COSTS
from airfl.pipeline.registry import wings
from airfl.pipeline.stages.audit import draws_of
from airfl.privacy.audit import audit_threshold

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unit_costs import machine, write_table  # noqa: E402

BOUND_SIZES = (1 << 14, 1 << 19)          # draws per world of the bound's two timings
WARM_UP = 8                               # draws of the untimed first call of every point
#: The params key of the model dimension of each audit whose points' release-draw grows with it
#: (a point's `dim`); an audit with such points and no key here stops the benchmark.
DIM_KEYS = {"cdpb/cdpb": "audit.cdpb.dim"}
#: The d at which such an audit's release-draw is measured (with the profile's own d): they span
#: the profiles' d (CDPB: 300 in both) by two decades either side.
DIMS = (100, 1000, 3000, 10_000, 30_000)
MIN_DIM_DRAWS = 20                        # loop draws per world at the largest d


def point_release_draw(point, draws: int) -> float:
    """CPU seconds of one release-draw of `point`: both worlds of `draws` draws, after a
    warm-up, over 2 x draws x releases."""
    point.sample("present", WARM_UP, 7)
    start = time.process_time()
    point.sample("present", draws, 1)
    point.sample("absent", draws, 2)
    return (time.process_time() - start) / (2 * draws * point.releases)


def bound_cost(delta: float = 1e-5) -> dict[str, float]:
    """The bound's fixed cost and cost per draw (two worlds counted), from two sizes."""
    rng = np.random.default_rng(0)
    times = []
    for n in BOUND_SIZES:
        present, absent = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)
        audit_threshold(present[:64], absent[:64], delta)                 # warm-up
        start = time.process_time()
        audit_threshold(present, absent, delta)
        times.append(time.process_time() - start)
    draw_s = max((times[1] - times[0]) / (2 * (BOUND_SIZES[1] - BOUND_SIZES[0])), 0.0)
    return {"fixed_s": max(times[0] - 2 * BOUND_SIZES[0] * draw_s, 0.0), "draw_s": draw_s}


def slice_draws(params, point, loop_draws: int, release_draws: int) -> int:
    """Draws per world of a point's timed slice: `loop_draws` for a loop sampler (fewer above
    d = 1,000 where its release-draw grows with d), else >= 65,536 coordinates of a release."""
    full = draws_of(params, point)
    if point.batched:
        return min(full, max(1 << 16, release_draws // point.releases))
    if point.dim is not None:
        loop_draws = max(MIN_DIM_DRAWS, int(loop_draws * min(1.0, 1000 / point.dim)))
    return min(full, loop_draws)


def dim_slice(profile: str, key: str, dim: int, loop_draws: int, release_draws: int,
              dim_points: int) -> dict[str, list[float]]:
    """Per kind, the release-draws of the first `dim_points` points of audit `key` built with
    `DIM_KEYS[key]` set to `dim` (run in a fresh process by `measure_by_dim`)."""
    wing_name, name = key.split("/", 1)
    wing = next(w for w in wings() if w.name == wing_name)
    at = load_params("params.yaml", {"profile": profile, DIM_KEYS[key]: dim})
    units: dict[str, list[float]] = {}
    for point in wing.audit_factory(name)(at)[:dim_points]:
        kind = "batched" if point.batched else "loop"
        units.setdefault(kind, []).append(
            point_release_draw(point, slice_draws(at, point, loop_draws, release_draws)))
    return units


def measure_by_dim(params, key: str, loop_draws: int, release_draws: int,
                   dims: tuple[int, ...], dim_points: int) -> dict:
    """Per kind, the release-draw at each d (`dims` and the profile's own, sorted): the mean
    over the first `dim_points` points built with `DIM_KEYS[key]` set to d, each d in a fresh
    process as an audit job runs: the allocator's state matters above d ~ 1,000 (CDPB at
    d = 2,000: 2.5 ms a draw in a fresh process, 0.6 ms after smaller d in the same process,
    which raised glibc's mmap threshold; the job pays the first)."""
    import json
    import subprocess

    from airfl.params.declare import resolve

    dotted = DIM_KEYS[key]
    base = params
    for part in dotted.split("."):
        base = base[part]
    dims = sorted(set(dims) | {int(resolve(base, params["profile"]))})
    out: dict[str, dict[str, list]] = {}
    for dim in dims:
        line = subprocess.run(
            [sys.executable, __file__, "--profile", params["profile"], "--dim-slice", key,
             str(dim), "--loop-draws", str(loop_draws), "--release-draws", str(release_draws),
             "--dim-points", str(dim_points)],
            check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        units = json.loads(line)
        for kind, values in units.items():
            print(f"  d = {dim:>6d} {kind:7s} " + " ".join(f"{v * 1e3:.4f}" for v in values)
                  + " ms a release-draw", flush=True)
            entry = out.setdefault(kind, {"dims": [], "release_draw_s": [],
                                          "points": dim_points})
            entry["dims"].append(dim)
            entry["release_draw_s"].append(sum(values) / len(values))
    return out


def measure(params, wing, name: str, loop_draws: int, release_draws: int,
            max_points: int | None = None, key: str = "", dims: tuple[int, ...] = DIMS,
            dim_points: int = 2) -> dict:
    start = time.process_time()
    points = wing.audit_factory(name)(params)
    factory_s = time.process_time() - start
    spent: dict[str, float] = {}
    work: dict[str, float] = {}
    if any(point.dim is not None for point in points) and key not in DIM_KEYS:
        raise SystemExit(f"audit_costs: {key}'s points grow with the model dimension (dim) and "
                         "DIM_KEYS names no params key of it; add one")
    for point in points[:max_points]:
        full = draws_of(params, point)
        kind = "batched" if point.batched else "loop"
        draws = slice_draws(params, point, loop_draws, release_draws)
        unit = point_release_draw(point, draws)
        release_draws_full = 2.0 * full * point.releases
        spent[kind] = spent.get(kind, 0.0) + unit * release_draws_full
        work[kind] = work.get(kind, 0.0) + release_draws_full
        print(f"  {point.name:36s} {kind:7s} {draws:>8d} draws x {point.releases:>3d} releases"
              f"  {unit * 1e6:9.4f} us a release-draw", flush=True)
    by_dim = measure_by_dim(params, key, loop_draws, release_draws, dims,
                            dim_points) if key in DIM_KEYS else {}
    return {"release_draw_s": {k: spent[k] / work[k] for k in spent},
            **({"release_draw_by_dim": by_dim} if by_dim else {}),
            "factory_s": round(factory_s, 4), "points": len(points)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="paper", choices=("quick", "paper"))
    parser.add_argument("--loop-draws", type=int, default=400,
                        help="draws per world of a loop sampler's slice")
    parser.add_argument("--release-draws", type=int, default=1 << 18,
                        help="release-draws per world of a batched sampler's slice")
    parser.add_argument("--out", type=Path, default=UNIT_COSTS)
    parser.add_argument("--only", action="append", metavar="WING/MECHANISM",
                        help="measure only this audit (repeatable); the others stay as stored")
    parser.add_argument("--max-points", type=int, default=None,
                        help="sample at most this many points of each audit")
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS),
                        help="model dimensions at which a release-draw growing with d is "
                        "measured (with the profile's own d)")
    parser.add_argument("--dim-points", type=int, default=2,
                        help="points sampled at each of --dims")
    parser.add_argument("--dim-slice", nargs=2, metavar=("WING/MECHANISM", "D"),
                        help="print, as JSON, one audit's release-draws at one d and stop "
                        "(what the full run starts in a fresh process per d)")
    args = parser.parse_args(argv)
    if len(set(args.dims)) < 2 or min(args.dims) < 1:
        parser.error(f"--dims {args.dims}: need >= 2 distinct positive dimensions")
    if args.dim_slice:
        import json
        key, dim = args.dim_slice
        if key not in DIM_KEYS:
            parser.error(f"--dim-slice {key}: not in DIM_KEYS ({', '.join(sorted(DIM_KEYS))})")
        print(json.dumps(dim_slice(args.profile, key, int(dim), args.loop_draws,
                                   args.release_draws, args.dim_points)))
        return 0
    params = load_params("params.yaml", {"profile": args.profile})
    bound = bound_cost()
    print(f"bound: {bound['fixed_s'] * 1e3:.2f} ms + {bound['draw_s'] * 1e9:.1f} ns a draw")
    registered = {f"{wing.name}/{name}": wing for wing in wings() for name in wing.audits}
    unknown = sorted(set(args.only or ()) - set(registered))
    if unknown:
        parser.error(f"--only {unknown[0]}: not a registered audit; registered: "
                     + ", ".join(sorted(registered)))
    measured = {**machine(), "profile": args.profile, "loop_draws": args.loop_draws,
                "release_draws": args.release_draws, "max_points": args.max_points,
                "dims": sorted(args.dims), "dim_points": args.dim_points,
                "bound_sizes": list(BOUND_SIZES), "method": "benchmarks/audit_costs.py"}
    section: dict = {}
    for key in sorted(args.only or registered):
        print(key, flush=True)
        section[key] = {**measure(params, registered[key], key.split("/", 1)[1],
                                  args.loop_draws, args.release_draws, args.max_points,
                                  key, args.dims, args.dim_points),
                        "bound": bound, **({"measured": measured} if args.only else {})}
    import json
    table = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.only:
        table["audits"] = {**table.get("audits", {}), **section}
    else:
        table["audits"] = {**section, "measured": measured}
    write_table(args.out, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
