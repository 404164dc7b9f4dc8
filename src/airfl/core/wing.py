"""A wing: one paper's plug (or a package of schemes), as the pipeline's registry finds it.

A package offers a wing through the Python entry point group `airfl.wings` (name = the wing's
name, value = its `Wing` object), so a user's own installed package can add schemes to existing
figures or a whole paper without editing airfl. The object is cheap to import: the heavy parts
(experiments, scheme classes) are named as import strings and loaded only by the stages that
need them, and the parameters are declared once in a light module of the wing (airfl.params.declare
nodes, no torch: every job validates params.yaml, the light `privacy` job included).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Wing:
    """What a wing brings.

    `name`: its entry point name; a paper wing also names its params.yaml block, its results and
    figures folders and its `snakemake <name>` target after it. `package`: the Python package
    holding the wing (its code is what its stages depend on). `catalogue`: the module whose
    `EXPERIMENTS` and `ANALYTIC` tuples are the wing's figures (None: a wing of schemes only). `schemes`: scheme kind -> "module:Class".
    `params`: the module declaring its parameters (airfl.params.declare): `DECLARATION` (a
    `Declaration`: its top-level keys, `$defs` and curve kinds) and, where it registers audits,
    `AUDIT` (the node of params.yaml `audit.<wing>`); None: no parameters.
    `schema_defs`: schema `$defs` the wing computes from code (e.g. one curve type generated from
    its schemes' parameter declarations), added to those of its declaration. `audits`: auditable
    DP mechanism name -> "module:function", imported lazily by the audit stage; the
    function takes (params, profile settings) and returns an airfl.privacy.audit_mechanism
    `AuditableMechanism`. `audit_works`: for a mechanism whose points are expensive to build
    (designs), "module:function" taking the params and returning each point's
    `AuditPointWork` (what sampling it costs) without building it, read by `airfl plan`; the
    other mechanisms are costed from their built points. `labels`: scheme kind -> its legend name, for a curve of that kind
    that the experiment drawing it does not name (e.g. a plug-in scheme added to another
    wing's figure); its colour and marker are then the figure's first free ones
    (airfl.figures.styles), unless the wing registers a style for the name.
    """

    name: str
    package: str
    catalogue: str | None = None
    schemes: Mapping[str, str] = field(default_factory=dict)
    schema_defs: Callable[[], dict[str, Any]] | None = None
    params: str | None = None
    audits: Mapping[str, str] = field(default_factory=dict)
    audit_works: Mapping[str, str] = field(default_factory=dict)
    # audited mechanism -> the experiments whose data split its points rebuild (its design reads
    # the partition's sizes and label histograms): the audit job depends on their partitions
    audit_partitions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        """The wing's schema parts from its declaration (airfl.params.declare.Declaration.parts):
        `properties` (its top-level params.yaml keys), `required`, `$defs`, and `curve_schemes`
        (kind -> parameter schema of schemes usable in the generic curves of any training
        experiment); no `params` module means no parameters."""
        parts = import_module(self.params).DECLARATION.parts() if self.params else {}
        if self.schema_defs is not None:
            parts["$defs"] = {**parts.get("$defs", {}), **self.schema_defs()}
        return parts

    def audit_schema(self) -> dict[str, Any] | None:
        """The schema of the wing's audit settings (params.yaml `audit.<wing>`), from its
        declaration's `AUDIT`; None when it has none."""
        audit = getattr(import_module(self.params), "AUDIT", None) if self.params else None
        return None if audit is None else audit.schema()

    def experiments(self) -> tuple:
        return tuple(getattr(self._catalogue(), "EXPERIMENTS", ()))

    def analytic(self) -> tuple:
        return tuple(getattr(self._catalogue(), "ANALYTIC", ()))

    def scheme_class(self, kind: str) -> type:
        module, _, attribute = self.schemes[kind].partition(":")
        cls = getattr(import_module(module), attribute)
        if getattr(cls, "kind", None) != kind:
            raise TypeError(f"wing {self.name!r}: {self.schemes[kind]} has kind "
                            f"{getattr(cls, 'kind', None)!r}, declared as {kind!r}")
        return cls

    def audit_factory(self, name: str) -> Callable:
        """The function that builds the auditable mechanism `name` (imported on demand)."""
        if name not in self.audits:
            raise KeyError(f"wing {self.name!r} registers no audited mechanism {name!r}; "
                           f"registered: {', '.join(sorted(self.audits)) or 'none'}")
        module, _, attribute = self.audits[name].partition(":")
        return getattr(import_module(module), attribute)

    def audit_work_function(self, name: str) -> Callable | None:
        """The function giving the points' work of the audited mechanism `name` without
        building them (`audit_works`, imported on demand); None where the wing registers none."""
        if name not in self.audit_works:
            return None
        module, _, attribute = self.audit_works[name].partition(":")
        return getattr(import_module(module), attribute)

    def _catalogue(self):
        return import_module(self.catalogue) if self.catalogue else None
