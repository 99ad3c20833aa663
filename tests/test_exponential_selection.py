"""The exact exponential mechanism (dipsy.privacy.selection): its privacy map checked exactly on
small cases, and its sampler against its own probabilities with stated power."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dipsy.privacy import PureDP
from dipsy.privacy.budget import ZCDP
from dipsy.privacy.measurement import Measurement, Statistic
from dipsy.privacy.relation import ADD_REMOVE
from dipsy.privacy.rng import Randomness
from dipsy.privacy.selection import ExponentialSelection, exponential_choice, grid_scores
from dipsy.privacy.session import Session


def renyi(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    return float(np.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1))


@pytest.mark.parametrize("epsilon, sensitivity", [(Fraction(1), Fraction(1)), (Fraction(3, 2), Fraction(5, 2))])
def test_every_neighbouring_pair_of_score_vectors_meets_epsilon_and_its_zcdp_bound(epsilon, sensitivity):
    """Exact enumeration: three candidates, base scores on a grid, every neighbour whose scores move
    by at most Δ each (including moves that cross a grid step by a float hair). The selection's
    probabilities satisfy the ε-DP ratio and the Rényi bound α·ε²/8 of ε²/8-zCDP at every order."""
    sel = ExponentialSelection.for_epsilon(epsilon, sensitivity, units=4)
    d = float(sensitivity)
    bases = [np.array(v, dtype=float) for v in itertools.product([0.0, 0.3 * d, 1.7 * d], repeat=3)]
    moves = [-d, -d / 2, 0.0, d / 3, d, d * (1 - 1e-12)]
    bound, rho = float(epsilon), float(epsilon) ** 2 / 8
    worst = 0.0
    for base in bases:
        p = sel.probabilities(base)
        for move in itertools.product(moves, repeat=3):
            q = sel.probabilities(base + np.array(move))
            worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
            for alpha in (1.5, 2.0, 5.0, 30.0):
                assert renyi(p, q, alpha) <= alpha * rho * (1 + 1e-9) + 1e-12
    assert worst <= bound * (1 + 1e-9)
    # the grid's slack is what keeps it ε: the loss reaches most of ε, it is not a loose bound
    assert worst >= 0.5 * bound


def test_the_cost_is_eps_squared_over_eight_or_eps():
    assert ExponentialSelection.for_epsilon(2, 1).cost == ZCDP(0.5)
    assert ExponentialSelection.for_epsilon(2, 1, "pure-DP").cost == PureDP(2.0)
    s = ExponentialSelection.for_rho(0.01, 1)
    assert s.cost.rho <= 0.01 and s.cost.rho == pytest.approx(0.01, rel=1e-5)
    with pytest.raises(ValueError, match="definition"):
        ExponentialSelection.for_epsilon(1, 1, "approximate-DP")


def test_the_grid_floors_and_refuses_what_it_cannot_hold():
    assert grid_scores([1.0, -1.0, 0.999], Fraction(1), 10).tolist() == [10, -10, 9]
    with pytest.raises(ValueError, match="finite"):
        grid_scores([np.nan], Fraction(1))
    with pytest.raises(ValueError, match="too large"):
        grid_scores([1e20], Fraction(1))


def test_the_sampler_draws_its_own_probabilities_with_power():
    """60,000 draws among five candidates against the exact probabilities (chi-square, α = 0.001).
    Power: a sampler whose ε were off by 10 % is rejected with probability > 0.99 (computed below
    from the noncentral chi-square), so this test can fail."""
    sel = ExponentialSelection.for_epsilon(Fraction(1), Fraction(1), units=100)
    scores = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    p = sel.probabilities(scores)
    draws = 60_000
    rand = Randomness.from_seed(20261123)
    k = grid_scores(scores, sel.sensitivity, sel.units)  # randomise's own path, vectorised over the draws
    got = np.bincount(exponential_choice(k.max() - k, sel.gamma, draws, rand), minlength=5)
    assert {sel.randomise(scores, rand) for _ in range(200)} <= set(range(5))
    chi2 = float(((got - draws * p) ** 2 / (draws * p)).sum())
    critical = stats.chi2.ppf(0.999, df=4)
    assert chi2 < critical
    off = ExponentialSelection.for_epsilon(Fraction(11, 10), Fraction(1), units=100).probabilities(scores)
    noncentrality = draws * float(((off - p) ** 2 / p).sum())
    assert stats.ncx2.sf(critical, df=4, nc=noncentrality) > 0.99


def test_a_selection_is_charged_before_it_reads_and_the_weakened_variant_draws_sharper():
    reads = []

    def scores(engine):
        reads.append(engine)
        return np.array([0.0, 10.0])

    sel = ExponentialSelection.for_epsilon(Fraction(1, 2), Fraction(1))
    m = Measurement("choose", Statistic("two scores", scores), sel, ADD_REMOVE)
    session = Session("engine", ZCDP(1.0), ADD_REMOVE, Randomness.from_seed(1), [m])
    assert session.measure(m) in (0, 1) and reads == ["engine"] and session.spent == ZCDP(1 / 32)
    weak = sel.weakened(0.5)
    assert weak.cost == sel.cost and weak.probabilities([0.0, 10.0])[1] > sel.probabilities([0.0, 10.0])[1]
    assert math.isclose(float(weak.gamma), 2 * float(sel.gamma))
