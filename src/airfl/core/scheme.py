"""The Scheme interface: what is compared in figures (proposed schemes and baselines alike).

A scheme has a stable `name` (colours, file names, claims), a `design` step run once before
training from channel statistics and params (returns a small JSON-able dict: thresholds, power
scalers, budgets), and an `aggregate` step

    (client_updates [N, d], round_state, design) -> (server_update [d], round_record)

where the record says what happened in the round (participants, noise levels, bits, latency,
privacy events) for the logs and the privacy stage, so privacy is accounted without
re-simulating.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from airfl.runtime.rng import RoundStreams


@dataclass(frozen=True)
class ChannelStatistics:
    """What a design may know before training: statistical CSI and the radio constants."""

    path_gain: torch.Tensor          # [N] mean channel power gain Lambda_m (linear)
    reference_gain: float            # Lambda at the cell edge: SNRs in params are defined there
    bandwidth_hz: float
    distances_m: torch.Tensor        # [N]
    energy_per_symbol: float | None = None   # E_s in J, for papers with physical radio units
    noise_psd: float | None = None           # N0 in W/Hz (= J per real channel use)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able copy: the design stage stores it per trial and the train stage rebuilds the
        statistics from it (bit for bit: float64 values survive JSON) instead of re-deriving them."""
        return {"distances_m": self.distances_m.tolist(), "path_gain": self.path_gain.tolist(),
                "reference_gain": self.reference_gain, "bandwidth_hz": self.bandwidth_hz,
                "energy_per_symbol": self.energy_per_symbol, "noise_psd": self.noise_psd}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "ChannelStatistics":
        return cls(path_gain=torch.tensor(record["path_gain"], dtype=torch.float64),
                   reference_gain=record["reference_gain"], bandwidth_hz=record["bandwidth_hz"],
                   distances_m=torch.tensor(record["distances_m"], dtype=torch.float64),
                   energy_per_symbol=record["energy_per_symbol"], noise_psd=record["noise_psd"])


@dataclass
class DesignContext:
    """Inputs of a scheme's design step.

    `future_channel_power(T)` returns the |h_{m,t}|^2 [T, N] that the trial's rounds 1..T will
    draw (the same draws, common random numbers): only genie-aided baselines with non-causal CSI
    may call it.
    """

    num_devices: int
    dim: int
    rounds: int
    data_sizes: torch.Tensor         # [N] |D_m|
    channel: ChannelStatistics
    trial: int = 0
    future_channel_power: Callable[[int], torch.Tensor] | None = None
    seed: int = 0                    # with `experiment`: for designs that draw their own
    experiment: str = ""             # per-trial channels from the trial's streams
    label_histograms: Any = None     # [N, C] label counts per device (the partition's), for
    # designs weighted by label skew (e.g. LAPA's Wasserstein weights, eq. 21); None: unknown


@dataclass
class RoundState:
    """What a scheme sees in one round. `channel_power` is |h_{m,t}|^2 [N], drawn once per round
    from the experiment's channel stream, identical for every scheme (common random numbers)."""

    round_index: int
    channel_power: torch.Tensor      # [N]
    data_sizes: torch.Tensor         # [N]
    statistics: ChannelStatistics
    streams: RoundStreams
    extras: dict[str, Any] = field(default_factory=dict)


RoundRecord = dict[str, Any]


class Scheme:
    """Base class; subclasses set `kind` and implement `aggregate` (and `design` if they have one)."""

    kind: str = ""
    uses_future_channels: bool = False   # genie-aided designs: one design per trial's channels
    # the scheme reads the clients' local step size (its `lr` argument: what its noise or its
    # server step is scaled by), given from the local-work settings the clients train with
    # (the block's `training.lr`, `pipeline.registry.build_scheme`), never a copy per curve
    uses_local_lr: bool = False

    def __init__(self, name: str, **params: Any):
        self.name = name
        self.params = params

    def design(self, context: DesignContext) -> dict[str, Any]:
        return {}

    def participants(self, state: RoundState, design: dict[str, Any]) -> torch.Tensor | None:
        """The devices that train in this round (their updates reach `aggregate` in this order),
        or None for all of them. Schemes compared in one figure should draw it from the same
        stream or design so they keep common random numbers."""
        return None

    def aggregate(self, updates: torch.Tensor, state: RoundState, design: dict[str, Any]
                  ) -> tuple[torch.Tensor, RoundRecord]:
        raise NotImplementedError

    def read_rows(self, state: RoundState, design: dict[str, Any]) -> torch.Tensor | None:
        """The devices (bool [N]) whose upload `aggregate` reads this round, known before any
        upload is computed (from the channel, the design and the round's draws), or None: all.
        With a mask, `airfl.core.lockstep` computes only those clients' full-batch gradients
        and passes zeros in the other rows, so a scheme that returns one must read nothing else
        of `updates` in that round (Biased FL's digital baselines
        use K of N uploads). The default reads every row."""
        return None

    def trained_clients(self, design: dict[str, Any]) -> tuple[int, ...] | None:
        """The clients whose data this scheme ever aggregates with this design, when it is a
        fixed subset of them (None: every client may be aggregated). The step-size search
        scores such a scheme by the objective over these clients (airfl.pipeline.tuning): the
        global gap of a scheme that never sees some clients can be lowest for a model that does
        not move. The default: every client."""
        return None

    def inert_params(self, design: dict[str, Any], statistics: ChannelStatistics,
                     dim: int) -> frozenset[str]:
        """Parameters that provably change nothing in any run with this design (e.g. a
        per-round budget that no round can reach): two candidates of a parameter search that
        differ only in them make the same runs, so the tune stage runs them once
        (airfl.pipeline.tuning). The default claims none; a
        scheme that overrides it states the proof in its docstring."""
        return frozenset()

    @classmethod
    def aggregate_many(cls, schemes: Sequence["Scheme"], updates: torch.Tensor,
                       states: Sequence[RoundState], designs: Sequence[dict[str, Any]]
                       ) -> list[tuple[torch.Tensor, RoundRecord]]:
        """`aggregate` of J runs of this class stepped in lockstep (`airfl.core.lockstep`):
        updates [J, N, d], run j with schemes[j], states[j], designs[j]. Must return, for
        every run, exactly what its own `aggregate` returns (each run draws from its own
        streams, whatever runs beside it); a class overrides it to share work across the runs
        as a tensor axis. This default calls `aggregate` run by run."""
        return [scheme.aggregate(updates[j], state, design)
                for j, (scheme, state, design) in enumerate(zip(schemes, states, designs))]


# Curve keys the stages consume (channel overrides), not parameters of the scheme itself.
CURVE_SETTINGS = ("snr_offset_db",)


def scheme_from_curve(scheme_class: type[Scheme], name: str, curve: dict[str, Any],
                      local_lr: float | None = None) -> Scheme:
    """The scheme of one curve (params.yaml `curves.<name>`: its `scheme` kind and parameters)
    as an instance of `scheme_class`, the class that kind names: the curve-only settings
    (CURVE_SETTINGS) and `scheme` dropped; a scheme that reads the clients' local step size
    (`Scheme.uses_local_lr`) gets `local_lr` as `lr`, the step size of the local-work
    settings its clients train with (the block's `training.lr`), and a curve may not set its
    own. The one place both the pipeline's registry (which finds the class from the kind) and
    the arena's audit (which may not import the pipeline) build a curve's scheme."""
    params = {k: v for k, v in curve.items() if k not in CURVE_SETTINGS}
    kind = params.pop("scheme", scheme_class.kind)
    if scheme_class.uses_local_lr:
        if "lr" in params:
            raise ValueError(f"curves.{name}.lr: a {kind} scheme takes the clients' step size "
                             "from the local-work settings (training.lr), not from its curve")
        if local_lr is None:
            raise ValueError(f"curves.{name}: a {kind} scheme needs the clients' local step "
                             "size (training.lr)")
        params["lr"] = local_lr
    return scheme_class(name, **params)
