"""What `airfl plan` charges an audit job beyond its stage's fixed cost.

An audit job (`airfl audit <wing> <mechanism>`, stages/audit.py) costs its stage's fixed cost
plus its work at its params: the points the wing's audit factory builds (`factory_s`; the plan
reads their work from what the wing registers of it without building them, `Wing.audit_works`,
where building them is expensive, as the arena's designs are, else builds them too; the job's
own cost guard costs the points it built), each drawn in 2 worlds x its draws (the stage's count:
`audit.draws` for a batched sampler, `audit.loop_draws` for one aggregation call a draw, or the
point's own), each draw summing `releases` releases (a multi-round statistic: T rounds), at
the measured CPU seconds of one release-draw of the audit's kind (benchmarks/audit_costs.py:
a batched draw is a coordinate of a linear release, ~0.1-1 us, a loop draw one aggregation
call, ~0.3 ms for CDPB), plus per point the bound (`audit_threshold`) at its measured fixed cost
and cost per draw. The draws and points come from the params, so `--set audit.loop_draws...`
is costed as run. Where a release-draw's cost grows with the model dimension (a point's
`dim`: CDPB's loop draw, one aggregation call over K clients x d coordinates) it is costed at
the point's d from the release-draws measured at several d (`release_draw_by_dim`,
`unit_costs.release_draw_at`), so `--set audit.cdpb.dim=...` is costed as run too; a batched
draw is one coordinate of a release as wide as the batch whatever d (DP as a perk, LAPA,
OTA-FD, the generic schemes, the arena), and the generic DP-FedAvg's loop draw (q < 1) runs a
2-coordinate release: their release-draws are measured at the profile's settings. What a
release costs at other devices is not modelled. The stage's fixed cost (the median quick audit
job) includes a quick audit's own draws, ~1-3 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airfl.params.config import ConfigError
from airfl.pipeline.unit_costs import UnitCosts, release_draw_at


@dataclass
class AuditWork:
    """What an audit job computes (the stage `audit`, `stages.audit.run`): per kind of
    sampler ("batched" or "loop") its release-draws, 2 worlds x draws x releases summed over
    the points; of them, those of points whose release-draw grows with the model dimension,
    per (kind, d) (`by_dim`); and per point the draws the bound reads (2 x draws)."""

    release_draws: dict[str, float]
    bound_draws: list[int]
    by_dim: dict[tuple[str, int], float] = field(default_factory=dict)


def audit_work(params: dict[str, Any], wing: str, mechanism: str,
               points: list | None = None) -> AuditWork:
    """The work of `airfl audit <wing> <mechanism>` at these params: its points (`points`, as
    the stage built them; else what the wing registers of their work without building them,
    `Wing.audit_works`; else the wing's audit factory's, built here as the stage builds them),
    each drawn `draws_of` times per world (the stage's count: `audit.draws`, `audit.loop_draws`
    or the point's own), each draw summing `releases` releases (a multi-round statistic)."""
    from airfl.pipeline.registry import get_wing
    from airfl.pipeline.stages.audit import draws_of

    if points is not None:
        works = [point.work() for point in points]
    else:
        try:
            registered = get_wing(wing)
            cheap = registered.audit_work_function(mechanism)
            works = cheap(params) if cheap is not None else \
                [point.work() for point in registered.audit_factory(mechanism)(params)]
        except KeyError as error:
            raise ConfigError(f"plan: {error.args[0]}") from None
    work = AuditWork({}, [])
    for point in works:
        draws = draws_of(params, point)
        kind = "batched" if point.batched else "loop"
        work.release_draws[kind] = work.release_draws.get(kind, 0.0) \
            + 2.0 * draws * point.releases
        if getattr(point, "dim", None) is not None:
            key = (kind, int(point.dim))
            work.by_dim[key] = work.by_dim.get(key, 0.0) + 2.0 * draws * point.releases
        work.bound_draws.append(2 * draws)
    return work


def audit_seconds(params: dict[str, Any], wing: str, mechanism: str,
                  units: UnitCosts, points: list | None = None) -> float:
    """CPU seconds of an audit job beyond its stage's fixed cost: building its points, plus
    release-draws x the measured release-draw of their kind (at the point's d where it grows
    with d), plus per point the bound's fixed cost and its draws x the measured bound per draw
    (module docstring); `points`: the points the stage built (costed without building them
    again). A point whose release-draw grows with d, of an audit with no release-draws
    measured by d, stops the plan (no stand-in at another d)."""
    name = f"{wing}/{mechanism}"
    work, unit = audit_work(params, wing, mechanism, points), units.audit(name)
    bound, by_dim = unit["bound"], unit["release_draw_by_dim"]
    release_s = 0.0
    for kind, n in work.release_draws.items():
        at_dim = {d: m for (k, d), m in work.by_dim.items() if k == kind}
        if at_dim and kind not in by_dim:
            raise ConfigError(f"unit costs: audit {name!r}'s {kind} release-draw grows with "
                              "the model dimension and has no release_draw_by_dim; measure it "
                              f"with `python benchmarks/audit_costs.py --only {name}`")
        release_s += (n - sum(at_dim.values())) * unit["release_draw_s"][kind] \
            + sum(m * release_draw_at(by_dim[kind], d) for d, m in at_dim.items())
    return (unit["factory_s"] + release_s
            + sum(bound["fixed_s"] + n * bound["draw_s"] for n in work.bound_draws))
