"""Tests of dipsy.methods.marginals.consistency: PrivSyn's consistency post-processing."""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dipsy.methods.marginals.consistency import _norm_cut, _norm_sub, make_consistent
from dipsy.methods.marginals.marginal import Marginal

TOL = 1e-9


# --- helpers --------------------------------------------------------------------------------------


def records(rng: np.random.Generator, sizes: np.ndarray, n: int, classes: int = 4) -> np.ndarray:
    """n records over len(sizes) attributes from a latent-class model (dependent attributes)."""
    z = rng.integers(0, classes, size=n)
    data = np.empty((n, len(sizes)), dtype=np.int64)
    for a, size in enumerate(sizes):
        cum = rng.dirichlet(np.full(size, 0.5), size=classes).cumsum(axis=1)
        data[:, a] = np.minimum((rng.random(n)[:, None] > cum[z]).sum(axis=1), size - 1)
    return data


def true_marginal(data: np.ndarray, sizes: np.ndarray, attrs: tuple[int, ...]) -> np.ndarray:
    shape = tuple(int(sizes[a]) for a in attrs)
    cells = np.ravel_multi_index(tuple(data[:, a] for a in attrs), shape) if attrs else np.zeros(len(data), int)
    return np.bincount(cells, minlength=math.prod(shape)).reshape(shape).astype(float)


def attribute_sets(rng: np.random.Generator, d: int, k: int, max_arity: int) -> list[tuple[int, ...]]:
    sets: list[tuple[int, ...]] = []
    while len(sets) < k:
        r = int(rng.integers(1, min(max_arity, d) + 1))
        attrs = tuple(sorted(int(a) for a in rng.choice(d, size=r, replace=False)))
        if attrs not in sets or len(sets) >= d:  # past d sets, repeats are allowed (a case too)
            sets.append(attrs)
    return sets


def noisy_problem(seed: int, d: int, max_size: int, k: int, max_arity: int, n: int, sd: tuple[float, float]):
    """True marginals of a random data set and their Gaussian-noised versions (rho = 1 / (2 sd^2))."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, max_size + 1, size=d)
    data = records(rng, sizes, n)
    truth, noisy = [], []
    for attrs in attribute_sets(rng, d, k, max_arity):
        t = true_marginal(data, sizes, attrs)
        s = float(rng.uniform(*sd))
        truth.append(Marginal(attrs, t, rho=1.0 / (2.0 * s * s)))
        noisy.append(Marginal(attrs, t + rng.normal(0.0, s, size=t.shape), rho=1.0 / (2.0 * s * s)))
    return truth, noisy


def assert_valid(out: list[Marginal], marginals: list[Marginal], tol: float = TOL) -> float:
    """(a) non-negative, (b) one total, (c) shared projections equal to tol * total; same shapes."""
    assert len(out) == len(marginals)
    for m, o in zip(marginals, out):
        assert o.attributes == m.attributes and o.rho == m.rho and o.counts.shape == np.shape(m.counts)
        assert np.all(np.isfinite(o.counts))
        assert o.counts.min() >= 0.0
    total = out[0].total
    for o in out:
        assert o.total == pytest.approx(total, rel=1e-12, abs=1e-12)
    for a, b in itertools.combinations(out, 2):
        shared = tuple(sorted(set(a.attributes) & set(b.attributes)))
        gap = np.abs(a.project(shared).counts - b.project(shared).counts).max()
        assert gap <= tol * max(total, 1e-300), (a.attributes, b.attributes, gap / total)
    return total


def l1(ms: list[Marginal], truth: list[Marginal]) -> float:
    return sum(float(np.abs(m.counts - t.counts).sum()) for m, t in zip(ms, truth))


# --- the guarantees on noisy input ----------------------------------------------------------------

CASES = [  # seed, attributes, largest size, marginals, largest arity, records, noise sd range, rule
    pytest.param(0, 14, 20, 20, 3, 20_000, (10.0, 100.0), "norm_sub", id="realistic-shape"),
    pytest.param(1, 6, 5, 8, 2, 2_000, (10.0, 60.0), "norm_sub", id="pairs"),
    pytest.param(2, 5, 4, 6, 3, 500, (5.0, 50.0), "norm_sub", id="heavy-noise"),
    pytest.param(3, 3, 3, 5, 3, 100, (0.1, 1.0), "norm_sub", id="nested-and-repeated"),
    pytest.param(4, 8, 6, 10, 2, 5_000, (1.0, 20.0), "norm_cut", id="norm_cut"),
    pytest.param(5, 4, 4, 4, 1, 1_000, (1.0, 10.0), "norm_sub", id="one-way-only"),
]


@pytest.mark.parametrize("seed, d, max_size, k, arity, n, sd, rule", CASES)
def test_noisy_marginals_become_nonnegative_equal_total_and_consistent(seed, d, max_size, k, arity, n, sd, rule):
    truth, noisy = noisy_problem(seed, d, max_size, k, arity, n, sd)
    out = make_consistent(noisy, non_negativity=rule)
    total = assert_valid(out, noisy)
    assert total == pytest.approx(n, rel=0.1)


def test_input_marginals_are_not_modified():
    _, noisy = noisy_problem(7, 5, 4, 5, 2, 300, (2.0, 5.0))
    before = [m.counts.copy() for m in noisy]
    make_consistent(noisy)
    for m, b in zip(noisy, before):
        np.testing.assert_array_equal(m.counts, b)


def test_exact_consistent_input_is_returned_unchanged():
    truth, _ = noisy_problem(8, 7, 5, 9, 3, 3_000, (1.0, 50.0))
    out = make_consistent(truth)
    for t, o in zip(truth, out):
        np.testing.assert_allclose(o.counts, t.counts, rtol=0, atol=TOL * 3_000)


def test_consistency_reduces_error_toward_the_truth_on_average():
    # Projection onto the consistent, non-negative set can only help in expectation here: the
    # true marginals lie in that set. Mean over seeds; the gain is large (about half), not marginal.
    ratios = []
    for seed in range(5):
        truth, noisy = noisy_problem(100 + seed, 8, 8, 10, 2, 5_000, (5.0, 30.0))
        ratios.append(l1(make_consistent(noisy), truth) / l1(noisy, truth))
    assert np.mean(ratios) < 0.9
    assert max(ratios) < 1.0


# --- the steps, checked against hand computations -------------------------------------------------


def test_disjoint_marginals_only_get_the_common_total():
    rng = np.random.default_rng(9)
    shapes = {(0,): (3,), (1, 2): (2, 4), (3,): (5,)}
    rhos = [0.5, 0.02, 2.0]
    # totals near 1000 and cells near 1000 / c: the shifts to the common total keep cells positive
    ms = [Marginal(a, rng.uniform(0.5, 1.5, size=s) * 1000 / math.prod(s), rho=r) for (a, s), r in zip(shapes.items(), rhos)]
    # N = sum_i (rho_i / c_i) T_i / sum_j (rho_j / c_j): inverse-variance weights of the totals
    w = np.array([m.rho / m.cells for m in ms])
    n = float(np.dot(w, [m.total for m in ms]) / w.sum())
    out = make_consistent(ms)
    for m, o in zip(ms, out):
        np.testing.assert_allclose(o.counts, m.counts + (n - m.total) / m.cells, rtol=1e-12)
        assert o.total == pytest.approx(n, rel=1e-12)


def test_shared_attribute_gets_the_weighted_average_of_projections():
    # No cell goes negative, so one pass is the whole answer: first the total, then attribute 1
    # with w_i = (rho_i / g_i) / sum_j (rho_j / g_j), g_i = cells of i per cell of attribute 1.
    rng = np.random.default_rng(10)
    a = Marginal((0, 1), rng.uniform(100, 200, size=(3, 2)), rho=0.3)
    b = Marginal((1, 2), rng.uniform(100, 200, size=(2, 5)), rho=1.1)
    wt = np.array([a.rho / a.cells, b.rho / b.cells])
    n = float(np.dot(wt, [a.total, b.total]) / wt.sum())
    shifted = [m.project((1,)).counts + (n - m.total) / m.cells * (m.cells / 2) for m in (a, b)]
    g = np.array([3.0, 5.0])
    w = np.array([a.rho, b.rho]) / g
    expected = (w[0] * shifted[0] + w[1] * shifted[1]) / w.sum()
    out = make_consistent([a, b])
    for o in out:
        np.testing.assert_allclose(o.project((1,)).counts, expected, rtol=1e-12)
    # the difference is spread evenly over the cells of each attribute-1 value
    np.testing.assert_allclose(
        out[0].counts - a.counts - (n - a.total) / 6, np.broadcast_to((expected - shifted[0]) / 3, (3, 2)), rtol=1e-9, atol=1e-9
    )


def test_nested_sets_are_consistent_after_one_pass_without_iteration():
    # {0,1,2} ⊃ {0,1} ⊃ {0} and {0,3}: intersections {0,1}, {0}, {} are closed and visited by size.
    rng = np.random.default_rng(11)
    ms = [
        Marginal((0, 1, 2), rng.uniform(10, 20, size=(2, 3, 2)), 1.0),
        Marginal((0, 1), rng.uniform(30, 40, size=(2, 3)), 0.5),
        Marginal((0, 3), rng.uniform(20, 30, size=(2, 4)), 2.0),
        Marginal((0,), rng.uniform(80, 120, size=(2,)), 0.1),
    ]
    assert_valid(make_consistent(ms, iterations=1, tolerance=1e-12), ms, tol=1e-12)


def test_exact_marginal_is_kept_when_noisy_marginals_overlap_it():
    truth, noisy = noisy_problem(12, 6, 6, 6, 2, 4_000, (5.0, 40.0))
    exact = Marginal(truth[0].attributes, truth[0].counts, rho=math.inf)
    overlapping = [m for m in noisy[1:] if set(m.attributes) & set(exact.attributes)]
    assert overlapping
    out = make_consistent([exact, *noisy[1:]])
    assert_valid(out, [exact, *noisy[1:]])
    np.testing.assert_allclose(out[0].counts, exact.counts, rtol=0, atol=TOL * exact.total)
    assert out[0].total == pytest.approx(exact.total, rel=1e-12)


def test_exact_marginals_dominate_and_are_averaged_among_themselves():
    counts = np.array([[10.0, 20.0], [30.0, 40.0]])
    noisy = Marginal((0, 1), counts + np.array([[5.0, -3.0], [2.0, 9.0]]), rho=100.0)
    exact = Marginal((0, 1), counts, rho=math.inf)
    out = make_consistent([noisy, exact])
    for o in out:
        np.testing.assert_allclose(o.counts, counts, rtol=1e-12)
    other = Marginal((0, 1), counts + 4.0, rho=math.inf)  # two exact: plain average (same cells)
    out = make_consistent([noisy, exact, other])
    for o in out:
        np.testing.assert_allclose(o.counts, counts + 2.0, rtol=1e-12)


def test_single_marginal_keeps_its_total_and_loses_its_negatives():
    m = Marginal((0, 1), np.array([[5.0, -2.0, 1.0], [-1.0, 4.0, 3.0]]), rho=1.0)
    (o,) = make_consistent([m])
    assert o.counts.min() >= 0 and o.total == pytest.approx(10.0)
    # norm_sub: zero -2 and -1 (sum 13), take 3 / 4 from each of the 4 positive cells
    np.testing.assert_allclose(o.counts, [[4.25, 0.0, 0.25], [0.0, 3.25, 2.25]])


def test_total_only_marginals_are_averaged():
    ms = [Marginal((), np.array(100.0), rho=1.0), Marginal((), np.array(130.0), rho=2.0)]
    out = make_consistent(ms)
    assert [o.total for o in out] == pytest.approx([120.0, 120.0])


def test_nonpositive_common_total_gives_all_zero_marginals(caplog):
    ms = [Marginal((0,), np.array([-3.0, 1.0]), rho=1.0), Marginal((0, 1), np.array([[1.0, -2.0], [0.5, -1.0]]), 1.0)]
    with caplog.at_level(logging.WARNING):
        out = make_consistent(ms)
    assert all(np.all(o.counts == 0.0) for o in out)
    assert "<= 0" in caplog.text


def test_unconverged_rounds_still_return_valid_marginals_with_a_warning(caplog):
    _, noisy = noisy_problem(13, 8, 10, 12, 3, 2_000, (20.0, 60.0))
    with caplog.at_level(logging.WARNING):
        out = make_consistent(noisy, iterations=1)
    assert "did not converge" in caplog.text
    assert_valid(out, noisy)


# --- non-negativity rules ------------------------------------------------------------------------


def norm_sub_loop(x: np.ndarray, total: float) -> np.ndarray:
    """PrivSyn's norm_sub as described: zero negatives, subtract one amount from positives, repeat."""
    x = x.astype(float).copy()
    while x.min() < 0:
        x[x < 0] = 0.0
        positive = x > 0
        x[positive] -= (x.sum() - total) / positive.sum()
    return x


NONNEG_CASES = [
    np.array([10.0, -5.0, 1.0]),
    np.array([3.0, -1.0, -1.0, 2.0, 0.5]),
    np.array([[4.0, -0.5], [0.25, -3.0]]),
    np.array([1.0, 1.0, 1.0, -2.9]),
    np.array([7.0, 0.0, -0.0, 2.0]),
]


@pytest.mark.parametrize("x", NONNEG_CASES)
def test_norm_sub_is_the_fixed_point_of_privsyns_loop(x):
    got = x.copy()
    _norm_sub(got, float(x.sum()))
    np.testing.assert_allclose(got, norm_sub_loop(x, float(x.sum())), atol=1e-12)


@pytest.mark.parametrize("x", NONNEG_CASES)
def test_norm_cut_zeroes_negatives_and_cuts_the_smallest_cells(x):
    got = x.copy()
    _norm_cut(got, float(x.sum()))
    assert got.min() >= 0 and got.sum() == pytest.approx(x.sum())
    changed = (got != x) & (x > 0)  # positive cells reduced: only the smallest ones
    if changed.any():
        assert x[changed].max() <= x[(x > 0) & ~changed].min(initial=np.inf)


def test_norm_cut_by_hand():
    x = np.array([5.0, -3.0, 1.0, 2.5, 0.5])
    _norm_cut(x, 6.0)  # remove 3: zero 0.5 and 1.0, take 1.5 from 2.5
    np.testing.assert_allclose(x, [5.0, 0.0, 0.0, 1.0, 0.0])


# --- bad input -----------------------------------------------------------------------------------

GOOD = Marginal((0, 1), np.ones((2, 3)), rho=1.0)
BAD_INPUTS = [
    pytest.param([], {}, "non-empty", id="empty"),
    pytest.param(GOOD, {}, "non-empty sequence", id="a-marginal-not-a-list"),
    pytest.param([GOOD, Marginal((1, 2), np.ones((4, 2)), 1.0)], {}, "attribute 1 has 3 categories", id="sizes"),
    pytest.param([GOOD, np.ones(3)], {}, "not a Marginal", id="not-a-marginal"),
    pytest.param([Marginal((0,), np.ones(2), rho=0.0)], {}, "rho", id="rho-zero"),
    pytest.param([Marginal((0,), np.ones(2), rho=float("nan"))], {}, "rho", id="rho-nan"),
    pytest.param([Marginal((0,), np.array([1.0, np.inf]), 1.0)], {}, "non-finite", id="inf-count"),
    pytest.param([GOOD], {"iterations": 0}, "iterations", id="iterations"),
    pytest.param([GOOD], {"tolerance": 0.0}, "tolerance", id="tolerance"),
    pytest.param([GOOD], {"non_negativity": "clip"}, "non_negativity", id="rule"),
]


@pytest.mark.parametrize("marginals, kwargs, message", BAD_INPUTS)
def test_bad_input_raises_a_clear_value_error(marginals, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_consistent(marginals, **kwargs)


# --- property: any random domain and marginal set ------------------------------------------------


@st.composite
def marginal_sets(draw):
    d = draw(st.integers(1, 6))
    sizes = draw(st.lists(st.integers(1, 5), min_size=d, max_size=d))
    k = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = draw(st.floats(0.5, 50.0))
    ms = []
    for _ in range(k):
        attrs = tuple(sorted(draw(st.sets(st.integers(0, d - 1), max_size=min(d, 3)))))
        rho = draw(st.sampled_from([math.inf, 0.005, 0.1, 1.0, 10.0]))
        sd = 0.0 if math.isinf(rho) else 1.0 / math.sqrt(2.0 * rho)
        shape = tuple(sizes[a] for a in attrs)
        ms.append(Marginal(attrs, rng.normal(base, sd, size=shape) if sd else np.full(shape, base), rho))
    rule = draw(st.sampled_from(["norm_sub", "norm_cut"]))
    return ms, rule


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(marginal_sets())
def test_property_random_marginal_sets_come_out_valid(case):
    ms, rule = case
    out = make_consistent(ms, non_negativity=rule)
    if out[0].total == 0.0:  # common total <= 0: all zero, trivially valid
        assert all(np.all(o.counts == 0.0) for o in out)
    assert_valid(out, ms)
