"""Exact per-round bit allocation of the QML and FedTOE baselines (Biased FL Fig. 3(b,c)).

Paper: Ul Abrar, Michelusi, "Biased Federated Learning under Wireless Heterogeneity" (arXiv
2503.06078), §V-D: QML [11] and FedTOE [10].
Per device k and bit width r in 1..r_max: cost d r t_k seconds (t_k = 1/(B C_k) or 1/(B R_k); the
64 t_k header is fixed) and quantization variance d ||g_k||_inf^2/(2^r - 1)^2 (paper (14)).

:func:`pareto_bits` is the reference: a dynamic programme over devices that keeps the exact
Pareto front of (total cost, total variance). QML takes the front's cheapest point within the
variance cap, FedTOE its lowest-variance point within the time budget. :func:`front_point`
returns the same point, bit for bit and tie for tie, much faster
(the programme was a third of a +60 dB QML round). What it computes, exactly:

* The programme's answer as a rule. Let S be the bit vectors whose every prefix passes the
  programme's cap tests (partial sums in device order, in floating point, plus the same tail
  bounds). Sorting by (cost, variance) with a stable sort and keeping strict variance records
  makes the kept prefix of devices 0..k ordered by the key
  key_k = (C_k, V_k, key_{k-1}, r_k) = (C_k, V_k, C_{k-1}, V_{k-1}, ..., C_1, V_1, r_1, ..., r_k),
  C_k, V_k the floating-point partial sums. Dropping a prefix never loses the answer: it was
  dropped for a kept prefix A with an earlier key and C_A <= C, V_A <= V, and as floating-point
  addition is monotone, A followed by the same bits is in S with a smaller key (and no larger
  cost and variance). Hence the cheapest point is the key-least vector of S and the
  lowest-variance point the least by (V_K, key); S is empty exactly when the programme returns
  None.
* Shortcuts (closed form). Cost d t_k r is nondecreasing and variance nonincreasing in r, and
  rounding is monotone, so floating-point sums are monotone in every r_k. QML: any r other than
  1 everywhere is >= 1 + e_k (one device raised to 2) componentwise for some k, so it costs at
  least C(1 + e_k); if r = 1 everywhere is in S and every C(1 + e_k) > C(1) (checked exactly, in
  the programme's summation order), r = 1 everywhere is strictly cheapest: the answer. FedTOE:
  likewise with r_max everywhere, r_max - e_k and the variance. Where a check fails (a device
  whose width does not move the rounded total: a tie) the general case decides. Emptiness: S is
  empty iff the vector of each device's least variance (QML) or least cost (FedTOE), whose
  partial sums are the smallest, fails a prefix test.
* General case: a depth-first search over the devices in their order, with the programme's own
  partial sums and cap tests (its leaves are exactly the members of S it does not prune) and
  the key compared at the leaves, pruned by a Lagrangian bound. The greedy marginal allocation
  gives a vector of S (the incumbent) and the multiplier lambda of the continuous
  relaxation (any lambda >= 0 gives a valid bound; this one a tight one). QML: with
  f_k(r) = cost_k(r) + lambda var_k(r) and delta_k = f_k - min_r f_k >= 0, a vector with
  V <= cap and C <= C_incumbent has sum_k delta_k(r_k) = C + lambda V - sum_k min f_k
  <= C_incumbent + lambda cap - sum_k min f_k; the answer is such a vector (it is in S and no
  costlier than the incumbent), and each delta_k >= 0, so a prefix whose delta sum exceeds the
  bound cannot lead to it (FedTOE: cost and variance exchanged, mu for lambda). The bound takes
  a 1e-9 relative margin: the rounding of sums of at most 2K nonnegative terms is below
  2K 2^-53 ~ 2e-15 relative, so no vector the exact bound keeps is lost. A better leaf lowers
  the bound. A search that grows past ``node_limit`` prefixes hands the instance to
  :func:`pareto_bits`: on the recorded runs (benchmarks/bit_allocation.py) only 1 of 830
  calls, a literal-SNR QML round with K = 10 nearly identical devices (their permutations tie
  almost exactly, which the programme merges and the search must visit).
"""

from __future__ import annotations

import math

import numpy as np

from airfl.papers.biased_fl.design.digital_model import HEADER_BITS

__all__ = ["allocation_tables", "fedtoe_allocate", "front_point", "pareto_bits", "qml_allocate",
           "quant_var"]

_MARGIN = 1e-9          # relative slack of the Lagrangian pruning test (rounding is ~1e-15)
_NODE_LIMIT = 3000      # prefixes a search may visit before the reference programme decides


def quant_var(sinf2: np.ndarray, r: np.ndarray, dim: int) -> np.ndarray:
    """Quantization variance of an r-bit upload."""
    return dim * sinf2 / (2.0 ** r - 1.0) ** 2        # paper eq. 14: d ||g||_inf^2/(2^r - 1)^2


def allocation_tables(sinf2: np.ndarray, seconds_per_bit: np.ndarray, dim: int,
                      r_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Per device and width r = 1..r_max: (payload seconds d r t_k, variance) [K, r_max]."""
    levels = np.arange(1, r_max + 1, dtype=np.float64)
    cost = dim * np.outer(seconds_per_bit, levels)     # paper eq. 17 form: d r_k t_k (64 t_k is fixed)
    var = quant_var(np.asarray(sinf2)[:, None], levels[None, :], dim)    # per device and width
    return cost, var


def _tail(table: np.ndarray) -> np.ndarray:
    """Per device k: sum over the later devices of their least entry (0 after the last)."""
    return np.concatenate([np.cumsum(table.min(axis=1)[::-1])[::-1][1:], [0.0]])


def pareto_bits(cost: np.ndarray, var: np.ndarray, var_cap: float = math.inf,
                cost_cap: float = math.inf) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Exact Pareto front of (sum_k cost[k, r_k], sum_k var[k, r_k]) over r_k in 1..R.

    ``cost``, ``var``: [K, R] per device and bit width. A dynamic programme over devices keeps only
    non-dominated partial sums (sorted by cost, strictly decreasing variance) and drops partial
    sums that cannot meet ``var_cap`` / ``cost_cap`` even with the best remaining choices.
    Returns (costs, variances, bit widths [F, K]) of the front sorted by cost, or None when no
    allocation meets the caps. Vectorised per device (K <= N steps of numpy work). The reference
    that :func:`front_point` reproduces.
    """
    k_count, levels = cost.shape
    tail_var, tail_cost = _tail(var), _tail(cost)
    front_cost, front_var = np.zeros(1), np.zeros(1)
    bits = np.zeros((1, 0), dtype=np.int64)
    for k in range(k_count):
        cand_cost = (front_cost[:, None] + cost[k][None, :]).ravel()
        cand_var = (front_var[:, None] + var[k][None, :]).ravel()
        parent = np.repeat(np.arange(front_cost.size), levels)
        level = np.tile(np.arange(1, levels + 1), front_cost.size)
        ok = (cand_var + tail_var[k] <= var_cap) & (cand_cost + tail_cost[k] <= cost_cap)
        if not ok.any():
            return None
        cand_cost, cand_var, parent, level = cand_cost[ok], cand_var[ok], parent[ok], level[ok]
        order = np.lexsort((cand_var, cand_cost))
        cand_cost, cand_var, parent, level = cand_cost[order], cand_var[order], parent[order], level[order]
        best_before = np.minimum.accumulate(np.concatenate([[np.inf], cand_var[:-1]]))
        keep = cand_var < best_before                       # not dominated by a cheaper candidate
        front_cost, front_var = cand_cost[keep], cand_var[keep]
        bits = np.concatenate([bits[parent[keep]], level[keep][:, None]], axis=1)
    return front_cost, front_var, bits


def _py_tail(rows: list[list[float]]) -> list[float]:
    """:func:`_tail` in Python floats, the same sums in the same order (np.cumsum accumulates
    from the last device, one addition at a time)."""
    out = [0.0] * len(rows)
    acc = None
    for k in range(len(rows) - 1, 0, -1):
        least = min(rows[k])
        acc = least if acc is None else acc + least
        out[k - 1] = acc
    return out


class _Instance:
    """One allocation problem as Python floats: the programme's partial sums and cap tests."""

    def __init__(self, cost: np.ndarray, var: np.ndarray, var_cap: float, cost_cap: float):
        self.cost, self.var = cost.tolist(), var.tolist()
        self.tail_cost, self.tail_var = _py_tail(self.cost), _py_tail(self.var)
        self.var_cap, self.cost_cap = var_cap, cost_cap
        self.k_count, self.levels = cost.shape

    def sums(self, idx: list[int]) -> tuple[float, float] | None:
        """(C_K, V_K) of widths ``idx`` (0-based) if every prefix passes the cap tests, else None."""
        c_sum = v_sum = 0.0
        for k, i in enumerate(idx):
            c_sum += self.cost[k][i]                                    # the programme's C_k
            v_sum += self.var[k][i]                                     # and V_k, in device order
            if not (v_sum + self.tail_var[k] <= self.var_cap
                    and c_sum + self.tail_cost[k] <= self.cost_cap):
                return None
        return c_sum, v_sum

    def strictly_least(self, idx: list[int], step: int, lowest_var: bool) -> bool:
        """Whether moving any one device of ``idx`` by ``step`` strictly raises the floating-point
        total cost (variance when ``lowest_var``): then every other vector is strictly worse."""
        table = self.var if lowest_var else self.cost
        base = 0.0
        for k, i in enumerate(idx):
            base += table[k][i]
        for moved in range(self.k_count):
            total = 0.0
            for k, i in enumerate(idx):
                total += table[k][i + step if k == moved else i]
            if not total > base:
                return False
        return True


class _TooLarge(Exception):
    """The search outgrew its node limit: the reference programme decides."""


def _search(inst: _Instance, delta: list[list[float]], slack: float,
            incumbent: tuple[float, float], lowest_var: bool, node_limit: int) -> list[int]:
    """Widths (0-based) of the key-least vector of S among those with
    sum_k delta_k(r_k) <= slack + their primary sum (C_K; V_K when ``lowest_var``), searched
    depth-first over the devices in order from a vector of S with sums ``incumbent``. Raises
    _TooLarge past ``node_limit`` prefixes."""
    k_count, last = inst.k_count, inst.k_count - 1
    # Only the incumbent's primary sum is read (it sets the bound), not its vector: that vector
    # is in S and within the bound, so the search visits it as a leaf and `found` cannot stay
    # empty; any key-smaller vector of no larger primary sum replaces it. Not a departure from
    # the allocation the baselines solve (the programme's point, `pareto_bits`): the same
    # answer, found faster (tests/papers/biased_fl/test_biased_fl_bit_allocation.py compares them).
    best = incumbent[1] if lowest_var else incumbent[0]
    limit = slack + best                                    # the Lagrangian bound on the delta sum
    choices = [sorted((d, i) for i, d in enumerate(row) if d <= limit) for row in delta]
    cost, var, tail_cost, tail_var = inst.cost, inst.var, inst.tail_cost, inst.tail_var
    var_cap, cost_cap = inst.var_cap, inst.cost_cap
    path_c, path_v, path_i = [0.0] * k_count, [0.0] * k_count, [0] * k_count
    found: list = [None]
    visited = 0

    def visit(k: int, c_prev: float, v_prev: float, d_prev: float) -> None:
        nonlocal best, limit, visited
        row_c, row_v, t_c, t_v = cost[k], var[k], tail_cost[k], tail_var[k]
        for d_k, i in choices[k]:
            d_sum = d_prev + d_k
            if d_sum > limit:
                return                                      # sorted by delta: the rest exceed too
            c_sum = c_prev + row_c[i]                       # the programme's C_k and V_k,
            v_sum = v_prev + row_v[i]                       # summed in device order
            if not (v_sum + t_v <= var_cap and c_sum + t_c <= cost_cap):
                continue                                    # the programme's cap tests
            visited += 1
            if visited > node_limit:
                raise _TooLarge
            path_c[k], path_v[k], path_i[k] = c_sum, v_sum, i
            if k < last:
                visit(k + 1, c_sum, v_sum, d_sum)
                continue
            primary = v_sum if lowest_var else c_sum
            if primary > best:
                continue
            key = _key(path_c, path_v, path_i, lowest_var)
            if found[0] is None or key < found[0]:
                found[0] = key
                limit += primary - best                     # tighter with a better vector
                best = primary

    visit(0, 0.0, 0.0, 0.0)
    if found[0] is None:                # cannot happen: the incumbent is within the bound
        raise _TooLarge
    return list(found[0][-k_count:])


def _key(path_c: list[float], path_v: list[float], path_i: list[int], lowest_var: bool) -> tuple:
    """The programme's order: (C_K, V_K, C_{K-1}, V_{K-1}, ..., C_1, V_1, r_1, ..., r_K), led by
    V_K for the lowest-variance point (module docstring)."""
    sums = tuple(x for c, v in zip(reversed(path_c), reversed(path_v)) for x in (c, v))
    return ((path_v[-1],) if lowest_var else ()) + sums + tuple(path_i)


def _greedy(cost: np.ndarray, var: np.ndarray, cap: float,
            lowest_var: bool) -> tuple[np.ndarray, range, float]:
    """The greedy marginal allocation (our first reading of QML/FedTOE's bit loading): raise
    the width with the least cost per unit of variance removed, d t_k / (var_k(r) - var_k(r + 1)), while the variance exceeds the cap
    (QML) or while the budget allows (FedTOE). Returns (the device of each step in greedy
    order, the step counts to try for a vector of S, best first, the multiplier): lambda = the
    last step's ratio (QML), mu = 1/(the first refused step's ratio) (FedTOE), the continuous
    relaxation's dual; 0 where that is not finite (any multiplier >= 0 gives a valid bound)."""
    levels = cost.shape[1]
    gain = (var[:, :-1] - var[:, 1:]).ravel()                       # variance removed by a step
    price = (cost[:, 1:] - cost[:, :-1]).ravel()                    # seconds the step costs
    ratio = np.divide(price, gain, out=np.full_like(price, np.inf), where=gain > 0)
    order = np.argsort(ratio, kind="stable")
    if lowest_var:
        spent = cost[:, 0].sum() + np.cumsum(price[order])
        taken = int(np.searchsorted(spent, cap, side="right"))     # steps within the budget
        mult = 1.0 / ratio[order[taken]] if taken < order.size else 0.0
        tries = range(taken, -1, -1)                               # fewer steps if not in S
    else:
        meets = var[:, 0].sum() - np.cumsum(gain[order]) <= cap
        taken = int(np.argmax(meets)) + 1 if meets[-1] else order.size
        mult = ratio[order[taken - 1]] if taken else 0.0
        tries = range(taken, order.size + 1)                       # more steps if not in S
    mult = float(mult)
    return order // (levels - 1), tries, mult if math.isfinite(mult) else 0.0


def front_point(cost: np.ndarray, var: np.ndarray, var_cap: float = math.inf,
                cost_cap: float = math.inf, *, lowest_var: bool = False,
                node_limit: int = _NODE_LIMIT) -> np.ndarray | None:
    """``pareto_bits(cost, var, var_cap, cost_cap)[2][-1 if lowest_var else 0]`` (None when that
    is None), exactly, without building the front (module docstring: the rule, the shortcuts,
    the pruned search). Built for one constraint: a finite ``var_cap`` (QML, the cheapest point)
    or a finite ``cost_cap`` (FedTOE, ``lowest_var``), finite costs nondecreasing and variances
    nonincreasing in r; any other input goes to the reference."""
    if not (cost.ndim == 2 and cost.shape == var.shape and cost.shape[1] > 1
            and np.isfinite(cost).all() and np.isfinite(var).all()
            and (np.diff(cost, axis=1) >= 0).all() and (np.diff(var, axis=1) <= 0).all()):
        return _reference(cost, var, var_cap, cost_cap, lowest_var)
    return _front_point(cost, var, var_cap, cost_cap, lowest_var, node_limit)


def _front_point(cost, var, var_cap, cost_cap, lowest_var, node_limit) -> np.ndarray | None:
    """:func:`front_point` on tables known to be monotone in r (nondecreasing cost,
    nonincreasing variance), as :func:`allocation_tables` makes them from t_k > 0, s_k >= 0."""
    k_count, levels = cost.shape
    one_cap = (math.isinf(var_cap) and math.isfinite(cost_cap)) if lowest_var else \
        (math.isinf(cost_cap) and math.isfinite(var_cap))
    if not (one_cap and k_count and levels > 1):
        return _reference(cost, var, var_cap, cost_cap, lowest_var)
    inst = _Instance(cost, var, var_cap, cost_cap)
    if not all(math.isfinite(c[-1]) and math.isfinite(v[0]) for c, v in zip(inst.cost, inst.var)):
        return _reference(cost, var, var_cap, cost_cap, lowest_var)   # largest entries finite
    table = inst.cost if lowest_var else inst.var
    least = [row.index(min(row)) for row in table]                  # the smallest partial sums
    sums = inst.sums(least)
    if sums is None:
        return None                                                 # S is empty
    corner = [levels - 1] * k_count if lowest_var else [0] * k_count
    if inst.sums(corner) is not None and inst.strictly_least(corner, -1 if lowest_var else 1,
                                                             lowest_var):
        return np.array(corner, dtype=np.int64) + 1                 # the closed-form shortcut
    cap = cost_cap if lowest_var else var_cap
    device, tries, mult = _greedy(cost, var, cap, lowest_var)
    for taken in tries:                         # the greedy vector's sums bound the search, if in S
        idx = np.bincount(device[:taken], minlength=k_count).tolist()
        if (found := inst.sums(idx)) is not None:
            sums = found
            break
    objective = var + mult * cost if lowest_var else cost + mult * var     # f_k(r)
    floor = objective.min(axis=1)
    delta = (objective - floor[:, None]).tolist()                   # delta_k(r) >= 0
    floor_sum = float(floor.sum())
    primary = sums[1] if lowest_var else sums[0]
    slack = mult * cap - floor_sum + _MARGIN * (primary + mult * abs(cap) + abs(floor_sum))
    try:
        idx = _search(inst, delta, slack, sums, lowest_var, node_limit)
    except _TooLarge:
        return _reference(cost, var, var_cap, cost_cap, lowest_var)
    return np.array(idx, dtype=np.int64) + 1


def _reference(cost, var, var_cap, cost_cap, lowest_var) -> np.ndarray | None:
    """The programme's point, for inputs :func:`front_point` does not take."""
    front = pareto_bits(cost, var, var_cap=var_cap, cost_cap=cost_cap)
    return None if front is None else front[2][-1 if lowest_var else 0]


def _plain(sinf2: list[float], seconds_per_bit: list[float]) -> bool:
    """Inputs whose tables are monotone in r (what :func:`_front_point` assumes): t_k > 0 makes
    d r t_k nondecreasing, s_k >= 0 makes d s_k/(2^r - 1)^2 nonincreasing (rounding is monotone)."""
    return all(0.0 < t < math.inf for t in seconds_per_bit) and all(0.0 <= s < math.inf for s in sinf2)


def qml_allocate(sinf2: np.ndarray, seconds_per_bit: np.ndarray, dim: int, eps0: float,
                 r_max: int) -> tuple[np.ndarray, bool]:
    """Bits minimising sum_k (64 + d r_k) t_k s.t. (1/K) sum_k d ||g_k||_inf^2/(2^r_k - 1)^2 <= eps0.

    t_k = 1/(B C_k) seconds per bit. Solved exactly (our choice): the cheapest point of
    :func:`pareto_bits`'s front, computed by :func:`front_point`; the greedy marginal
    allocation missed the optimum in ~25% of random 3-device cases (it overshoots the constraint
    with its last increments). Returns (r, feasible); when even r = r_max everywhere violates
    the constraint the allocation is r_max everywhere and feasible = False.
    """
    cost, var = allocation_tables(sinf2, seconds_per_bit, dim, r_max)
    var_cap = sinf2.size * eps0                         # (1/K) sum var <= eps0
    if _plain(np.asarray(sinf2).tolist(), np.asarray(seconds_per_bit).tolist()) and dim > 0:
        bits = _front_point(cost, var, var_cap, math.inf, False, _NODE_LIMIT)
    else:
        bits = _reference(cost, var, var_cap, math.inf, False)
    if bits is None:
        return np.full(sinf2.size, r_max, dtype=np.int64), False
    return bits, True                                                    # cheapest feasible


def fedtoe_allocate(sinf2: np.ndarray, seconds_per_bit: np.ndarray, dim: int, budget_s: float,
                    r_max: int) -> tuple[np.ndarray, bool]:
    """Bits minimising sum_k d ||g_k||_inf^2/(2^r_k - 1)^2 s.t. sum_k (64 + d r_k) t_k <= T_TOE.

    t_k = 1/(B R_k). Solved exactly (our choice; the greedy allocation is not optimal in
    general): the lowest-variance point of :func:`pareto_bits`'s front, computed by
    :func:`front_point`. If r = 1 already overruns the budget, r = 1 is used and the round
    overruns (within_budget = False).
    """
    cost, var = allocation_tables(sinf2, seconds_per_bit, dim, r_max)
    cost_cap = budget_s - HEADER_BITS * float(np.sum(seconds_per_bit))  # T_TOE - sum 64 t_k (the headers' time is fixed)
    if _plain(np.asarray(sinf2).tolist(), np.asarray(seconds_per_bit).tolist()) and dim > 0:
        bits = _front_point(cost, var, math.inf, cost_cap, True, _NODE_LIMIT)
    else:
        bits = _reference(cost, var, math.inf, cost_cap, True)
    if bits is None:
        return np.ones(sinf2.size, dtype=np.int64), False
    return bits, True                                                    # lowest variance within budget
