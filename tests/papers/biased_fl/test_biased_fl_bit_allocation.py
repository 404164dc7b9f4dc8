"""QML's and FedTOE's bit allocation: the fast exact path
(``front_point``: shortcuts, Lagrangian-pruned search) returns the Pareto programme's point
(``pareto_bits``, the reference) bit for bit, ties included, on paper-shaped instances and on
each shortcut's boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from airfl.papers.biased_fl import bit_allocation as ba

D, R_MAX, B = 7850, 16, 1e6


def _programme(sinf2, spb, dim, cap, r_max, kind):
    """The allocation as the programme alone gives it (the code before front_point)."""
    cost, var = ba.allocation_tables(sinf2, spb, dim, r_max)
    if kind == "qml":
        front = ba.pareto_bits(cost, var, var_cap=sinf2.size * cap)
        return (np.full(sinf2.size, r_max), False) if front is None else (front[2][0], True)
    front = ba.pareto_bits(cost, var, cost_cap=cap - 64 * float(np.sum(spb)))
    return (np.ones(sinf2.size, dtype=np.int64), False) if front is None else (front[2][-1], True)


def _allocate(sinf2, spb, dim, cap, r_max, kind):
    fn = ba.qml_allocate if kind == "qml" else ba.fedtoe_allocate
    return fn(sinf2, spb, dim, cap, r_max)


def _same(sinf2, spb, dim, cap, r_max, kind):
    want, ok_want = _programme(sinf2, spb, dim, cap, r_max, kind)
    got, ok_got = _allocate(sinf2, spb, dim, cap, r_max, kind)
    assert ok_got == ok_want and got.dtype == np.int64 and np.array_equal(got, want), \
        (kind, sinf2, spb, cap, got, want)
    return got, ok_got


def _paper_instance(rng, kind):
    """K in 1..10, capacities 0.01..20 bit/s/Hz at B = 1 MHz (literal SNR to +60 dB),
    ||g||_inf^2 in 1e-6..1e2, caps from infeasible to non-binding."""
    k = int(rng.integers(1, 11))
    spb = 1.0 / (B * 10.0 ** rng.uniform(-2.0, math.log10(20.0), k))
    sinf2 = 10.0 ** rng.uniform(-6.0, 2.0, k)
    if kind == "qml":
        cap = float(10.0 ** rng.uniform(-8.0, 4.0))              # eps0: r_max too little .. r = 1 enough
    else:
        cap = float(10.0 ** rng.uniform(-3.0, 1.0))              # T_TOE: r = 1 overruns .. r_max fits
    return sinf2, spb, cap


@pytest.mark.parametrize("kind", ["qml", "fedtoe"])
def test_fast_path_is_the_programmes_point_on_random_paper_shapes(kind):
    rng = np.random.default_rng(11 if kind == "qml" else 12)
    outcomes = set()
    for _ in range(700):
        sinf2, spb, cap = _paper_instance(rng, kind)
        got, feasible = _same(sinf2, spb, D, cap, R_MAX, kind)
        outcomes.add((feasible, bool(np.all(got == 1)), bool(np.all(got == R_MAX))))
    assert (False, kind == "fedtoe", kind == "qml") in outcomes        # infeasible instances
    assert (True, False, False) in outcomes                            # the general case
    assert (True, kind == "qml", kind == "fedtoe") in outcomes         # the shortcut's corner


@pytest.mark.parametrize("kind", ["qml", "fedtoe"])
def test_ties_follow_the_programme(kind):
    """Identical devices (permutations tie exactly), zero gradients (a device's variance ties
    across widths), power-of-two seconds per bit and a small d (coarse sums)."""
    rng = np.random.default_rng(5)
    for case in range(300):
        k = int(rng.integers(2, 8))
        dim = int(rng.choice([20, D]))
        if case % 3 == 0:
            spb = np.full(k, 2.0 ** -int(rng.integers(16, 22)))
            sinf2 = np.full(k, float(rng.choice([0.25, 1.0, 4.0])))
        elif case % 3 == 1:
            spb = 2.0 ** -rng.integers(16, 22, k).astype(float)
            sinf2 = rng.choice([0.0, 0.5, 1.0], k)
        else:
            spb = np.repeat(1.0 / (B * rng.uniform(0.1, 10.0, 2)), [1, k - 1])
            sinf2 = np.repeat(rng.uniform(0.01, 1.0, 2), [k - 1, 1])
        cost, var = ba.allocation_tables(sinf2, spb, dim, R_MAX)
        if kind == "qml":
            cap = float(np.mean(var[np.arange(k), rng.integers(0, R_MAX, k)]))
        else:
            cap = float(np.sum(64 * spb + cost[np.arange(k), rng.integers(0, R_MAX, k)]))
        _same(sinf2, spb, dim, cap, R_MAX, kind)


def test_rounding_ties_break_as_the_programme_breaks_them():
    """A device so cheap that its width does not change the floating-point total cost: QML's
    r = 1 corner is not strictly cheapest, and the programme takes the lower variance (r_max
    there); a device so quiet that its width does not change the total variance: FedTOE takes
    the cheaper width (1 there)."""
    sinf2, spb = np.array([1.0, 1.0]), np.array([1e-6, 1e-30])
    got, _ = _same(sinf2, spb, D, 1e9, R_MAX, "qml")                    # cap far above r = 1
    assert got.tolist() == [1, R_MAX]
    got, _ = _same(np.array([1.0, 1e-40]), np.array([1e-7, 1e-7]), D, 10.0, R_MAX, "fedtoe")
    assert got.tolist() == [R_MAX, 1]


def test_qml_shortcut_boundary():
    """r = 1 everywhere exactly meets the cap (powers of two: every sum is exact) -> r = 1; one
    ulp less -> not; r_max everywhere exactly meets it -> feasible; one ulp less -> infeasible."""
    k, sinf2, spb = 4, np.ones(4), np.full(4, 2.0 ** -20)
    cost, var = ba.allocation_tables(sinf2, spb, D, R_MAX)
    at_one = float(var[:, 0].sum()) / k                       # eps0 with K eps0 = sum var(r = 1)
    assert k * at_one == float(var[:, 0].sum())
    got, ok = _same(sinf2, spb, D, at_one, R_MAX, "qml")
    assert ok and got.tolist() == [1] * k
    got, ok = _same(sinf2, spb, D, math.nextafter(at_one, 0.0), R_MAX, "qml")
    assert ok and got.sum() == k + 1                          # one device one bit more
    at_max = float(var[:, -1].sum()) / k
    got, ok = _same(sinf2, spb, D, at_max, R_MAX, "qml")
    assert ok and got.tolist() == [R_MAX] * k
    got, ok = _same(sinf2, spb, D, math.nextafter(at_max, 0.0), R_MAX, "qml")
    assert not ok and got.tolist() == [R_MAX] * k


def test_fedtoe_shortcut_boundary():
    """r_max everywhere exactly fills T_TOE -> r_max; one ulp less -> one device one bit less;
    r = 1 exactly fills it -> within budget; one ulp less -> overrun (r = 1, False)."""
    k, sinf2, spb = 4, np.ones(4), np.full(4, 2.0 ** -20)
    full = k * (64 + D * R_MAX) * 2.0 ** -20                  # exact in binary
    got, ok = _same(sinf2, spb, D, full, R_MAX, "fedtoe")
    assert ok and got.tolist() == [R_MAX] * k
    got, ok = _same(sinf2, spb, D, math.nextafter(full, 0.0), R_MAX, "fedtoe")
    assert ok and got.sum() == k * R_MAX - 1
    ones = k * (64 + D) * 2.0 ** -20
    got, ok = _same(sinf2, spb, D, ones, R_MAX, "fedtoe")
    assert ok and got.tolist() == [1] * k
    got, ok = _same(sinf2, spb, D, math.nextafter(ones, 0.0), R_MAX, "fedtoe")
    assert not ok and got.tolist() == [1] * k


def test_front_point_checks_its_input_and_falls_back_exactly():
    """Tables front_point does not take (both caps, non-monotone, r_max = 1) and a search cut
    short by its node limit go to the programme: the same point."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        sinf2, spb, cap = _paper_instance(rng, "qml")
        cost, var = ba.allocation_tables(sinf2, spb, D, R_MAX)
        front = ba.pareto_bits(cost, var, var_cap=sinf2.size * cap)
        want = None if front is None else front[2][0]
        for limit in (0, 5, 20000):
            got = ba.front_point(cost, var, var_cap=sinf2.size * cap, node_limit=limit)
            assert (got is None and want is None) or np.array_equal(got, want)
    cost, var = ba.allocation_tables(np.array([1.0, 2.0]), np.array([1e-6, 2e-6]), D, R_MAX)
    both = ba.pareto_bits(cost, var, var_cap=1.0, cost_cap=1.0)
    assert np.array_equal(ba.front_point(cost, var, var_cap=1.0, cost_cap=1.0), both[2][0])
    shuffled = cost[:, ::-1].copy()                                          # not monotone in r
    assert np.array_equal(ba.front_point(shuffled, var, var_cap=1.0),
                          ba.pareto_bits(shuffled, var, var_cap=1.0)[2][0])
    one = ba.allocation_tables(np.ones(3), np.full(3, 1e-6), D, 1)
    assert ba.front_point(*one, var_cap=1e9).tolist() == [1, 1, 1]


def test_tail_bounds_in_python_equal_numpys():
    rng = np.random.default_rng(9)
    for k in range(1, 11):
        table = 10.0 ** rng.uniform(-12, 3, (k, R_MAX))
        assert ba._py_tail(table.tolist()) == ba._tail(table).tolist()
