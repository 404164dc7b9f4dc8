"""The six digital baselines of Biased FL's Fig. 3(b,c) (paper §V-D), as we adapt them.

Paper: Ul Abrar, Michelusi, "Biased Federated Learning under Wireless Heterogeneity" (arXiv
2503.06078), §V-C/D. Units, quantizer, latency rule and round record are those of
:mod:`airfl.papers.biased_fl.schemes.digital` (shared with the proposed scheme).

Choices the paper leaves open (all ours):

* Best Channel(-Norm) budget T_BC (paper §V-D: "chosen to have r_m ~ 16 bits"): a Monte-Carlo median rule with ``mc_draws`` = 4000
  draws from ``numpy_generator(design_seed, design_key, "trial", trial, "design")`` (params, default
  0 and "biased_fl_digital"): a per-trial, reproducible design that does not consume the training
  streams; ``T_BC_s`` overrides it.
* QML and FedTOE bit allocation: solved exactly (the Pareto dynamic programme's point,
  :mod:`airfl.papers.biased_fl.bit_allocation`) instead of a greedy marginal
  allocation, which missed the optimum in about a quarter of random 3-device cases.
* Best Channel-Norm with all selected gradients zero: r = 1.
* UQOS sampling without replacement: Madow systematic sampling (exact inclusion probabilities pi,
  exactly K devices).
* Outage uploads of fixed-rate schemes are charged L/(B R) (decoded ones L/(B C), paper §V-D) and
  their bits count as uploaded.
* The quantizer's uniforms are one [N, d] block a round of the "quantization" stream whatever
  is scheduled (``RoundStreams.uniform_block``); only the rows that enter the estimate are
  computed (``Plan.used``: a used row's bits equal the full quantizer call's, the others have
  weight 0), as for the proposed scheme.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from airfl.channel.digital import shannon_rate
from airfl.channel.quantization import payload_bits
from airfl.core.participation import require_participation
from airfl.core.scheme import DesignContext, RoundState
from airfl.papers.biased_fl.bit_allocation import (
    fedtoe_allocate,
    pareto_bits,
    qml_allocate,
    quant_var as _quant_var,
)
from airfl.papers.biased_fl.schemes.digital import (
    HEADER,
    _DigitalScheme,
    Plan,
    _mask,
    _record,
    _tdma_latency,
    _top_k,
    _torch_sum,
    fixed_rate_charge,
)
from airfl.runtime.rng import numpy_generator

__all__ = ["BestChannel", "BestChannelNorm", "FedToe", "ProportionalFairness", "Qml", "Uqos",
           "best_channel_budget", "equal_bit_width", "fedtoe_allocate", "fedtoe_rates",
           "madow_bounds", "madow_draw", "madow_sample", "pareto_bits", "qml_allocate", "uqos_inclusion"]


# --------------------------------------------------------------------------------------------
# Best Channel / Best Channel-Norm [7] and Proportional Fairness [9]
# --------------------------------------------------------------------------------------------

def equal_bit_width(budget_s: float, capacities: np.ndarray, dim: int, bandwidth: float,
                    r_max: int) -> int:
    """Common r of an equal-bit time split of a budget.

    L = T B / sum_k 1/C_k bits per device fill the budget exactly; r = clip(floor((L - 64)/d), 1, r_max).
    """
    inverse = 1.0 / np.asarray(capacities, dtype=np.float64)
    total = budget_s * bandwidth / _torch_sum(inverse)                      # L_t = T B / sum 1/C_k
    return int(min(max(math.floor((total - HEADER) / dim), 1), r_max))     # clip(floor((L-64)/d), 1, r_max)


def best_channel_budget(lam: np.ndarray, es: float, n0: float, bandwidth: float, dim: int, k: int,
                        r_max: int, draws: int, generator: np.random.Generator) -> float:
    """T_BC = median over channel draws of sum_{K best} (64 + r_max d)/(B C_k) (our reading of paper §V-D's r_m ~ 16).

    Chosen so that the selected devices 'typically' get r ~ r_max bits (paper §V-D: r ~ 16).
    """
    power = lam[None, :] * generator.exponential(1.0, size=(draws, lam.size))   # |h|^2 = Lambda Exp(1)
    best = torch.as_tensor(np.sort(power, axis=1)[:, -k:])                      # K best channels
    cap = shannon_rate(es * best / n0)                                           # C = log2(1 + E_s|h|^2/N0)
    return float(torch.median(torch.sum((HEADER + r_max * dim) / (bandwidth * cap), dim=1)))


def scheduled_mean(dim: int, bits: np.ndarray, mask: np.ndarray, k: int,
                   cap: np.ndarray, bw: float, mean_bits: float) -> Plan:
    """(1/K) sum_{k in S} g^q_k with r_k-bit quantization, TDMA latency sum_S (64 + d r_k)/(B C_k)
    (Best Channel and Best Channel-Norm); rows outside S get weight 0."""
    payload = payload_bits(dim, bits)
    latency = _tdma_latency(payload, cap, bw, mask)
    return Plan(bits, mask, mask.astype(np.float64),                       # (1/K) sum_S g^q
                _record(k, k, latency, payload[mask].sum(), mean_bits=mean_bits), divide_by=k)


def _round_link(scheme: _DigitalScheme, state: RoundState) -> tuple[int, float, np.ndarray]:
    """(K, B, C_{m,t} [N]) of a round of a baseline that schedules K devices and charges each
    upload by its capacity (paper Sec. V-D)."""
    _, _, bw = scheme.radio(state.statistics)
    return int(scheme.param("K")), bw, scheme.capacity(state)


class _EqualSplit(_DigitalScheme):
    """Schedule K devices by a per-round score, equal bits within a per-round time budget."""

    budget_key = ""

    def score(self, state: RoundState) -> np.ndarray:
        raise NotImplementedError

    def budget(self, design) -> float:
        return float(design[self.budget_key])

    def schedule(self, state: RoundState) -> np.ndarray:
        """Bool mask of the K devices with the largest score this round."""
        score = self.score(state)
        return _mask(score.size, _top_k(score, int(self.param("K"))))

    def choose(self, state: RoundState, design, n: int) -> dict[str, Any]:
        mask = self.schedule(state)
        return {"mask": mask, "reads": mask}

    def plan(self, x, scale, state: RoundState, design) -> Plan:
        n, dim = x.shape
        k, bw, cap = _round_link(self, state)
        mask = self.choice(state, design)["mask"]
        r = equal_bit_width(self.budget(design), cap[mask], dim, bw, int(self.param("r_max")))
        bits = np.full(n, r, dtype=np.int64)
        return scheduled_mean(dim, bits, mask, k, cap, bw, mean_bits=float(r))


class _BestChannelBudget:
    """Design step shared by Best Channel and Best Channel-Norm: the T_BC rule."""

    def design(self, context: DesignContext) -> dict[str, Any]:
        self.check_k(context.num_devices, "K")
        if self.param("T_BC_s") is not None:
            return {"T_BC_s": float(self.param("T_BC_s")), "T_BC_rule": "param"}
        es, n0, bw = self.radio(context.channel)
        generator = numpy_generator(int(self.param("design_seed")), str(self.param("design_key")),
                                    "trial", context.trial, "design")
        t_bc = best_channel_budget(context.channel.path_gain.double().numpy(), es, n0, bw,
                                   context.dim, int(self.param("K")), int(self.param("r_max")),
                                   int(self.param("mc_draws")), generator)
        return {"T_BC_s": t_bc, "T_BC_rule": "monte_carlo_median"}


class BestChannel(_BestChannelBudget, _EqualSplit):
    """Amiri et al. [7] without sparsification: the K largest |h_{m,t}|^2, equal bits in T_BC."""

    kind = "best_channel"
    budget_key = "T_BC_s"

    def score(self, state):
        return self.channel_power(state)                               # largest |h|^2


class ProportionalFairness(_EqualSplit):
    """Yang et al. [9]: the K largest |h_{m,t}|^2 / Lambda_m, equal bits in T_PF."""

    kind = "proportional_fairness"
    budget_key = "T_PF_s"

    def design(self, context: DesignContext) -> dict[str, Any]:
        self.check_k(context.num_devices, "K")
        return {"T_PF_s": float(self.param("T_PF_s"))}

    def score(self, state):
        lam = state.statistics.path_gain.to(torch.float64).numpy()
        return self.channel_power(state) / lam                         # |h|^2 / Lambda


class BestChannelNorm(_BestChannelBudget, _DigitalScheme):
    """Amiri et al. [7]: K' best channels, then the K largest ||g||; bits proportional to ||g||.

    L_k = lambda ||g_k|| with sum_k L_k/(B C_k) = T_BC, r_k = clip(floor((L_k - 64)/d), 1, r_max).
    When every selected gradient is zero, r = 1 (ours: nothing to send).
    """

    kind = "best_channel_norm"

    def design(self, context: DesignContext) -> dict[str, Any]:
        if self.param("K_prime") < self.param("K"):
            raise ValueError(f"scheme {self.name!r}: K_prime < K")
        self.check_k(context.num_devices, "K_prime")
        return super().design(context)

    def schedule(self, state: RoundState, norms: np.ndarray) -> np.ndarray:
        """Bool mask: among the K' largest |h|^2, the K largest gradient norms."""
        pre = _top_k(self.channel_power(state), int(self.param("K_prime")))
        return _mask(norms.size, pre[_top_k(norms[pre], int(self.param("K")))])

    def plan(self, x, scale, state: RoundState, design) -> Plan:
        n, dim = x.shape
        k, bw, cap = _round_link(self, state)
        norms = torch.linalg.vector_norm(x.to(torch.float64), dim=1).numpy()
        mask = self.schedule(state, norms)
        weight = _torch_sum(norms[mask] / cap[mask])
        if weight > 0:
            scale = float(design["T_BC_s"]) * bw / weight       # lambda: sum lambda ||g||/(B C) = T_BC
            raw = np.floor((scale * norms - HEADER) / dim)                # floor((L_k - 64)/d)
        else:
            raw = np.ones(n, dtype=np.float64)
        bits = np.clip(raw, 1, int(self.param("r_max"))).astype(np.int64)
        bits = np.where(mask, bits, 1)
        return scheduled_mean(dim, bits, mask, k, cap, bw, mean_bits=float(bits[mask].mean()))


# --------------------------------------------------------------------------------------------
# UQOS [32]
# --------------------------------------------------------------------------------------------

def uqos_inclusion(success: np.ndarray, k: int) -> np.ndarray:
    """pi minimising (1/N) sum 1/(s_m pi_m) s.t. sum pi = K, 0 <= pi <= 1.

    KKT: pi_m = min(1, theta/sqrt(s_m)) (water-filling). Exact: with s sorted ascending and the c
    least reliable devices capped at 1, theta = (K - c)/sum_{uncapped} 1/sqrt(s); c is the
    smallest count for which no uncapped pi exceeds 1.
    """
    s = np.asarray(success, dtype=np.float64)
    if not 1 <= k <= s.size:
        raise ValueError(f"K must be in 1..N; got {k}")
    if np.any(s <= 0):
        raise ValueError("success probabilities must be > 0")
    order = np.argsort(s)
    inv_root = 1.0 / np.sqrt(s[order])
    for capped in range(k):
        theta = (k - capped) / inv_root[capped:].sum()          # sum pi = capped + theta sum 1/sqrt(s)
        if theta * inv_root[capped] <= 1.0:
            break
    else:                                                       # K == N: everyone always sampled
        capped, theta = k, 0.0
    pi_sorted = np.minimum(1.0, theta * inv_root)               # pi_m = min(1, theta/sqrt(s_m))
    pi_sorted[:capped] = 1.0
    pi = np.empty_like(pi_sorted)
    pi[order] = pi_sorted
    return pi


def madow_sample(pi: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Systematic (Madow) sampling: exactly sum(pi) = K units, unit m with probability pi_m (our sampler).

    One U ~ U[0, 1); unit m is taken when some U + j (j = 0..K-1) falls in [C_{m-1}, C_m), C the
    cumulative sums of pi (pi_m <= 1 makes that at most one j). Vectorised; returns a bool mask.
    """
    u = float(torch.rand(1, generator=generator, dtype=torch.float64))
    return torch.from_numpy(madow_draw(madow_bounds(pi), u))


def madow_bounds(pi) -> tuple[np.ndarray, np.ndarray]:
    """(C_{m-1}, C_m) of `madow_sample` [N] each, float64: fixed by pi, so a run makes them once."""
    cum = torch.cumsum(torch.as_tensor(pi, dtype=torch.float64), 0)
    k = round(float(cum[-1]))
    cum[-1] = float(k)                                 # remove float drift: sum pi = K exactly
    return torch.cat([torch.zeros(1, dtype=torch.float64), cum[:-1]]).numpy(), cum.numpy()


def madow_draw(bounds: tuple[np.ndarray, np.ndarray], u: float) -> np.ndarray:
    """The units `madow_sample` takes for the uniform u (bool mask [N])."""
    prev, cum = bounds
    return (np.ceil(cum - u) - np.ceil(prev - u)) > 0      # #{j : prev <= u + j < cum} = 1


def _rate_design_inputs(scheme: _DigitalScheme,
                        context: DesignContext) -> tuple[float, float, np.ndarray]:
    """(E_s, N0, Lambda_m as float64 [N]) of a design that fixes each device's rate or success
    from its mean gain (UQOS, FedTOE), after checking the scheme's K against N."""
    scheme.check_k(context.num_devices, "K")
    es, n0, _ = scheme.radio(context.channel)
    return es, n0, context.channel.path_gain.double().numpy()


class Uqos(_DigitalScheme):
    """Yao et al. [32]: common fixed rate R, sampling without replacement with inclusion pi_m.

    s_m = exp(-(2^R - 1) N0/(E_s Lambda_m)) (success probability under Rayleigh fading); g_hat =
    (1/N) sum_{sampled & decoded} g^q_m/(pi_m s_m), unbiased for the mean gradient.
    """

    kind = "uqos"

    def design(self, context: DesignContext) -> dict[str, Any]:
        es, n0, lam = _rate_design_inputs(self, context)
        rate = float(self.param("R"))
        threshold = math.expm1(rate * math.log(2.0)) * n0 / es          # |h|^2 >= (2^R - 1) N0/E_s
        success = np.exp(-threshold / lam)                              # s_m = P(|h|^2 >= threshold)
        pi = uqos_inclusion(success, int(self.param("K")))
        require_participation(self.name, float(np.sum(pi * success)),
                              f"common rate R = {rate:g} bit/s/Hz (success probabilities "
                              f"s_m = exp(-(2^R - 1) N0/(E_s Lambda_m)) down to {success.min():.3g})",
                              "lower R")
        return {"success": success.tolist(), "pi": pi.tolist(), "threshold_power": threshold,
                "rate": rate}

    def run_constants(self, design, n: int) -> dict[str, Any]:
        pi = np.asarray(design["pi"], dtype=np.float64)
        success = np.asarray(design["success"], dtype=np.float64)
        return {"bounds": madow_bounds(pi), "weight": 1.0 / (n * pi * success),   # 1/(N pi_m s_m)
                "bits": np.full(n, int(self.param("r_U")), dtype=np.int64),
                "rate": np.full(n, float(design["rate"]), dtype=np.float64)}

    def choose(self, state: RoundState, design, n: int) -> dict[str, Any]:
        u = float(state.streams.first_uniform("sampling", (1,)))   # madow_sample's one draw
        sampled = madow_draw(self.constants(design, n)["bounds"], u)
        decoded = sampled & (self.channel_power(state) >= design["threshold_power"])
        return {"sampled": sampled, "decoded": decoded, "reads": decoded}

    def plan(self, x, scale, state: RoundState, design) -> Plan:
        n, dim = x.shape
        run = self.constants(design, n)
        choice = self.choice(state, design)
        sampled, decoded = choice["sampled"], choice["decoded"]
        weights = np.where(decoded, run["weight"], 0.0)               # 1/(N pi_m s_m) if decoded
        payload = run.get("payload")
        if payload is None:
            payload = run["payload"] = payload_bits(dim, run["bits"])
        _, _, bw = self.radio(state.statistics)
        rates = fixed_rate_charge(self.param("latency_mode"), run["rate"], self.capacity(state),
                                  decoded)                              # §V-D: capacity if decoded
        latency = _tdma_latency(payload, rates, bw, sampled)            # outage: slot L/(B R) (our reading)
        n_decoded, n_sampled = int(np.count_nonzero(decoded)), int(np.count_nonzero(sampled))
        return Plan(run["bits"], decoded, weights, _record(            # undecoded rows: weight 0
            n_decoded, n_sampled, latency, payload[sampled].sum(),
            outages=n_sampled - n_decoded, mean_bits=float(self.param("r_U"))))


# --------------------------------------------------------------------------------------------
# QML [11] with uniform K-device sampling
# --------------------------------------------------------------------------------------------

def _uniform_k(n: int, k: int, state: RoundState) -> np.ndarray:
    """K of N devices uniformly at random without replacement, as a bool mask."""
    return _mask(n, torch.randperm(n, generator=state.streams("sampling"))[:k].numpy())


class Qml(_DigitalScheme):
    """Bouzinis et al. [11], with uniform K-device sampling (paper §V-D): per round, the latency-minimal
    bits under the average quantization-variance constraint eps_0 = eps0_rel G^2.
    g_hat = (1/K) sum_S g^q; latency = the minimised value, sum_S (64 + d r_k)/(B C_k)."""

    kind = "qml"

    def choose(self, state: RoundState, design, n: int) -> dict[str, Any]:
        mask = _uniform_k(n, int(self.param("K")), state)
        return {"mask": mask, "reads": mask}

    def design(self, context: DesignContext) -> dict[str, Any]:
        self.check_k(context.num_devices, "K")
        return {"eps0": float(self.param("eps0_rel")) * float(self.param("G")) ** 2}

    def plan(self, x, scale, state: RoundState, design) -> Plan:
        n, dim = x.shape
        k, bw, cap = _round_link(self, state)
        mask = self.choice(state, design)["mask"]
        sinf2 = np.square(np.asarray(scale, dtype=np.float64))[mask]     # ||g_k||_inf^2
        r_sel, feasible = qml_allocate(sinf2, 1.0 / (bw * cap[mask]), dim,
                                       float(design["eps0"]), int(self.param("r_max")))
        bits = np.ones(n, dtype=np.int64)
        bits[mask] = r_sel
        payload = payload_bits(dim, bits)
        latency = _tdma_latency(payload, cap, bw, mask)
        return Plan(bits, mask, mask.astype(np.float64), _record(          # (1/K) sum_S g^q
            k, k, latency, payload[mask].sum(), mean_bits=float(r_sel.mean()),
            variance_feasible=bool(feasible),
            quantization_variance=float(np.mean(_quant_var(sinf2, r_sel, dim)))), divide_by=k)


# --------------------------------------------------------------------------------------------
# FedTOE [10]
# --------------------------------------------------------------------------------------------

def fedtoe_rates(lam, es: float, n0: float, p_out: float) -> np.ndarray:
    """R_m = log2(1 - (E_s Lambda_m/N0) ln(1 - p_out)): outage probability exactly p_out."""
    snr = torch.as_tensor(np.asarray(lam, dtype=np.float64) * es / n0)
    # P(log2(1 + snr E) < R) = 1 - exp(-(2^R - 1)/snr) = p_out  <=>  2^R - 1 = -snr ln(1 - p_out)
    return shannon_rate(snr * -math.log1p(-p_out)).numpy()


class FedToe(_DigitalScheme):
    """Wang et al. [10]: common outage p_out, K uniform devices, variance-minimal bits in T_TOE.

    g_hat = (1/K) sum_{S, decoded} g^q_k/(1 - p_out): unbiased for the mean gradient since each
    device is sampled w.p. K/N and decoded w.p. 1 - p_out.
    """

    kind = "fedtoe"

    def design(self, context: DesignContext) -> dict[str, Any]:
        es, n0, lam = _rate_design_inputs(self, context)
        p_out = float(self.param("p_out"))
        rates = fedtoe_rates(lam, es, n0, p_out)
        threshold = -lam * math.log1p(-p_out)                 # (2^R - 1) N0/E_s = -Lambda ln(1 - p_out)
        return {"rates": rates.tolist(), "threshold_power": threshold.tolist(), "p_out": p_out}

    def inert_params(self, design, statistics, dim: int) -> frozenset[str]:
        """T_TOE_s changes nothing when no K-subset at r_max everywhere can exceed it:
        (64 + d r_max) sum_{K largest} 1/(B R_k) <= T_TOE (the rates are the design's fixed
        R_k, so this is known before training). Then every round's budget admits r_max on
        every sampled device, the capped Pareto programme prunes nothing (each partial sum
        plus its cheapest tail costs at most the all-r_max allocation) and returns the
        uncapped programme's lowest-variance point, `within_budget` is always true, and the
        latency is charged by rate/capacity, not by the budget: the run is the same for every
        such T_TOE (at +60 dB every T_TOE of baseline grid is such; at the
        literal SNR none is). A relative margin of 1e-9 keeps float sums off the boundary."""
        k, r_max = int(self.param("K")), int(self.param("r_max"))
        _, _, bw = self.radio(statistics)
        seconds_per_bit = sorted(1.0 / (bw * float(rate)) for rate in design["rates"])[-k:]
        worst = (HEADER + dim * r_max) * math.fsum(seconds_per_bit)
        return frozenset({"T_TOE_s"}) if worst <= float(self.param("T_TOE_s")) * (1 - 1e-9) \
            else frozenset()

    def run_constants(self, design, n: int) -> dict[str, Any]:
        return {"rates": np.asarray(design["rates"], dtype=np.float64),
                "threshold": np.asarray(design["threshold_power"], dtype=np.float64)}

    def choose(self, state: RoundState, design, n: int) -> dict[str, Any]:
        mask = _uniform_k(n, int(self.param("K")), state)
        decoded = mask & (self.channel_power(state) >= self.constants(design, n)["threshold"])
        return {"mask": mask, "decoded": decoded, "reads": mask}   # bits read ||g||_inf of all K

    def plan(self, x, scale, state: RoundState, design) -> Plan:
        n, dim = x.shape
        k = int(self.param("K"))
        _, _, bw = self.radio(state.statistics)
        rates = self.constants(design, n)["rates"]
        choice = self.choice(state, design)
        mask, decoded = choice["mask"], choice["decoded"]
        sinf2 = np.square(np.asarray(scale, dtype=np.float64))[mask]     # ||g_k||_inf^2
        r_sel, within = fedtoe_allocate(sinf2, 1.0 / (bw * rates[mask]), dim,
                                        float(self.param("T_TOE_s")), int(self.param("r_max")))
        bits = np.ones(n, dtype=np.int64)
        bits[mask] = r_sel
        weights = decoded / (k * (1.0 - float(design["p_out"])))
        payload = payload_bits(dim, bits)
        charge = fixed_rate_charge(self.param("latency_mode"), rates, self.capacity(state),
                                   decoded)                                # §V-D: capacity if decoded
        latency = _tdma_latency(payload, charge, bw, mask)                 # outage: slot L/(B R_k) (our reading)
        n_decoded = int(np.count_nonzero(decoded))
        return Plan(bits, decoded, weights, _record(                   # undecoded rows: weight 0
            n_decoded, k, latency, payload[mask].sum(), outages=k - n_decoded,
            within_budget=bool(within), mean_bits=float(r_sel.mean())))
