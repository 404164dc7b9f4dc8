"""What a wing hands the audit stage for one DP mechanism, and the audit of it.

A wing registers ``Wing(audits={"<mechanism>": "module:function"})``; the function takes the
validated params.yaml and the profile's audit settings and returns an :class:`AuditableMechanism`:
its claimed epsilon (the paper's accountant and convention), the epsilon of the mechanism as the
code simulates it, and a sampler that runs the scheme's OWN aggregation code on the two
neighbouring inputs and returns the test statistic (the released update projected on the canary
direction). :func:`run_audit` turns the draws into the lower bound of :mod:`.audit`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .audit import audit_threshold, empirical_mu, gdp_epsilon

#: The two neighbouring inputs a sampler is asked for.
WORLDS = ("present", "absent")


@dataclass(frozen=True)
class AuditableMechanism:
    """One DP mechanism as run by its scheme's code, with its two epsilons.

    ``sample(world, draws, seed)`` returns ``draws`` i.i.d. values of the statistic for world
    "present" (the canary's worst-case update in) or "absent" (out, or replaced: ``neighbours``
    says which). ``conditioning`` states which channel draws are held fixed, as the paper's
    guarantee does. ``gaussian``: the statistic is Gaussian in both worlds with one variance, so
    the empirical GDP mu is meaningful. ``batched``: the sampler batches draws (the stage gives it
    params ``audit.draws``); False, one aggregation call per draw (``audit.loop_draws``); ``draws``
    overrides both (a multi-round statistic costs one release per round). ``releases``: the
    releases summed into one draw (a multi-round statistic: its T rounds), what one draw's cost
    scales with (`airfl plan` costs a draw as releases x a measured release-draw). ``dim``: the
    model dimension d one release-draw's cost grows with (a loop sampler whose aggregation call
    runs K clients x d coordinates: CDPB); None where the cost does not depend on d (a batched
    draw is one coordinate of a release as wide as the batch, whatever the model's d)."""

    name: str
    paper: str
    delta: float
    eps_claimed: float
    eps_simulated: float
    claimed_accountant: str
    simulated_note: str
    neighbours: str
    conditioning: str
    aggregation: str                  # the scheme function that is run ("module:function")
    sample: Callable[[str, int, int], np.ndarray] = field(repr=False)
    gaussian: bool = True
    batched: bool = True              # draws are cheap (linear_draws); False: one call a draw
    draws: int | None = None          # its own number of draws (e.g. a multi-round audit)
    releases: int = 1                 # releases summed per draw (a multi-round audit: T)
    dim: int | None = None            # the d a release-draw's cost grows with (None: none)
    settings: dict[str, Any] = field(default_factory=dict)   # what made it (params, design)

    def work(self) -> "AuditPointWork":
        """What sampling this point costs (`airfl plan`), read off the built point."""
        return AuditPointWork(self.name, self.batched, self.draws, self.releases, self.dim)


@dataclass(frozen=True)
class AuditPointWork:
    """What one audited point costs to sample, without building it: its name, its kind of
    sampler (``batched``), its own draws (None: the profile's), its releases per draw and the
    model dimension its release-draw's cost grows with (``dim``, None: independent of d), as
    the built :class:`AuditableMechanism` has them. A wing whose points are expensive to build
    (designs) registers a function returning these (``Wing.audit_works``), so that `airfl plan`
    costs the audit without building it; a test compares them with the built points."""

    name: str
    batched: bool
    draws: int | None
    releases: int
    dim: int | None = None


def _finite(value: float) -> float | str:
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def run_audit(mechanism: AuditableMechanism, draws: int, seed: int, alpha: float = 0.05,
              timing: dict[str, float] | None = None) -> dict[str, Any]:
    """Draw the statistic ``draws`` times per world, bound epsilon (:func:`.audit
    .audit_threshold`), and report it next to the claimed and simulated epsilons.

    ``holds`` is the claim "audited lower bound <= claimed epsilon": False means the claimed
    accounting (``claimed_accountant``) is exceeded by the mechanism the code runs, reported,
    never hidden; ``holds_simulated`` says whether the exact epsilon of the simulated mechanism
    is exceeded too (a leak of the code) or not (an accounting that does not describe it).
    ``tightness`` = lower bound / claimed (1 is a tight accountant). The result is deterministic
    (same seed, same bytes); the sampling time goes into ``timing`` (seconds, draws per second) instead."""
    start = time.perf_counter()
    present = np.asarray(mechanism.sample("present", draws, seed), dtype=np.float64)
    absent = np.asarray(mechanism.sample("absent", draws, seed + 1), dtype=np.float64)
    seconds = time.perf_counter() - start
    if present.shape != (draws,) or absent.shape != (draws,):
        raise ValueError(f"audit {mechanism.paper}/{mechanism.name}: the sampler returned "
                         f"{present.shape} and {absent.shape} draws, expected ({draws},)")
    if timing is not None:
        timing.update(seconds=seconds, draws_per_second=2 * draws / max(seconds, 1e-9))
    bound = audit_threshold(present, absent, mechanism.delta, alpha)
    mu = empirical_mu(present, absent) if mechanism.gaussian else None
    claimed = mechanism.eps_claimed
    return {
        "paper": mechanism.paper, "mechanism": mechanism.name, "delta": mechanism.delta,
        "eps_claimed": _finite(claimed), "eps_simulated": _finite(mechanism.eps_simulated),
        "eps_audited_lower": _finite(bound.eps_lower),
        "eps_audited_point": _finite(bound.eps_point),
        "eps_audited_upper": _finite(bound.eps_upper),
        "holds": bool(bound.eps_lower <= claimed),
        "holds_simulated": bool(bound.eps_lower <= mechanism.eps_simulated),
        "tightness": _finite(bound.eps_lower / claimed) if claimed > 0 else "inf",
        "gdp_mu": mu, "gdp_eps": None if mu is None else _finite(gdp_epsilon(mu, mechanism.delta)),
        "test": bound.to_dict(), "draws": draws, "alpha": alpha, "seed": seed,
        "claimed_accountant": mechanism.claimed_accountant,
        "simulated_note": mechanism.simulated_note, "neighbours": mechanism.neighbours,
        "conditioning": mechanism.conditioning, "aggregation": mechanism.aggregation,
        "settings": mechanism.settings,
    }
