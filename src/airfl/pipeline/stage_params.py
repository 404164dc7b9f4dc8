"""A stage runs on what it declares: params.yaml narrowed to the keys the stage's jobs depend on.

Snakemake reruns a job when its rule's `params:` change and DVC when a key of its manifest does
(`pipeline/dag.py`); both take those keys from the declarations here and in `param_deps`. A read
of any other key would be a dependency neither tool knows of: a change of it would not rerun
the job (a new `device` reran train jobs but not the tune and calibrate jobs that train on it
too). So every stage's `run` receives params narrowed to its declared keys (the `declared`
decorator, stages/*.py), and an undeclared read stops with `UndeclaredParam`, naming the key
and the stage, in the tests as in a run.

What a stage declares (`stage_keys`):

* a stage of an experiment (a `view` in the stage table): its top-level knobs (`knobs` in
  `stage_table`), and what the experiment's block is
  composed from: the wing's section whole and `COMPOSED_FROM` (which of the section's leaves
  each job depends on is derived from the composed block by perturbation, `param_deps.derive`);
* the other stages: their top-level knobs and the sections their argument
  names (a reference's `config_keys`, an analytic figure's block, an audited wing's settings).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from airfl.pipeline import stage_table

# What composing an experiment's block (`Experiment.params`) reads besides the wing's section:
# the profile (values by profile) and the data section (whether a dataset is on this machine,
# for an offline substitute). Every stage that composes the block reads them; their effect on a
# job reaches it through its view of the composed block (`param_deps.block_view`: Snakemake's
# rule params; DVC's keys are derived from the views under both answers about the datasets, and
# a new profile is a new DAG, which the dvc-dag stage stops on).
COMPOSED_FROM = ("profile", "data")


class UndeclaredParam(KeyError):
    """A stage read a params.yaml key it does not declare (a dependency no tool tracks)."""

    def __str__(self) -> str:                # KeyError's own quotes the message
        return str(self.args[0])


def stage_keys(stage: str, *args: str) -> tuple[str, ...]:
    """The dotted params.yaml keys the job `airfl <stage> <args>` runs on (module docstring)."""
    record = stage_table.stage(stage)
    knobs = record.knobs                   # the stage table's top-level knobs of the stage
    if stage == "privacy":                 # the run's records carry the rest (light: no
        return knobs                       # registry, no torch)
    from airfl.pipeline.registry import get_analytic, get_experiment, get_reference, get_wing

    if record.view is not None:            # a stage of one experiment
        experiment = get_experiment(args[0])
        # train and trials read how the curve is split (pipeline.trial_blocks); a change of it
        # changes their jobs and inputs, not their views (dag.rule_params, dag.experiment_jobs)
        split = ("trials_per_job",) if stage in ("train", "trials") else ()
        return (*knobs, *split, *COMPOSED_FROM, experiment.config_key.split(".")[0])
    if stage == "reference":
        return (*knobs, *get_reference(args[0]).config_keys)
    if stage == "analytic":
        return (*knobs, get_analytic(args[0]).config_key)
    if stage == "audit":                   # the shared settings, the wing's own, its catalogue's
        wing = get_wing(args[0])           # and, where it rebuilds a data split, the data's root
        split = ("data.root",) if len(args) > 1 and wing.audit_partitions.get(args[1]) else ()
        return (*knobs, *split, f"audit.{wing.name}", *([wing.name] if wing.catalogue else []))
    if stage == "claims" and args:         # one paper's: which of its panels run reads its
        from airfl.pipeline.registry import all_experiments   # sections (`Experiment.enabled`)

        sections = sorted({e.config_key.split(".")[0] for e in all_experiments()
                           if e.paper == args[0]})
        return (*knobs, *COMPOSED_FROM[1:], *sections)
    return knobs


class DeclaredParams(dict):
    """A mapping of params.yaml holding only the declared keys under it. Reading another key
    that params.yaml has raises `UndeclaredParam`; `in` answers for params.yaml as written, so
    a stage's membership tests behave as before and only its reads are checked."""

    def __init__(self, items: dict[str, Any], stage: str, prefix: str, present: frozenset):
        super().__init__(items)
        self.stage, self.prefix, self.present = stage, prefix, present

    def _undeclared(self, key: Any) -> UndeclaredParam:
        return UndeclaredParam(
            f"stage {self.stage!r} read params.yaml key '{self.prefix}{key}', which it does "
            "not declare, so a change of it would rerun none of its jobs: declare it "
            "(pipeline/stage_params.py)")

    def __missing__(self, key: Any) -> Any:
        if key in self.present:
            raise self._undeclared(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self.present

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self.present else default

    def __reduce__(self):                     # copies keep the narrowing (copy, deepcopy)
        return (DeclaredParams, (dict(self), self.stage, self.prefix, self.present))


def narrowed(params: dict[str, Any], stage: str, keys: tuple[str, ...]) -> DeclaredParams:
    """`params` holding only the dotted `keys` (and everything under each)."""
    tree: dict[str, Any] = {}
    for key in keys:                       # the declared keys as a tree; True: take it whole
        node = tree
        *parents, last = key.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if child is True:              # a shorter key takes the section whole
                break
            node = child
        else:
            node[last] = True
    return _narrow(params, tree, stage, "")


def _narrow(params: dict[str, Any], tree: dict[str, Any], stage: str, prefix: str
            ) -> DeclaredParams:
    items = {}
    for key, wanted in tree.items():
        if key not in params:
            continue
        value = params[key]
        items[key] = value if wanted is True or not isinstance(value, dict) else \
            _narrow(value, wanted, stage, f"{prefix}{key}.")
    return DeclaredParams(items, stage, prefix, frozenset(params))


def declared(stage: str) -> Callable:
    """Decorate a stage's `run(params, *args)`: it runs on params narrowed to what `stage`
    declares for these arguments (the one place every stage gets its params through)."""
    def decorate(run: Callable) -> Callable:
        @functools.wraps(run)
        def on_declared(params: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            keys = stage_keys(stage, *(a for a in args if a is not None))
            return run(narrowed(params, stage, keys), *args, **kwargs)
        on_declared.stage = stage          # type: ignore[attr-defined]
        return on_declared
    return decorate
