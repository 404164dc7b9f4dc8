"""Privacy accounting: RDP of Gaussian and subsampled-Gaussian mechanisms, composition,
RDP -> (eps, delta), and per-round epsilon curves from schemes' stored round records.

Layers: :mod:`.events` (records of what a mechanism did), :mod:`.rdp` (pure RDP formulas),
:mod:`.conversion` (RDP -> (eps, delta) with the optimal order), :mod:`.accountant` (state,
curves, calibration), :mod:`.parallel` (per-round events of the worst of many parallel
Gaussian releases).
"""

from .accountant import (CONVERSIONS, RdpAccountant, cumulative_rdp, epsilon_curve, event_rdp,
                         gaussian_noise_for_epsilon)
from .conversion import delta_from_rdp, delta_from_rdp_classic, eps_from_rdp, eps_from_rdp_classic
from .events import (ComposedEvent, Event, GaussianEvent, RdpCurveEvent, SubsampledGaussianEvent,
                     event_from_dict)
from .parallel import WorstUnitGaussian
from .rdp import DEFAULT_ORDERS, compose, rdp_gaussian, rdp_subsampled_gaussian

__all__ = [
    "CONVERSIONS", "ComposedEvent", "DEFAULT_ORDERS", "Event", "GaussianEvent", "RdpAccountant",
    "RdpCurveEvent", "SubsampledGaussianEvent", "compose", "cumulative_rdp", "delta_from_rdp",
    "delta_from_rdp_classic", "eps_from_rdp", "eps_from_rdp_classic", "epsilon_curve",
    "event_from_dict", "event_rdp", "gaussian_noise_for_epsilon", "rdp_gaussian",
    "rdp_subsampled_gaussian", "WorstUnitGaussian",
]
