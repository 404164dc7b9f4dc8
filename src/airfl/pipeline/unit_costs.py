"""The unit costs `airfl plan` multiplies: what benchmarks/unit_costs.py (and the horizon and
audit benchmarks) measured on one machine, stored with that machine in
workflow/unit_costs.json, read here with a one-line message for anything missing."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airfl.params.config import ConfigError

UNIT_COSTS = Path("workflow/unit_costs.json")


@dataclass
class UnitCosts:
    """The measured unit costs (workflow/unit_costs.json): the machine, each stage's fixed job
    cost, per model its client step by batch size, evaluated sample and lockstep gradient
    sample, and an optional `gpu` section of the same per-model shape."""

    machine: dict[str, Any]
    stage_s: dict[str, float]
    models: dict[str, dict[str, Any]]
    gpu: dict[str, Any] = field(default_factory=dict)
    horizon_runs: dict[str, Any] = field(default_factory=dict)
    audits: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str = UNIT_COSTS) -> "UnitCosts":
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"unit costs: {path} not found; measure them with "
                              "`python benchmarks/unit_costs.py`")
        table = json.loads(path.read_text())
        for key in ("machine", "stage_s", "models"):
            if key not in table:
                raise ConfigError(f"unit costs: {path} has no {key!r} (expected machine, "
                                  "stage_s, models)")
        return cls(table["machine"], table["stage_s"], table["models"], table.get("gpu", {}),
                   table.get("horizon_runs", {}), table.get("audits", {}))

    def client_step(self, model: str, batch: int) -> float:
        """Seconds of one client's SGD step at `batch` on CPU (`nearest_batch`)."""
        return nearest_batch(self._model(model)["client_step_s"], batch)

    def lockstep_sample(self, model: str) -> float:
        entry = self._model(model)
        if "lockstep_sample_s" not in entry:
            raise ConfigError(f"unit costs: model {model!r} has no lockstep_sample_s (rerun "
                              "benchmarks/unit_costs.py)")
        return float(entry["lockstep_sample_s"])

    def eval_sample(self, model: str) -> float:
        return float(self._model(model)["eval_sample_s"])

    def gpu_client_step(self, model: str, batch: int) -> float | None:
        """Seconds of one client's step on the GPU measured (None: not measured there)."""
        entry = self.gpu.get("models", {}).get(model)
        return None if entry is None else nearest_batch(entry["client_step_s"], batch)

    def stage(self, stage: str) -> float:
        """A job's fixed cost of `stage`; a stage with none measured stops the plan (no
        stand-in: the table must name every stage of the stage table)."""
        if stage not in self.stage_s:
            raise ConfigError(f"unit costs: stage {stage!r} has no fixed cost (stage_s); "
                              "measure it with benchmarks/unit_costs.py")
        return float(self.stage_s[stage])

    def horizon_run(self, profile: str, experiment_id: str, curve: str) -> dict[str, float] | None:
        """A horizon-bounded curve's measured rounds per second of horizon (`rounds_per_s`,
        its declared parameters; `grid_rounds_per_s`, the mean over its parameter grid) and
        CPU seconds of one run-round in lockstep (`run_round_s`), from
        benchmarks/horizon_rounds.py; None where not measured."""
        return self.horizon_runs.get(f"{profile}/{experiment_id}", {}).get(curve)

    def audit(self, name: str) -> dict[str, Any]:
        """A registered audit's measured costs (`wing/mechanism`, benchmarks/audit_costs.py):
        `release_draw_s` per kind ("batched", "loop": CPU seconds of one release of one draw
        in one world), `bound` (`fixed_s`, `draw_s`: the bound of one point) and `factory_s`
        (building its points), and `release_draw_by_dim` per kind where a release-draw's cost
        grows with the model dimension (`release_draw_at`: CDPB's loop draw; empty for the
        others). A kind or an audit not measured takes the largest measured cost of that kind
        (the kinds differ by orders of magnitude, the audits of one kind by less than ~30x);
        none measured at all stops the plan."""
        measured = {k: v for k, v in self.audits.items() if k != "measured"}
        if not measured:
            raise ConfigError("unit costs: no audit costs (audits); measure them with "
                              "`python benchmarks/audit_costs.py`")
        entry = measured.get(name, {})
        kinds = {kind: max(e["release_draw_s"][kind] for e in measured.values()
                           if kind in e["release_draw_s"])
                 for kind in ("batched", "loop")
                 if any(kind in e["release_draw_s"] for e in measured.values())}
        kinds.update(entry.get("release_draw_s", {}))
        largest = max(measured.values(), key=lambda e: e["bound"]["draw_s"])
        return {"release_draw_s": kinds, "bound": entry.get("bound", largest["bound"]),
                "release_draw_by_dim": entry.get("release_draw_by_dim", {}),
                "factory_s": entry.get("factory_s", max(e["factory_s"]
                                                        for e in measured.values()))}

    def _model(self, model: str) -> dict[str, Any]:
        if model not in self.models:
            raise ConfigError(f"unit costs: no measurement for model {model!r}; measured: "
                              + ", ".join(sorted(self.models))
                              + " (rerun benchmarks/unit_costs.py)")
        return self.models[model]


def nearest_batch(steps: dict[str, float], batch: int) -> float:
    """The measured seconds of a client step at `batch`, or per sample from the nearest
    measured batch (in ratio) when this one was not measured."""
    measured = {int(b): float(s) for b, s in steps.items()}
    if batch in measured:
        return measured[batch]
    nearest = min(measured, key=lambda b: (abs(math.log(b / batch)), b))
    return measured[nearest] / nearest * batch


def release_draw_at(by_dim: dict[str, list[float]], dim: int) -> float:
    """CPU seconds of one release-draw at model dimension `dim`, from the release-draws
    measured at several d (`dims`, `release_draw_s`, benchmarks/audit_costs.py --dims):
    linear between the two measured d around `dim`, the outer segment's line beyond the largest,
    the smallest d's cost below it (a draw never gets cheaper than at the smallest measured d).
    Piecewise, not one line a + b d: CDPB's aggregation call is nearly flat up to d ~ 3,000
    and ~16x dearer from 3,000 to 10,000 (0.30 ms at d = 300, 0.89 ms at 3,000, 14 ms at
    10,000, 44 ms at 30,000 on the measured CPU: its K x d temporaries leave the cache and
    fault pages in): one line a + b d fitted to these goes negative at the profiles' d = 300
    (least squares) or misses d = 30,000 by 4.6x (least relative squares); through the
    measured points it is exact at each."""
    points = sorted(zip((float(d) for d in by_dim["dims"]),
                        (float(s) for s in by_dim["release_draw_s"])))
    if len(points) < 2:
        raise ConfigError("unit costs: a release-draw by dimension needs >= 2 measured d, got "
                          f"{len(points)}; measure it with benchmarks/audit_costs.py --dims")
    if dim <= points[0][0]:
        return points[0][1]
    upper = next((i for i, (d, _) in enumerate(points) if d >= dim), len(points) - 1)
    (d0, s0), (d1, s1) = points[upper - 1], points[upper]
    return s0 + (s1 - s0) * (dim - d0) / (d1 - d0)
