"""The one registry: every wing installed (entry point group `airfl.wings`), its experiments,
analytic figures and schemes. The project's own wings are found the same way as a user's: a
wing that is not installed is simply not there.

Wings are listed in name order (the order of the DAG, of CLAIMS.md and of dvc.yaml), and two
wings may not claim the same name, experiment id or scheme kind: such a clash stops validation.
A plug-in that fails to load (its package or its parameter declarations raise on import) is
left out with one line on stderr naming its distribution and entry point, so that one broken
package does not take every other wing down with it.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airfl.core.wing import Wing

if TYPE_CHECKING:      # light at import: every job validates params through this module
    from airfl.core.scheme import Scheme
    from airfl.core.experiments import AnalyticFigure, Experiment, Reference

GROUP = "airfl.wings"


class RegistryError(RuntimeError):
    """Two installed wings collide, or an entry point is not a Wing."""


@cache
def wings() -> tuple[Wing, ...]:
    """Every installed wing, by name."""
    found: dict[str, tuple[str, Wing]] = {}
    for point in entry_points(group=GROUP):
        if point.name in found and found[point.name][0] == point.value:
            continue                      # the same distribution seen twice on sys.path
        wing = _load(point)
        if wing is None:
            continue
        if not isinstance(wing, Wing):
            raise RegistryError(f"entry point {GROUP}:{point.name} = {point.value} is a "
                                f"{type(wing).__name__}, not an airfl.core.wing.Wing")
        if wing.name != point.name:
            raise RegistryError(f"entry point {GROUP}:{point.name} holds the wing {wing.name!r}")
        if point.name in found:
            raise RegistryError(f"two wings named {point.name!r}: {found[point.name][0]} and "
                                f"{point.value}")
        found[point.name] = (point.value, wing)
    return tuple(found[name][1] for name in sorted(found))


def _load(point: EntryPoint) -> Any:
    """The object behind an entry point, with its parameter declarations imported (every job
    needs them); None, after one line on stderr, when either raises."""
    try:
        wing = point.load()
        if isinstance(wing, Wing) and wing.params:
            import_module(wing.params)
    except Exception as error:                   # a plug-in's own bug, whatever it is
        distribution = point.dist.name if point.dist is not None else "an unknown distribution"
        reason = " ".join(f"{type(error).__name__}: {error}".split())
        print(f"airfl: skipped wing {point.name!r} of {distribution} (entry point {GROUP}: "
              f"{point.name} = {point.value}), which failed to load: {reason}",
              file=sys.stderr)
        return None
    return wing


def get_wing(name: str) -> Wing:
    for wing in wings():
        if wing.name == name:
            return wing
    raise KeyError(f"no wing {name!r} is installed; installed: "
                   + ", ".join(w.name for w in wings()))


def papers() -> list[str]:
    """The wings that have figures (one `snakemake <paper>` target each)."""
    return [w.name for w in wings() if w.catalogue]


@cache
def all_experiments() -> tuple[Experiment, ...]:
    """Every training experiment of every wing."""
    return _unique(e for w in wings() for e in w.experiments())


def active_experiments(params: dict[str, Any] | None) -> tuple[Experiment, ...]:
    """The experiments these params run (`Experiment.enabled`, e.g. a profile's panel list);
    every experiment when params is None."""
    return tuple(e for e in all_experiments() if params is None or e.is_enabled(params))


@cache
def all_analytic() -> tuple[AnalyticFigure, ...]:
    """Every analytic figure of every wing."""
    return _unique(f for w in wings() for f in w.analytic())


def _unique(items) -> tuple:
    out, seen = [], set()
    for item in items:
        if item.id in seen:
            raise RegistryError(f"two wings register {item.id!r}")
        seen.add(item.id)
        out.append(item)
    return tuple(out)


def _by_id(items, item_id: str, what: str):
    for item in items:
        if item.id == item_id:
            return item
    raise KeyError(f"unknown {what} {item_id!r}; known: " + ", ".join(i.id for i in items))


def get_experiment(experiment_id: str) -> Experiment:
    return _by_id(all_experiments(), experiment_id, "experiment")


def get_analytic(figure_id: str) -> AnalyticFigure:
    return _by_id(all_analytic(), figure_id, "analytic figure")


def get_reference(name: str) -> Reference:
    for experiment in all_experiments():
        if experiment.reference is not None and experiment.reference.name == name:
            return experiment.reference
    raise KeyError(f"unknown reference {name!r}")


@cache
def scheme_wings() -> dict[str, Wing]:
    """Scheme kind -> the wing that offers it."""
    out: dict[str, Wing] = {}
    for wing in wings():
        for kind in wing.schemes:
            if kind in out:
                raise RegistryError(f"scheme kind {kind!r} is offered by wings {out[kind].name!r} "
                                    f"and {wing.name!r}")
            out[kind] = wing
    return out


def curve_legend(experiment: Experiment, curve: str, curve_params: dict[str, Any]) -> str:
    """A curve's legend: the experiment's own label for it, else the label its scheme's wing
    declares (`Wing.labels`: a plug-in scheme added to another wing's figure), else its key."""
    label = experiment.curve_label(curve, curve_params)
    if label is None:
        kind = curve_params.get("scheme")
        wing = scheme_wings().get(kind) if isinstance(kind, str) else None
        label = wing.labels.get(kind) if wing is not None else None
    return label or curve


def scheme_kinds() -> list[str]:
    return sorted(scheme_wings())


def build_scheme(name: str, curve: dict[str, Any], local_lr: float | None = None) -> Scheme:
    """The scheme of one curve of an experiment (params.yaml `curves.<name>`), of the class its
    `scheme` kind names (`airfl.core.scheme.scheme_from_curve`: a scheme that reads the clients'
    local step size, `Scheme.uses_local_lr`, gets `local_lr`, the step size of the local-work
    settings its clients train with: the block's `training.lr`)."""
    from airfl.core.scheme import scheme_from_curve

    kind = curve["scheme"]
    if kind not in scheme_wings():
        raise ValueError(f"curves.{name}.scheme: unknown scheme {kind!r}; allowed: "
                         + ", ".join(scheme_kinds()))
    return scheme_from_curve(scheme_wings()[kind].scheme_class(kind), name, curve, local_lr)


def with_local_lr(curve: dict[str, Any], local_lr: float) -> dict[str, Any]:
    """A curve's parameters as its scheme runs with them: where the scheme reads the clients'
    local step size (`Scheme.uses_local_lr`), with that step size as `lr` right after `scheme`
    (the figure stage tabulates a curve's numbers as `param_<key>` columns in this order)."""
    kind = curve.get("scheme")
    wing = scheme_wings().get(kind) if isinstance(kind, str) else None
    if wing is None or not wing.scheme_class(kind).uses_local_lr:
        return curve
    return {"scheme": kind, "lr": local_lr, **curve}


def code_path(wing_name: str) -> str:
    """The folder of a wing's package, as a stage's code dependency: relative to the working
    directory (the repository) when inside it, else absolute (a wing installed elsewhere)."""
    from importlib.util import find_spec

    spec = find_spec(get_wing(wing_name).package)
    folder = Path(next(iter(spec.submodule_search_locations))).resolve()
    try:
        return folder.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return folder.as_posix()
