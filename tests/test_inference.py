"""Combining rules against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dipsy.errors import DipsyError
from dipsy.inference import combine, interval_overlap

Q = [[1.0, 10.0], [2.0, 10.0], [3.0, 10.0]]
U = [[0.5, 2.0], [0.5, 2.0], [0.5, 2.0]]


def test_reiter_partial_synthesis_rule():
    c = combine(Q, U, "reiter2003-partial")
    # b = 1, ubar = 0.5, m = 3: T = 0.5 + 1/3, nu = 2 (1 + 3*0.5/1)^2 = 12.5
    assert c.estimate[0] == 2.0 and c.variance[0] == pytest.approx(0.5 + 1 / 3) and c.df[0] == pytest.approx(12.5)
    half = stats.t.ppf(0.975, 12.5) * np.sqrt(0.5 + 1 / 3)
    assert (c.lower[0], c.upper[0]) == pytest.approx((2 - half, 2 + half))
    # b = 0: no between-set variation, normal reference
    assert c.variance[1] == 2.0 and np.isinf(c.df[1])
    assert c.upper[1] - c.estimate[1] == pytest.approx(stats.norm.ppf(0.975) * np.sqrt(2.0))


def test_full_synthesis_rule_and_its_adjustment():
    c = combine(Q, U, "rrr2003-full")
    # T = (1 + 1/3) * 1 - 0.5; nu = 2 (1 - 3*0.5/(4*1))^2
    assert c.variance[0] == pytest.approx(4 / 3 - 0.5) and c.df[0] == pytest.approx(2 * (1 - 1.5 / 4) ** 2)
    # T_f = 4/3 * b - ubar < 0: Reiter's (2002) adjustment n_syn/n * ubar
    adjusted = combine([[1.0], [1.1], [0.9]], [[1.0], [1.0], [1.0]], "rrr2003-full", n_ratio=0.5)
    assert adjusted.variance[0] == pytest.approx(0.5)


def test_one_set_uses_its_own_variance():
    c = combine([[3.0]], [[4.0]])
    assert c.rule == "single" and c.variance[0] == 4.0 and c.upper[0] == pytest.approx(3 + 1.959963984540054 * 2)
    with pytest.raises(DipsyError, match="unknown combining rule"):
        combine(Q, U, "average")


def test_interval_overlap_of_karr_et_al():
    assert interval_overlap(0.0, 1.0, 0.0, 1.0) == 1.0
    assert interval_overlap(0.0, 2.0, 1.0, 3.0) == 0.5
    assert interval_overlap(0.0, 1.0, 2.0, 3.0) < 0
    assert interval_overlap(0.0, 4.0, 1.0, 2.0) == pytest.approx(0.5 * (1 / 4 + 1))


def test_traditional_multiple_synthesis_covers_at_the_nominal_rate():
    """MS without DP on normal data (Bowen & Liu's 'MS'): Reiter's partial-synthesis interval covers
    the true mean in ~95% of 4000 repetitions. Under exact coverage the count is Binomial(4000, 0.95),
    sd 0.0034; the test allows 4 sd (a fixed seed makes it deterministic)."""
    rng = np.random.default_rng(1)
    reps, m, n = 4000, 10, 100
    x = rng.normal(0, 1, (reps, n))
    xbar, s2 = x.mean(axis=1), x.var(axis=1, ddof=1)
    sigma2 = (n - 1) * s2[:, None] / rng.chisquare(n - 1, (reps, m))  # p(mu, sigma2) ∝ 1/sigma2
    mu = rng.normal(xbar[:, None], np.sqrt(sigma2 / n))
    synthetic = rng.normal(mu[..., None], np.sqrt(sigma2)[..., None], (reps, m, n))
    q, u = synthetic.mean(axis=2), synthetic.var(axis=2, ddof=1) / n
    c = combine(q.T, u.T, "reiter2003-partial")  # the repetitions as k estimands
    coverage = np.mean((c.lower < 0) & (c.upper > 0))
    assert abs(coverage - 0.95) < 4 * np.sqrt(0.95 * 0.05 / reps)


def test_mean_and_proportion_helpers_match_hand_values():
    import pandas as pd

    from dipsy.inference import mean, proportion

    sets = [
        pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "a"]}),
        pd.DataFrame({"x": [2.0, 3.0, 4.0], "g": ["a", "a", "a"]}),
    ]
    m = mean(sets, "x").combined
    # q = (2, 3), u = (1/3, 1/3): b = 0.5, T = 1/3 + 0.25
    assert m.estimate[0] == 2.5 and m.variance[0] == pytest.approx(1 / 3 + 0.25)
    p = proportion(sets, "g", "a").combined
    assert p.estimate[0] == pytest.approx(5 / 6)
    assert p.variance[0] == pytest.approx((2 / 3 * 1 / 3 / 3 + 0) / 2 + np.var([2 / 3, 1.0], ddof=1) / 2)
