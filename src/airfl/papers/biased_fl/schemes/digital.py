"""The proposed digital FL scheme of Biased FL and what its six baselines share (Fig. 3(b,c)).

Paper: Ul Abrar, Michelusi, "Biased Federated Learning under Wireless Heterogeneity" (arXiv
2503.06078), §II-C (eqs. 12-17), §IV-B, §V-C/D.

Every scheme aggregates per-round GRADIENTS g [N, d] in physical units: Lambda_m =
statistics.path_gain, |h_{m,t}|^2 = state.channel_power, E_s = energy_per_symbol, N0 = noise_psd,
B = bandwidth_hz. Every upload is quantized by the dithered r-bit quantizer of paper §II-C (eqs. 12-14)
(``airfl.channel.quantized_sums``, uniforms from the round's "quantization" stream: one [N, d]
block whatever is scheduled, ``RoundStreams.uniform_block``; only the rows that enter the
estimate are computed) and costs L = 64 + d r bits
(``payload_bits``). Device sampling draws from the round's "sampling" stream.

Round latency (paper §V-D: "channel capacity for all schemes"): TDMA, the sum over uploading devices of L/(B C_{m,t}) with the
capacity C_{m,t} = log2(1 + E_s |h_{m,t}|^2 / N0). Paper §V-D: "Since the majority of SOTA
candidates use channel capacity-based transmission for local gradient upload, our per-round
latency calculation uses channel capacity for all schemes." So the fixed-rate schemes (UQOS,
FedTOE) are charged L/(B C_{m,t}) too for every upload that is decoded (default ``latency_mode:
capacity_on_success``); an upload in outage has no capacity to speak of (the device sent at its
fixed rate R > C_{m,t} and the PS could not decode), and the paper does not say how it is charged
(our reading): it pays its fixed-rate slot L/(B R). On success C_{m,t} >= R, so this never charges
more than the fixed rate. ``fixed_rate`` (every upload L/(B R)) and ``capacity`` (every upload
L/(B C_{m,t}), outages included) remain as sensitivity options.
A round in which nobody uploads has g_hat = 0 and latency 0.

Record of a round: participants (devices whose update enters g_hat), scheduled (devices that used
a slot), latency_s, bits (total uploaded, failed uploads included), privacy None, and per-scheme
extras (mean bit width, outages, QML's variance, ...).

Every scheme splits a round into its choices (``plan``: sampling, decoding, bits, latency, the
record; per run, on its own streams) and the quantized weighted sum of the rows it uses
(``weighted_quantized_sums``); ``_DigitalScheme.aggregate_many`` runs both for all runs of a
lockstep group, ``aggregate`` is the same code with one run.
Choices and plans are numpy arrays of N entries: a tune job plans ~1e6 run-rounds, and each torch
call on a 10-entry tensor costs a few microseconds, several times numpy's (benchmarks/README.md).
Two steps stay in torch so that the numbers are torch's, bit for bit: the capacity's log2
(`_DigitalScheme.capacity`) and every sum of floats (`_torch_sum`: numpy sums in another order).

The baselines are in :mod:`airfl.papers.biased_fl.schemes.digital_baselines`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from jsonschema import Draft202012Validator

from airfl.channel.quantization import payload_bits
from airfl.channel.quantized_sums import quantized_weighted_sum
from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.papers.biased_fl.design import digital as design_digital
from airfl.papers.biased_fl.design.digital_model import HEADER_BITS
from airfl.papers.biased_fl.schemes.params import DIGITAL_PARAMS as PARAMS_SCHEMA
from airfl.core.participation import require_participation

__all__ = ["PARAMS_SCHEMA", "BiasedDigital", "Plan", "fixed_rate_charge",
           "weighted_quantized_sums"]

HEADER = HEADER_BITS     # 64 bits for ||g||_inf (paper §II-C)

class _DigitalScheme(Scheme):
    """Validates params against PARAMS_SCHEMA, fills defaults; shared radio helpers."""

    def __init__(self, name: str, **params: Any):
        schema = PARAMS_SCHEMA[self.kind]
        errors = list(Draft202012Validator(schema).iter_errors({"scheme": self.kind, **params}))
        if errors:
            raise ValueError(f"scheme {name!r} ({self.kind}): " + "; ".join(sorted(
                f"{'/'.join(map(str, e.absolute_path)) or 'params'}: {e.message}" for e in errors)))
        filled = {k: v["default"] for k, v in schema["properties"].items() if "default" in v}
        filled.update(params)
        super().__init__(name, **filled)
        self._run_constants: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    def run_constants(self, design: dict[str, Any], n: int) -> dict[str, Any]:
        """What `plan` reads every round that only the run's design fixes (tensors of its
        lists, payloads); schemes that have such override it."""
        return {}

    def constants(self, design: dict[str, Any], n: int) -> dict[str, Any]:
        """`run_constants` of a design, made once per design object (a tune job plans ~1e6
        rounds; remaking them was a sixth of its plan time)."""
        cached = self._run_constants.get(id(design))
        if cached is None or cached[0] is not design:
            cached = (design, self.run_constants(design, n))
            self._run_constants[id(design)] = cached
        return cached[1]

    def param(self, name: str):
        return self.params[name]

    @staticmethod
    def radio(statistics) -> tuple[float, float, float]:
        """(E_s, N0, B) of the experiment; the biased_fl digital schemes need physical units."""
        if statistics.energy_per_symbol is None or statistics.noise_psd is None:
            raise ValueError("Biased FL digital schemes need energy_per_symbol and noise_psd")
        return (float(statistics.energy_per_symbol), float(statistics.noise_psd),
                float(statistics.bandwidth_hz))

    def capacity(self, state: RoundState) -> np.ndarray:
        """C_{m,t} = log2(1 + E_s |h_{m,t}|^2 / N0) [N] float64 (paper §V-D), once per round."""
        found = state.extras.get("digital_capacity")
        if found is None:
            es, n0, _ = self.radio(state.statistics)
            snr = es * state.channel_power.to(torch.float64) / n0    # >= 0: |h|^2 Exp draws
            found = torch.log2(1.0 + snr).numpy()  # paper §V-D: capacity (shannon_rate, unchecked)
            found.flags.writeable = False
            state.extras["digital_capacity"] = found
        return found

    @staticmethod
    def channel_power(state: RoundState) -> np.ndarray:
        """|h_{m,t}|^2 [N] float64 of the round as numpy (the round's shared draw: read only)."""
        found = state.extras.get("digital_power")
        if found is None:
            found = state.extras["digital_power"] = state.channel_power.to(torch.float64).numpy()
            found.flags.writeable = False
        return found

    def choose(self, state: RoundState, design: dict[str, Any], n: int) -> dict[str, Any]:
        """The round's choices that need no upload (sampling, scheduling, decoding), drawn from
        the run's own streams, with "reads": the devices whose upload `plan` reads (None:
        every device, e.g. a schedule by gradient norms)."""
        return {"reads": None}

    def choice(self, state: RoundState, design: dict[str, Any]) -> dict[str, Any]:
        """`choose` once per round (kept in the round's state): `read_rows`, before the uploads
        exist, and `plan`, after, see the same draws."""
        found = state.extras.get("digital_choice")
        if found is None:
            found = self.choose(state, design, int(state.channel_power.numel()))
            state.extras["digital_choice"] = found
        return found

    def read_rows(self, state: RoundState, design: dict[str, Any]) -> torch.Tensor | None:
        reads = self.choice(state, design)["reads"]
        return None if reads is None else torch.from_numpy(reads)

    def plan(self, x: torch.Tensor, scale: np.ndarray, state: RoundState,
             design: dict[str, Any]) -> Plan:
        """The round's choices from the uploads x [N, d] (as given: float32 in training) and
        their ||g_m||_inf [N] float64 (numpy)."""
        raise NotImplementedError

    def aggregate(self, updates, state: RoundState, design):
        return self.aggregate_many([self], updates[None], [state], [design])[0]

    @classmethod
    def aggregate_many(cls, schemes, updates, states, designs):
        """Each run plans its round on its own streams, then its estimate is its own weighted
        sum of its used rows (`weighted_quantized_sums`): the same numbers as one run at a time
        (tests/papers/biased_fl/test_biased_fl_schemes_digital.py); the runs share the uploads'
        ||g||_inf pass."""
        scale = torch.maximum(updates.amax(dim=-1), updates.amin(dim=-1).neg_())  # ||g_m||_inf
        if not torch.isfinite(scale).all():            # (exact; one pass less than
            raise ValueError("x must be finite")       # abs().amax, no [J, N, d] temporary)
        scale = scale.to(torch.float64).numpy()
        plans = [scheme.plan(updates[j], scale[j], state, design)
                 for j, (scheme, state, design) in enumerate(zip(schemes, states, designs))]
        out = []
        for plan, estimate in zip(plans, weighted_quantized_sums(updates, scale, plans, states)):
            if plan.divide_by is not None:                                 # sum_m w_m Q(g_m)
                estimate = estimate / plan.divide_by                       # (1/K) sum_S Q(g)
            out.append((estimate.to(updates.dtype), plan.record))
        return out

    def check_k(self, n: int, *names: str) -> None:
        for key in names:
            if self.param(key) > n:
                raise ValueError(f"scheme {self.name!r}: {key} = {self.param(key)} > N = {n}")


@dataclass
class Plan:
    """What a digital scheme decides in one round before quantizing (its choices: sampling,
    decoding, bit widths, latency): the estimate is g_hat = (weights @ Q(g)) / divide_by, where
    Q quantizes row m with bits[m] and only the rows `used` are computed (the others
    have weight 0). Numpy arrays (tensors are accepted too)."""

    bits: np.ndarray                   # [N] int64
    used: np.ndarray                   # [N] bool
    weights: np.ndarray                # [N] float64
    record: dict[str, Any]
    divide_by: float | None = None


def weighted_quantized_sums(x: torch.Tensor, scale, plans: list[Plan],
                            states: list[RoundState]) -> list[torch.Tensor]:
    """sum_m w_m Q(g_m) [d] float64 of each of J runs (x [J, N, d], scale = ||g||_inf [J, N]
    float64, numpy or tensor), as sum_m c_m k_m - sum_m w_m s_m with c_m = 2 w_m s_m/(2^r_m - 1),
    since Q(g_m) = s_m (2 k_m/(2^r_m - 1) - 1), in one compiled pass over each run's
    used rows (`airfl.channel.quantized_sums`: no quantized copy of a row, and its grid indices
    k are `grid_indices`' bits; the torch passes over float64 copies of the rows were
    a third of a digital tune job). Each run quantizes with its round's uniforms of the
    "quantization" stream, one [N, d] block (`RoundStreams.uniform_block`: drawn whatever is
    scheduled, shared by the runs of one trial); a run's sum does not depend on the other runs."""
    shape = tuple(x.shape[1:])
    out = []
    for j, (plan, state) in enumerate(zip(plans, states)):
        if not bool(plan.used.any()):
            out.append(torch.zeros(shape[-1], dtype=torch.float64))
            continue
        noise = state.streams.uniform_block("quantization", shape)
        out.append(quantized_weighted_sum(x[j], noise, plan.used, plan.bits, plan.weights,
                                          scale[j]))
    return out


def _record(participants, scheduled, latency, bits, **extra) -> dict[str, Any]:
    return {"participants": int(participants), "scheduled": int(scheduled), "latency_s": float(latency),
            "bits": int(bits), "privacy": None, **extra}


def _tdma_latency(bits: np.ndarray, rates: np.ndarray, bandwidth: float,
                  mask: np.ndarray) -> float:
    """sum over mask of L/(B rate) (paper eq. 17 form, with capacity rates as §V-D says): the
    arithmetic of `airfl.channel.digital.tdma_round_latency` for one round, without its input
    checks (called every round of every run; the inputs here are the scheme's own arrays)."""
    with np.errstate(divide="ignore"):                # rate 0 off the mask: an unused inf slot
        slot = bits.astype(np.float64) / (bandwidth * rates)
    latency = _torch_sum(np.where(mask, slot, 0.0))
    if math.isinf(latency):
        raise ValueError("a transmitting device has rate 0 (infinite slot)")
    return latency


def _torch_sum(values: np.ndarray) -> float:
    """sum(values) of a float64 array as torch sums it (its order of additions: the numbers
    this module gave before its plans moved to numpy)."""
    return float(torch.from_numpy(values).sum())


def _mask(n: int, index) -> np.ndarray:
    """Bool mask [N] of the devices at `index`."""
    mask = np.zeros(n, dtype=bool)
    mask[index] = True
    return mask


def _top_k(score: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores (ties: the lower index first)."""
    return np.argsort(-score, kind="stable")[:k]


def fixed_rate_charge(mode: str, fixed: np.ndarray, capacity: np.ndarray,
                      decoded: np.ndarray) -> np.ndarray:
    """Per-device rate a fixed-rate upload is charged at, L/(B rate) (paper §V-D).

    capacity_on_success: C_{m,t} when decoded ("our per-round latency calculation uses channel
    capacity for all schemes", §V-D), the fixed rate R_m on outage (our reading); fixed_rate: R_m always;
    capacity: C_{m,t} always.
    """
    fixed = np.asarray(fixed, dtype=np.float64)
    if mode == "fixed_rate":
        return fixed
    if mode == "capacity":
        return np.asarray(capacity, dtype=np.float64)
    if mode == "capacity_on_success":
        return np.where(decoded, capacity, fixed)
    raise ValueError(f"latency_mode {mode!r}: allowed capacity_on_success, fixed_rate, capacity")


# --------------------------------------------------------------------------------------------
# Proposed: Biased digital FL (paper §II-C, §IV-B)
# --------------------------------------------------------------------------------------------

class BiasedDigital(_DigitalScheme):
    """Threshold participation chi = 1{|h| >= rho_m}, r_m-bit quantization, post-scalers nu_m.

    design: (rho, nu, r) from design.digital per variant; also beta, p, R, L, expected latency,
    Psi with the integer r, and the SCA trace. aggregate (paper eq. 13):
    g_hat = sum_m chi_m Q_{r_m}(g_m) / nu_m, unbiased for sum_m p_m g_m (p_m = beta_m/nu_m).
    """

    kind = "biased_digital"

    def design(self, context: DesignContext) -> dict[str, Any]:
        es, n0, bw = self.radio(context.channel)
        lam = context.channel.path_gain.double().numpy()
        kwargs = dict(lam=lam, G=float(self.param("G")), d=int(context.dim), Es=es, N0=n0, B=bw,
                      eta=float(self.param("eta")), mu=float(self.param("mu")),
                      kappa=float(self.param("kappa")), T_max=float(self.param("T_max_s")),
                      r_max=int(self.param("r_max")), max_iter=int(self.param("sca_max_iter")),
                      tol=float(self.param("sca_tol")), solver=self.param("sca_solver"))
        variant = self.param("variant")
        if variant == "zb_qnv":
            out = design_digital.design_zb_qnv(**kwargs)
        else:
            out = design_digital.design_sca(**kwargs, zero_bias=(variant == "zb_opt"))
        require_participation(self.name, float(np.sum(out["beta"])),
                              f"fading thresholds rho of variant {variant!r} (device m uploads with "
                              "probability beta_m = exp(-rho_m^2/Lambda_m), paper §II-C)",
                              "check the design constants G, kappa, eta, T_max_s and the SNR")
        result = {key: np.asarray(out[key]).tolist() for key in
                  ("rho", "nu", "r", "r_prime", "beta", "p", "R", "L")}
        result.update({key: float(out[key]) for key in
                       ("expected_latency_s", "psi", "psi_relaxed", "zeta", "bias")})
        result.update({"variant": variant, "latency_mode": self.param("latency_mode"),
                       "sca": {"start": out["start"], "iterations": int(out["iterations"]),
                               "converged": bool(out["converged"]), "stop_reason": out["stop_reason"],
                               "statuses": sorted(set(out["statuses"])),
                               "psi_history": [float(v) for v in out["psi_history"]],
                               "starts": out.get("starts")}})
        return result

    def run_constants(self, design, n: int) -> dict[str, Any]:
        rho = np.asarray(design["rho"], dtype=np.float64)
        return {"rho2": rho * rho, "nu": np.asarray(design["nu"], dtype=np.float64),
                "bits": np.asarray(design["r"], dtype=np.int64),
                "R": np.asarray(design["R"], dtype=np.float64)}

    def choose(self, state: RoundState, design, n: int) -> dict[str, Any]:
        run = self.constants(design, n)
        chi = self.channel_power(state) >= run["rho2"]                   # paper (12): |h| >= rho
        return {"chi": chi, "reads": chi}

    def plan(self, x, scale, state: RoundState, design) -> Plan:
        run = self.constants(design, x.shape[0])
        bits, chi = run["bits"], self.choice(state, design)["chi"]
        weights = chi / run["nu"]                                          # paper (13): chi / nu
        payload = payload_bits(x.shape[1], bits)                           # L_m = 64 + d r_m
        _, _, bw = self.radio(state.statistics)
        if self.param("latency_mode") == "capacity":
            rates = self.capacity(state)                                   # paper §V-D: L/(B C_t)
        else:
            rates = run["R"]                                               # L/(B R_m)
        latency = _tdma_latency(payload, rates, bw, chi)
        count = int(np.count_nonzero(chi))
        return Plan(bits, chi, weights, _record(                           # rows chi = 0: weight 0
            count, count, latency, payload[chi].sum(),
            mean_bits=float(bits[chi].mean()) if count else 0.0))
