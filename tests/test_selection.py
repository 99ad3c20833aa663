"""Tests of dipsy.methods.marginals.selection: PrivSyn's InDif, eq. 1, Algorithm 1 and Algorithm 2.

The sensitivity of InDif is a privacy condition, so it is checked by enumeration of every small
table and every added record, then by a property test on larger tables; the rest is
post-processing, checked against hand values and independent re-statements of the formulas.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dipsy.methods.marginals.selection import allocate, combine, greedy_select, indif, noise_error

#: PrivSyn's bound on |ΔInDif| when one record is added or removed (§4.1).
BOUND = 4.0


# -- indif ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table, expected",
    [
        ([[10, 0], [0, 10]], 20.0),  # perfect dependence: e = 5 everywhere, |c - e| = 5 in 4 cells
        ([[1, 2], [2, 4]], 0.0),  # exactly independent (rank one)
        ([[2, 0, 0], [0, 1, 1]], 4.0),  # n = 4, r = (2, 2), s = (2, 1, 1): e = [[1, .5, .5], [1, .5, .5]]
        ([[3, 0], [0, 0]], 0.0),  # one filled cell is independent
        ([[0, 0], [0, 0]], 0.0),  # empty table
        ([[0, 5, 0]], 0.0),  # one row
        ([[6, 2], [2, 6]], 8.0),  # e = 4: |6 - 4| + |2 - 4| + ...
    ],
)
def test_indif_hand_values(table, expected):
    assert indif(np.array(table)) == pytest.approx(expected, abs=1e-12)


def test_indif_is_symmetric_and_scales_with_the_counts():
    t = np.array([[5, 1, 0, 3], [2, 8, 1, 0], [0, 2, 9, 4]])
    assert indif(t.T) == pytest.approx(indif(t), rel=1e-12)
    assert indif(7 * t) == pytest.approx(7 * indif(t), rel=1e-12)
    assert indif(t[[2, 0, 1]][:, [3, 1, 0, 2]]) == pytest.approx(indif(t), rel=1e-12)  # labels do not matter


def all_tables(shape: tuple[int, int], most: int):
    """Every count table of ``shape`` with total at most ``most``."""
    for counts in itertools.product(range(most + 1), repeat=math.prod(shape)):
        if sum(counts) <= most:
            yield np.array(counts).reshape(shape)


def expected_movement(table: np.ndarray, cell: tuple[int, int]) -> float:
    """The docstring's closed form of Σ|Δe| when a record is added to ``cell`` (n >= 1)."""
    n, r, s = table.sum(), table[cell[0]].sum(), table[:, cell[1]].sum()
    return (n * n + 2 * (n - r) * (n - s) + n) / (n * (n + 1))


def expected(table: np.ndarray) -> np.ndarray:
    n = table.sum()
    return np.outer(table.sum(axis=1), table.sum(axis=0)) / n if n else np.zeros(table.shape)


@pytest.mark.parametrize("shape, most", [((2, 2), 6), ((2, 3), 4), ((3, 2), 4), ((3, 3), 3), ((2, 4), 4), ((1, 4), 5)])
def test_indif_sensitivity_below_4_over_every_small_table(shape, most):
    """Every table with total <= most and every cell a record may join or leave: |ΔInDif| < 4, and
    the expected counts move as the proof says. The worst case found is 4N/(N + 1) at the largest
    total N (all records in one cell, one more in the opposite corner: see the test below)."""
    largest, checked = 0.0, 0
    for table in all_tables(shape, most):
        before = indif(table)
        for cell in np.ndindex(shape):
            added = table.copy()
            added[cell] += 1
            change = abs(indif(added) - before)
            assert change < BOUND, (table.tolist(), cell, change)
            if table.sum() >= 1:
                moved = np.abs(expected(added) - expected(table)).sum()
                assert moved == pytest.approx(expected_movement(table, cell), rel=1e-12)
                assert moved < 3
            if table[cell] > 0:
                removed = table.copy()
                removed[cell] -= 1
                change = max(change, abs(indif(removed) - before))
                assert change < BOUND, (table.tolist(), cell, change)
            largest, checked = max(largest, change), checked + 1
    assert checked > 100
    worst = 4 * most / (most + 1) if min(shape) >= 2 else 0.0  # one row or column: always independent
    assert largest == pytest.approx(worst, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda rows: st.integers(2, 6).flatmap(
            lambda cols: st.tuples(
                st.lists(st.integers(0, 60), min_size=rows * cols, max_size=rows * cols).map(
                    lambda c: np.array(c).reshape(rows, cols)
                ),
                st.integers(0, rows - 1),
                st.integers(0, cols - 1),
            )
        )
    )
)
def test_indif_sensitivity_below_4_on_larger_tables(case):
    table, i, j = case
    added = table.copy()
    added[i, j] += 1
    assert abs(indif(added) - indif(table)) < BOUND
    if table[i, j] > 0:  # removing a record that is there
        removed = table.copy()
        removed[i, j] -= 1
        assert abs(indif(removed) - indif(table)) < BOUND


@pytest.mark.parametrize("n", [1, 6, 12, 99, 10_000])
def test_indif_bound_is_tight(n):
    """All n records in one cell (InDif 0), then one record in the opposite corner: InDif jumps to
    4n/(n + 1), so no constant below 4 bounds the sensitivity."""
    table = np.array([[0, 0], [0, n]])
    added = np.array([[1, 0], [0, n]])
    assert indif(table) == 0.0
    assert indif(added) == pytest.approx(4 * n / (n + 1), rel=1e-12)
    if n >= 6:
        assert indif(added) - indif(table) > 3


# -- allocate and noise_error (eq. 1) -----------------------------------------------------------------


def split_error(cells: np.ndarray, rhos: np.ndarray, sensitivity: float = 1.0) -> float:
    """Σ ψ_i = Σ c_i Δ E|N(0, σ_i²)|/σ_i · σ_i with σ_i = Δ/√(2ρ_i): c_i Δ √(2/π)/√(2ρ_i) = c_i Δ/√(πρ_i)."""
    sigma = sensitivity / np.sqrt(2 * rhos)
    return float(np.sum(cells * sigma * math.sqrt(2 / math.pi)))


CELL_SETS = [[4.0], [1.0, 8.0], [4.0, 4.0, 4.0], [2.0, 30.0, 500.0, 5000.0], [6.0, 35.0, 14.0, 72.0, 9.0, 2.0]]


@pytest.mark.parametrize("cells", CELL_SETS)
@pytest.mark.parametrize("rho", [1e-3, 0.5, 40.0])
def test_allocate_sums_to_rho_and_is_proportional_to_cells_two_thirds(cells, rho):
    rhos = allocate(cells, rho)
    assert rhos.sum() == pytest.approx(rho, rel=1e-12) and (rhos > 0).all()
    ratio = rhos / np.asarray(cells) ** (2 / 3)
    assert np.allclose(ratio, ratio[0], rtol=1e-12)


@pytest.mark.parametrize("cells", CELL_SETS)
@pytest.mark.parametrize("sensitivity", [1.0, 3.0])
def test_noise_error_is_the_sum_of_psi_under_the_eq1_split(cells, sensitivity):
    cells, rho = np.asarray(cells), 0.37
    rhos = allocate(cells, rho)
    by_terms = float(np.sum(cells * sensitivity / np.sqrt(math.pi * rhos)))
    assert noise_error(cells, rho, sensitivity) == pytest.approx(by_terms, rel=1e-12)
    assert split_error(cells, rhos, sensitivity) == pytest.approx(by_terms, rel=1e-12)


@pytest.mark.parametrize("cells", CELL_SETS[1:])
def test_eq1_split_beats_every_other_split(cells):
    cells, rho = np.asarray(cells), 2.0
    best = split_error(cells, allocate(cells, rho))
    rng = np.random.default_rng(7)
    others = rng.dirichlet(np.ones(len(cells)), size=3000) * rho
    near = allocate(cells, rho) * np.exp(rng.normal(0, 0.01, size=(300, len(cells))))  # small moves around it
    near *= rho / near.sum(axis=1, keepdims=True)
    for split in np.vstack([others, near, np.full((1, len(cells)), rho / len(cells))]):
        assert split_error(cells, split) >= best * (1 - 1e-12)


# -- greedy_select (Algorithm 1) ------------------------------------------------------------------------

#: ρ = 1/π makes the noise scale 1: choosing marginals with Σc^(2/3) = w costs w^1.5.
UNIT = 1 / math.pi


@pytest.mark.parametrize(
    "scores, cells, rho, sensitivity, expected",
    [
        # 8 cells: w = 4 each. ∅: 45; {0}: 8 + 25 = 33; {0, 2}: 8^1.5 + 10 = 32.6; all: 12^1.5 = 41.6
        ([20.0, 10.0, 15.0], [8, 8, 8], UNIT, 1.0, [0, 2]),
        # twice the sensitivity doubles the noise: {0}: 16 + 25 = 41 < 45; {0, 2}: 45.3 + 10 > 41
        ([20.0, 10.0, 15.0], [8, 8, 8], UNIT, 2.0, [0]),
        # the larger score on 64 cells costs 16^1.5 = 64; the smaller on 1 cell costs 1: 1 + 10 < 19
        ([10.0, 9.0], [64, 1], UNIT, 1.0, [1]),
        # nothing lowers the error: every pair costs more noise (8) than its score
        ([7.9, 7.0, 0.5], [8, 8, 8], UNIT, 1.0, []),
        # high scores first, however they are ordered
        ([1.0, 300.0, 50.0, 500.0], [4, 4, 4, 4], 1e6, 1.0, [3, 1, 2, 0]),
        # huge ρ: every pair with a positive score, none with a score <= 0, best first
        ([5.0, -1.0, 0.5, 0.0, 3.0, -20.0], [4, 4, 100, 4, 9, 1], 1e12, 1.0, [0, 4, 2]),
        # tiny ρ: none
        ([5000.0, 300.0, 800.0], [4, 4, 4], 1e-12, 1.0, []),
        # no pairs
        ([], [], 1.0, 1.0, []),
    ],
)
def test_greedy_select_cases(scores, cells, rho, sensitivity, expected):
    assert greedy_select(np.array(scores), np.array(cells), rho, sensitivity) == expected


def total_error(chosen: list[int], scores: np.ndarray, cells: np.ndarray, rho: float, sensitivity: float) -> float:
    """E(X) from its definition: noise of the chosen under eq. 1, plus the scores of the rest."""
    rest = np.setdiff1d(np.arange(len(scores)), chosen)
    noise = noise_error(cells[chosen], rho, sensitivity) if chosen else 0.0
    return noise + float(scores[rest].sum())


@pytest.mark.parametrize("seed", range(12))
def test_greedy_select_lowers_the_error_at_every_step_and_stops_when_nothing_does(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 25))
    scores = rng.exponential(rng.uniform(5, 2000), size=m) - rng.uniform(0, 50)
    cells = rng.integers(4, 500, size=m).astype(float)
    rho, sensitivity = float(rng.uniform(0.001, 2.0)), float(rng.integers(1, 3))
    chosen = greedy_select(scores, cells, rho, sensitivity)
    assert len(set(chosen)) == len(chosen)
    errors = [total_error(chosen[:k], scores, cells, rho, sensitivity) for k in range(len(chosen) + 1)]
    assert all(b < a for a, b in zip(errors, errors[1:]))
    for k in range(len(chosen)):  # each pick is the best single addition at its step
        free = [j for j in range(m) if j not in chosen[:k]]
        best = min(total_error(chosen[:k] + [j], scores, cells, rho, sensitivity) for j in free)
        assert errors[k + 1] == pytest.approx(best, rel=1e-9)
    for j in set(range(m)) - set(chosen):  # and at the end no addition helps
        assert total_error(chosen + [j], scores, cells, rho, sensitivity) >= errors[-1] * (1 - 1e-12)


# -- combine (Algorithm 2) -----------------------------------------------------------------------------

K4 = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


@pytest.mark.parametrize(
    "pairs, sizes, gamma, expected",
    [
        # the docstring's: a triangle merged, the pair hanging off it kept
        ([(0, 1), (1, 2), (0, 2), (2, 3)], [2, 2, 2, 2], 5000, [(0, 1, 2), (2, 3)]),
        # largest first: K4 before its triangles (each shares 3 attributes with it, so dropped);
        # the triangle {3, 4, 5} shares one attribute and is merged too
        (K4 + [(3, 4), (4, 5), (3, 5)], [2] * 6, 5000, [(0, 1, 2, 3), (3, 4, 5)]),
        # gamma: K4 of 3-valued attributes has 81 cells > 80, so triangles (27 cells) instead:
        # (0,1,2) merged; (0,1,3) shares {0,1} (two) and is merged; (0,2,3), (1,2,3) share three;
        # pairs left uncovered: (2, 3)
        (K4, [3] * 4, 80, [(0, 1, 2), (0, 1, 3), (2, 3)]),
        (K4, [3] * 4, 81, [(0, 1, 2, 3)]),
        # no triangle fits: every pair stays
        (K4, [3] * 4, 26, K4),
        # an attribute larger than gamma is in no clique
        ([(0, 1), (1, 2), (0, 2)], [2, 2, 9000], 5000, [(0, 1), (1, 2), (0, 2)]),
        # pairs are sorted and deduplicated, in first-seen order
        ([(1, 0), (3, 2), (0, 1)], [2] * 4, 5000, [(0, 1), (2, 3)]),
        # two triangles sharing an edge: the second shares two attributes and is merged
        ([(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)], [2] * 4, 5000, [(0, 1, 2), (1, 2, 3)]),
        # two triangles sharing only a hub: both merged, and their pairs dropped
        ([(0, 1), (0, 2), (1, 2), (0, 3), (0, 4), (3, 4)], [2] * 5, 5000, [(0, 1, 2), (0, 3, 4)]),
        # the "at most two shared" rule: K5 of 4-valued attributes (1024 cells) with gamma = 256.
        # (0,1,2,3) is merged; every other 4-clique shares three of its attributes and is refused;
        # the triangle (0,1,4) shares two and is merged; (0,2,4), (0,3,4), ... then share three
        # ({0, 4} and one more); the pairs (2, 4) and (3, 4) are left uncovered and kept
        (list(itertools.combinations(range(5), 2)), [4] * 5, 256, [(0, 1, 2, 3), (0, 1, 4), (2, 4), (3, 4)]),
        ([], [2, 2], 5000, []),
    ],
)
def test_combine_cases(pairs, sizes, gamma, expected):
    assert combine(pairs, sizes, gamma) == expected


@st.composite
def graphs(draw):
    d = draw(st.integers(2, 8))
    all_pairs = list(itertools.combinations(range(d), 2))
    pairs = draw(st.lists(st.sampled_from(all_pairs), unique=True, max_size=len(all_pairs)))
    sizes = draw(st.lists(st.integers(1, 6), min_size=d, max_size=d))
    gamma = draw(st.integers(1, 400))
    return pairs, sizes, gamma


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_combine_properties(case):
    pairs, sizes, gamma = case
    out = combine(pairs, sizes, gamma)
    edges = {frozenset(p) for p in pairs}
    merged = [m for m in out if len(m) >= 3]
    kept = [m for m in out if len(m) == 2]
    assert out == merged + kept  # merged cliques first
    assert [len(m) for m in merged] == sorted((len(m) for m in merged), reverse=True)  # largest first
    used: set[int] = set()
    for m in merged:
        assert list(m) == sorted(set(m))
        assert all(frozenset(p) in edges for p in itertools.combinations(m, 2))  # a clique of the graph
        assert math.prod(sizes[a] for a in m) <= gamma  # gamma respected
        assert len(used.intersection(m)) <= 2  # shares at most two attributes with those merged before
        used.update(m)
    covered = {frozenset(p) for m in merged for p in itertools.combinations(m, 2)}
    assert {frozenset(p) for p in kept} == edges - covered  # uncovered pairs kept, covered ones dropped
    assert len(kept) == len(set(kept)) and all(a < b for a, b in kept)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=12, max_size=12).map(lambda c: np.array(c).reshape(3, 4)),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=7),
)
def test_an_individual_with_theta_records_moves_indif_by_less_than_4_theta(table, cells):
    """θ records added one by one: θ steps of < 4 each (what privsyn's score sensitivity assumes)."""
    added = table.copy()
    for cell in cells:
        added[cell] += 1
    assert abs(indif(added) - indif(table)) < BOUND * len(cells)
