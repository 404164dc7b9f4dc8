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
is costed as run; what a release costs at other settings (a model dimension, devices) is not
modelled: the release-draw is measured at the profile's declared settings. The stage's fixed
cost (the median quick audit job) includes a quick audit's own draws, ~1-3 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airfl.params.config import ConfigError
from airfl.pipeline.unit_costs import UnitCosts


@dataclass
class AuditWork:
    """What an audit job computes (the stage `audit`, `stages.audit.run`): per kind of
    sampler ("batched" or "loop") its release-draws, 2 worlds x draws x releases summed over
    the points, and per point the draws the bound reads (2 x draws)."""

    release_draws: dict[str, float]
    bound_draws: list[int]


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
        work.bound_draws.append(2 * draws)
    return work


def audit_seconds(params: dict[str, Any], wing: str, mechanism: str,
                  units: UnitCosts, points: list | None = None) -> float:
    """CPU seconds of an audit job beyond its stage's fixed cost: building its points, plus
    release-draws x the measured release-draw of their kind, plus per point the bound's fixed
    cost and its draws x the measured bound per draw (module docstring); `points`: the points
    the stage built (costed without building them again)."""
    work, unit = audit_work(params, wing, mechanism, points), units.audit(f"{wing}/{mechanism}")
    bound = unit["bound"]
    return (unit["factory_s"]
            + sum(n * unit["release_draw_s"][kind] for kind, n in work.release_draws.items())
            + sum(bound["fixed_s"] + n * bound["draw_s"] for n in work.bound_draws))
