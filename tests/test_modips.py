"""modips (Liu 2016; Bowen & Liu): sensitivities, budget, post-processing, posteriors, end to end.

Every sensitivity in :mod:`dipsy.methods.modips.models` is a derivation; here hypothesis checks that
no substitution (or add/remove, where stated) moves a statistic by more than it, and a constructed
pair of neighbours attains it. The truncation cost (eq. N5 of :mod:`dipsy.methods.modips.noise`) is
checked against brute force from independent formulas (SciPy integration, direct sums).
Statistical checks use fixed seeds and tolerances derived from the distributions. Fits run as a
release does: the plan's measurements through a :class:`~dipsy.privacy.session.Session` (:func:`fitted`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import dipsy
from dipsy.domain import Column, Domain
from dipsy.engine import NumpyEngine
from dipsy.engine.duckdb_engine import DuckDBEngine
from dipsy.errors import DipsyError, PrivacyError
from dipsy.methods import ADD_REMOVE, REGISTRY, SUBSTITUTE
from dipsy.methods.modips import Modips, ModipsModel, bernoulli_sets, choose_model, multinomial_sets, normal_sets
from dipsy.methods.modips import models as M
from dipsy.methods.modips.noise import (
    Component,
    Sanitization,
    component_loss,
    float_up,
    noise_scales,
    round_up,
    sanitize,
    truncated_discrete_laplace,
    truncated_laplace,
    truncation_loss,
)
from dipsy.privacy import PureDP
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace, laplace
from dipsy.privacy.session import Session

SETTINGS = settings(max_examples=150, deadline=None)
P_MIN = 1e-3  # goodness-of-fit tests at a fixed seed: reject only a clearly wrong law


def test_modips_is_registered():
    assert REGISTRY["modips"] is Modips


def fitted(synth: Modips, engine, seed: int = 0):
    """Plan (n only under substitution), then fit through a session as a release does: (plan, model, session)."""
    n = engine.ensure_valid().valid_rows
    plan = synth.plan(n if synth.relation.fixes_n else None, engine.domain)
    session = Session(engine, plan.declared(synth.budget), plan.relation, Randomness.from_seed(seed), plan.measurements)
    model = synth.fit(session, plan)
    session.close()
    return plan, model, session


def close_to(change: float, bound: float, scale: float) -> bool:
    """``change <= bound`` up to float rounding of statistics of size ``scale``."""
    return change <= bound * (1 + 1e-9) + 1e-12 * scale


# -- sensitivities: Bernoulli and counts (B1, C1) ------------------------------------------------


@SETTINGS
@given(st.data())
def test_count_sensitivities_hold_under_substitution_and_add_remove(data):
    k = data.draw(st.integers(2, 5))
    cells = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=30)))
    i = data.draw(st.integers(0, cells.size - 1))
    other = cells.copy()
    other[i] = data.draw(st.integers(0, k - 1))
    y, y_sub, y_rem = (np.bincount(c, minlength=k) for c in (cells, other, np.delete(cells, i)))
    assert np.abs(y - y_sub).sum() <= float(M.multinomial_components(len(cells), k)[0].sensitivity)  # (C1): 2
    assert np.abs(y - y_rem).sum() <= float(M.multinomial_components(None, k)[0].sensitivity)  # (C1): 1
    assert abs(y[1] - y_sub[1]) <= float(M.bernoulli_components(len(cells))[0].sensitivity)  # (B1): 1


def test_count_sensitivities_are_attained():
    y, y_sub = np.array([3, 0]), np.array([2, 1])
    assert np.abs(y - y_sub).sum() == M.multinomial_components(3, 2)[0].sensitivity == 2
    assert abs(y[1] - y_sub[1]) == M.bernoulli_components(3)[0].sensitivity == 1


# -- sensitivities: normal (M1–M4) --------------------------------------------------------------

bounds = st.tuples(st.floats(-100, 100), st.floats(0.1, 100)).map(lambda t: (t[0], t[0] + t[1]))


@SETTINGS
@given(bounds, st.data())
def test_normal_sensitivities_hold(box, data):
    c0, c1 = box
    n = data.draw(st.integers(2, 30))
    values = st.floats(c0, c1, allow_nan=False)
    x = np.array(data.draw(st.lists(values, min_size=n, max_size=n)))
    x2 = x.copy()
    x2[data.draw(st.integers(0, n - 1))] = data.draw(values)
    mean_c, var_c = M.normal_components(n, c0, c1)
    (m1, v1), (m2, v2) = M.normal_statistics(x), M.normal_statistics(x2)
    size = max(abs(c0), abs(c1)) ** 2
    assert close_to(abs(m1 - m2), float(mean_c.sensitivity), size)
    assert close_to(abs(v1 - v2), float(var_c.sensitivity), size)
    assert close_to(abs(m1 - m2) + abs(v1 - v2), float(mean_c.sensitivity + var_c.sensitivity), size)  # (M3)
    assert c0 - 1e-9 * size <= m1 <= c1 + 1e-9 * size and 0 <= v1 <= var_c.upper * (1 + 1e-9)  # (M4)


@pytest.mark.parametrize("n", [2, 3, 7, 40])
@pytest.mark.parametrize("box", [(0.0, 1.0), (-3.0, 5.0), (0.0, 1e6)])
def test_normal_sensitivities_and_bounds_are_attained(n, box):
    c0, c1 = box
    mean_c, var_c = M.normal_components(n, c0, c1)
    x = np.full(n, c0)
    x2 = x.copy()
    x2[-1] = c1
    (m1, v1), (m2, v2) = M.normal_statistics(x), M.normal_statistics(x2)
    assert m2 - m1 == pytest.approx(float(mean_c.sensitivity), rel=1e-12)
    assert v2 - v1 == pytest.approx(float(var_c.sensitivity), rel=1e-12)
    half = np.where(np.arange(n) < n // 2, c0, c1)
    assert M.normal_statistics(half)[1] == pytest.approx(var_c.upper, rel=1e-12)
    assert mean_c.lower == c0 and mean_c.upper == c1


# -- sensitivities: mixed (X1, W1–W3) ------------------------------------------------------------


def mixed_case(data, p: int):
    k = data.draw(st.integers(2, 5))
    n = data.draw(st.integers(k + p, 25))
    box = [data.draw(bounds) for _ in range(p)]
    lower, upper = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    record = st.tuples(st.integers(0, k - 1), *[st.floats(lo, hi, allow_nan=False) for lo, hi in box])
    rows = data.draw(st.lists(record, min_size=n, max_size=n))
    return k, n, lower, upper, rows, record


@SETTINGS
@given(st.integers(1, 3), st.data())
def test_mixed_sensitivities_and_bounds_hold(p, data):
    k, n, lower, upper, rows, record = mixed_case(data, p)
    rows2 = list(rows)
    rows2[data.draw(st.integers(0, n - 1))] = data.draw(record)
    components = M.mixed_components(n, k, lower, upper, tuple(f"y{j}" for j in range(p)))
    centre = (lower + upper) / 2
    a, b = (M.mixed_statistics(np.array([r[0] for r in rs]), np.array([r[1:] for r in rs]), k, centre) for rs in (rows, rows2))
    size = n * float(np.max(np.abs(np.concatenate([lower, upper])))) ** 2
    assert len(components) == 1 + p + p * (p + 1) // 2 == len(a)
    for c, s, t in zip(components, a, b):
        assert close_to(float(np.abs(np.asarray(s, float) - t).sum()), float(c.sensitivity), size), c.name
        assert np.all(np.asarray(s) >= c.lower - 1e-9 * size) and np.all(np.asarray(s) <= c.upper + 1e-9 * size), c.name


@pytest.mark.parametrize("n", [3, 4, 9, 10])
def test_mixed_sensitivities_are_attained(n):
    lower, upper = np.array([0.0, -2.0]), np.array([1.0, 3.0])
    w = upper - lower
    comp = M.mixed_components(n, 2, lower, upper, ("y1", "y2"))
    centre = (lower + upper) / 2

    def change(before, after, which):
        s = [M.mixed_statistics(np.array(c), np.array(y, float), 2, centre) for c, y in (before, after)]
        return float(np.abs(np.asarray(s[0][which], float) - s[1][which]).sum())

    lo, hi = lower.tolist(), upper.tolist()
    # counts and sums: one record moves from cell 0 to cell 1 / stays and goes from a_j to b_j
    assert change(([0] * n, [lo] * n), ([0] * (n - 1) + [1], [lo] * n), 0) == 2
    assert change(([0] * n, [lo] * n), ([0] * n, [lo] * (n - 1) + [hi]), 1) == pytest.approx(w[0])
    # (W1): n - 1 others at a_j in one cell, the mover leaves from b_j to the empty cell
    before = ([0] * n, [lo] * (n - 1) + [hi])
    after = ([0] * (n - 1) + [1], [lo] * (n - 1) + [hi])
    assert change(before, after, 3) == pytest.approx(float(comp[3].sensitivity), rel=1e-12)
    assert change(before, after, 4) == pytest.approx(float(comp[4].sensitivity), rel=1e-12)
    # (W2): a = floor((n+1)/2) in cell 0 (a - 1 at (a1, b2), mover at (b1, a2)); c = n - a at (a1, a2) in cell 1
    a = (n + 1) // 2
    cells = [0] * a + [1] * (n - a)
    ys = [[lo[0], hi[1]]] * (a - 1) + [[hi[0], lo[1]]] + [lo] * (n - a)
    moved = [1] * a + [1] * (n - a)
    moved[: a - 1] = [0] * (a - 1)
    assert change((cells, ys), (moved, ys[: a - 1] + [hi] + ys[a:]), 5) == pytest.approx(float(comp[5].sensitivity), rel=1e-12)


@pytest.mark.parametrize("n, want", [(2, Fraction(1, 2)), (3, Fraction(1)), (1000, 2 - Fraction(1, 500) - Fraction(1, 501))])
def test_cross_product_sensitivity_is_about_twice_the_variance_one(n, want):
    assert M.cross_product_sensitivity(n, Fraction(2), Fraction(3)) == 6 * want
    assert M.mixed_components(n, 2, np.zeros(2), np.array([2.0, 3.0]), ("a", "b"))[3].sensitivity == 4 * Fraction(n - 1, n)


# -- budget: m sets × ε/m, split vs non-split scales -------------------------------------------


@pytest.mark.parametrize("post, factor", [("threshold", 1), ("truncation", 2)])
@pytest.mark.parametrize("budget", ["split", "non-split"])
def test_normal_scales_and_spends_are_as_derived(budget, post, factor):
    n, eps, m = 50, 2.0, 4
    d = Domain((Column("x", "numeric", lower=-1, upper=3, bins=(-1, 1, 3)),))
    plan = Modips(PureDP(eps), sets=m, options={"model": "normal", "budget": budget, "post": post}).plan(n, d)
    deltas = [4 / n, 16 / n]  # (M1), (M2) with w = 4
    want = [factor * 2 * dl * m / eps for dl in deltas] if budget == "split" else [factor * sum(deltas) * m / eps] * 2
    got = [c["scale"] for c in plan.parameters["sanitization"].values()]
    assert got == pytest.approx(want, rel=1e-12)
    assert len(plan.spends) == m and all(s.budget.epsilon == pytest.approx(eps / m) for s in plan.spends)
    assert sum(s.budget.epsilon for s in plan.spends) == pytest.approx(eps)
    losses = [c["privacy_loss"] for c in plan.parameters["sanitization"].values()]
    assert sum(losses) <= eps / m * (1 + 1e-12)
    if post == "threshold":
        assert sum(losses) == pytest.approx(eps / m)
    # the truncation's doubling is in the mechanism's declared cost: its scales under thresholding declare half
    mechanism = plan.measurements[0].mechanism
    assert isinstance(mechanism, Sanitization) and all(x.mechanism is mechanism for x in plan.measurements)
    assert mechanism.cost.epsilon == pytest.approx(eps / m, rel=1e-12) and mechanism.post == post
    assert dataclasses.replace(mechanism, post="threshold").cost.epsilon == pytest.approx(eps / m / factor, rel=1e-12)
    assert dataclasses.replace(mechanism, post="truncation").cost.epsilon == pytest.approx(2 * eps / m / factor, rel=1e-12)
    assert [float(b) for b in mechanism.weakened(0.5).scales] == pytest.approx([w / 2 for w in want], rel=1e-12)


def test_mixed_split_gives_each_of_six_components_a_sixth():
    n, eps, m = 200, 1.0, 10
    plan = Modips(PureDP(eps), sets=m, options={"model": "mixed"}).plan(n, mixed_domain())
    info = plan.parameters["sanitization"]
    assert len(info) == 6
    for c in info.values():
        assert c["scale"] == pytest.approx(6 * c["sensitivity"] * m / eps, rel=1e-12)
        assert c["privacy_loss"] == pytest.approx(eps / m / 6)
    nonsplit = Modips(PureDP(eps), sets=m, options={"model": "mixed", "budget": "non-split"}).plan(n, mixed_domain())
    total = sum(c["sensitivity"] for c in info.values())
    assert {round(c["scale"], 6) for c in nonsplit.parameters["sanitization"].values()} == {round(total * m / eps, 6)}


def test_exact_scales_are_never_rounded_down():
    c = [Component("a", 1, Fraction(1, 3), 0, 1, False), Component("b", 1, Fraction(10**20 + 1, 7), 0, 1, True)]
    for scale in noise_scales(c, Fraction(1, 10), "split", "threshold"):
        assert float_up(scale) >= scale and round_up(scale) >= scale
        assert round_up(scale) - scale <= scale * 2**-50


# -- post-processing ------------------------------------------------------------------------------


@pytest.mark.parametrize("post", ["threshold", "truncation"])
def test_sanitized_statistics_stay_in_bounds(post):
    rand = Randomness.from_seed(3)
    comps = [Component("counts", 4, Fraction(2), 0, 20, True), Component("mean", 1, Fraction(1, 20), -1.0, 2.0, False)]
    scales = noise_scales(comps, Fraction(1, 100), "split", post)  # noise far wider than the bounds
    values = [np.tile([0, 20, 7, 3], (500, 1)), np.full(500, 1.9)]
    counts, mean = sanitize(values, comps, scales, post, rand)
    assert counts.dtype == np.int64 and counts.min() >= 0 and counts.max() <= 20
    assert mean.min() >= -1.0 and mean.max() <= 2.0
    if post == "threshold":  # thresholding piles mass on the bounds (boundary inflation)
        assert np.mean(counts == 0) > 0.3 and np.mean(mean == 2.0) > 0.3


def test_threshold_noise_is_the_samplers_at_a_seed():
    d = Domain((Column("x", "numeric", lower=-1e9, upper=1e9, bins=(-1e9, 0, 1e9)),))
    x = pd.DataFrame({"x": np.linspace(-3, 5, 40)})
    synth = Modips(PureDP(1.0), sets=2, options={"model": "normal"})
    plan, model, _ = fitted(synth, NumpyEngine(x, d), seed=11)
    noisy = model.sanitized(0)  # set 0 is the session's first measurement
    r = Randomness.from_seed(11)
    mechanism = plan.measurements[0].mechanism
    statistics = M.normal_statistics(x["x"].to_numpy())
    expected = [
        np.clip(s + laplace(float_up(b), (), r), c.lower, c.upper)
        for s, b, c in zip(statistics, mechanism.scales, mechanism.components)
    ]
    assert noisy[0] != statistics[0]  # the mean's noise did not hit a bound
    assert [float(v) for v in noisy] == [float(v) for v in expected]
    # counts: exact discrete Laplace
    cat = Domain((Column("g", "categorical", categories=("a", "b", "c")),))
    synth = Modips(PureDP(1.0), sets=1, options={"model": "multinomial"})
    plan, model, _ = fitted(synth, NumpyEngine(pd.DataFrame({"g": list("aabbbc")}), cat), seed=5)
    noisy = model.sanitized(0)
    raw = np.array([2, 3, 1]) + discrete_laplace(plan.measurements[0].mechanism.scales[0], 3, Randomness.from_seed(5))
    assert noisy[0].tolist() == np.clip(raw, 0, 6).tolist()


# -- truncation: its exact cost (eq. N5) and its sampler ---------------------------------------


def discrete_truncated_loss(n: int, b: float) -> float:
    """max log ratio of the truncated discrete Laplace on {0..n} between s and s ± 1 (direct sums)."""
    t = np.arange(n + 1)
    logp = np.array([-np.abs(t - s) / b - np.log(np.exp(-np.abs(t - s) / b).sum()) for s in range(n + 1)])
    return float(np.max(np.abs(logp[1:] - logp[:-1])))


@pytest.mark.parametrize("n", [1, 3, 10, 60])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_discrete_truncation_costs_what_eq_n5_says(n, epsilon):
    exact = discrete_truncated_loss(n, 2 / epsilon)  # dipsy's scale: doubled
    assert exact == pytest.approx(truncation_loss(2 / epsilon, 1, 0, n, True), rel=1e-9)
    assert exact <= epsilon * (1 + 1e-12)
    naive = discrete_truncated_loss(n, 1 / epsilon)  # truncation at the Laplace scale ...
    if n > 1:
        assert naive > epsilon  # ... is not ε-DP
    else:
        assert naive == pytest.approx(epsilon)  # ... except when the range is no wider than Δ (Z(L) = Z(U))


@pytest.mark.parametrize("scale", [0.3, 2.0, 50.0])
@pytest.mark.parametrize("delta, box", [(1.0, (0.0, 10.0)), (0.5, (-1.0, 1.0)), (3.0, (0.0, 2.0))])
def test_continuous_truncation_costs_what_eq_n5_says(scale, delta, box):
    lo, hi = box
    grid = np.linspace(lo, hi, 41)

    def density(x: float, s: float) -> float:
        """The Laplace density at x about s, as stats.laplace(s, scale).pdf (the same values here), without the
        frozen distribution's overhead per call: quad calls it thousands of times (2 s a case before)."""
        return np.exp(-abs(x - s) / scale) / (2 * scale)

    log_z = np.log([integrate.quad(density, lo, hi, args=(s,), epsabs=0, epsrel=1e-12)[0] for s in grid])
    brute = 0.0
    for out in np.linspace(lo, hi, 21):  # every output, not only the bounds eq. N5 says are worst
        logp = stats.laplace.logpdf(out, grid, scale) - log_z
        near = np.abs(grid[:, None] - grid[None, :]) <= delta + 1e-12
        brute = max(brute, float(np.max((logp[:, None] - logp[None, :])[near])))
    formula = truncation_loss(scale, delta, lo, hi, False)
    assert brute <= formula + 1e-9
    assert brute == pytest.approx(formula, rel=1e-7)  # attained: lo + min(Δ, hi - lo) is on the grid
    assert formula <= 2 * min(delta, hi - lo) / scale + 1e-12


def test_vector_truncation_cost_matches_enumeration():
    """Counts of 3 records in 3 cells under substitution: the exact loss is 2 h(1) (C4)."""
    n, k, eps = 3, 3, 1.0
    comp = M.multinomial_components(n, k)[0]
    (b,) = noise_scales([comp], Fraction(1), "split", "truncation")
    b = float(b)
    t = np.arange(n + 1)
    logp1 = lambda s: -np.abs(t - s) / b - np.log(np.exp(-np.abs(t - s) / b).sum())
    outs = np.array(list(itertools.product(range(n + 1), repeat=k)))
    datasets = [y for y in itertools.product(range(n + 1), repeat=k) if sum(y) == n]
    logp = {y: sum(logp1(y[i])[outs[:, i]] for i in range(k)) for y in datasets}
    loss = 0.0
    for y in datasets:
        for i, j in itertools.permutations(range(k), 2):
            if y[i]:
                y2 = list(y)
                y2[i] -= 1
                y2[j] += 1
                loss = max(loss, float(np.max(logp[y] - logp[tuple(y2)])))
    assert loss == pytest.approx(component_loss(comp, Fraction(b), "truncation"), rel=1e-9)
    assert loss <= eps * (1 + 1e-12)


@pytest.mark.parametrize("scale", [Fraction(2), Fraction(50)])  # Laplace and uniform proposals
def test_truncated_discrete_laplace_has_the_truncated_law(scale):
    s, lo, hi, draws = 3, 0, 10, 20000
    x = truncated_discrete_laplace(np.full(draws, s), scale, lo, hi, Randomness.from_seed(1))
    t = np.arange(lo, hi + 1)
    pmf = np.exp(-np.abs(t - s) / float(scale))
    pmf /= pmf.sum()
    observed = np.bincount(x - lo, minlength=t.size)
    assert stats.chisquare(observed, pmf * draws).pvalue > P_MIN


@pytest.mark.parametrize("scale", [0.5, 100.0])
def test_truncated_laplace_has_the_truncated_law(scale):
    s, lo, hi = 1.0, 0.0, 10.0
    x = truncated_laplace(np.full(20000, s), scale, lo, hi, np.random.default_rng(2))
    g = lambda v: stats.laplace.cdf(v, s, scale)
    cdf = lambda v: (g(v) - g(lo)) / (g(hi) - g(lo))
    assert stats.kstest(x, cdf).pvalue > P_MIN


# -- posterior draws (ε huge: the noise vanishes and the posteriors are the non-private ones) ----

HUGE = 1e9


def test_bernoulli_posterior_matches_beta():
    s, n, reps = 30, 100, 20000
    theta = bernoulli_sets(s, n, HUGE, 1, rand=4, reps=reps)[:, 0]
    a, b = s + 1 / 3, n - s + 1 / 3
    assert abs(theta.mean() - a / (a + b)) < 4 * stats.beta.std(a, b) / math.sqrt(reps)
    assert stats.kstest(theta, stats.beta(a, b).cdf).pvalue > P_MIN


@pytest.mark.parametrize("post", ["threshold", "truncation"])
def test_normal_posterior_matches_inverse_chi_square_and_normal(post):
    xbar, s2, n, reps = 1.3, 2.0, 50, 20000
    mu, sigma2 = normal_sets(xbar, s2, n, -10.0, 10.0, HUGE, 1, post=post, rand=5, reps=reps)
    assert stats.kstest((n - 1) * s2 / sigma2[:, 0], stats.chi2(n - 1).cdf).pvalue > P_MIN
    assert stats.kstest((mu[:, 0] - xbar) / np.sqrt(sigma2[:, 0] / n), stats.norm.cdf).pvalue > P_MIN
    assert abs(sigma2.mean() - (n - 1) * s2 / (n - 3)) < 4 * sigma2.std() / math.sqrt(reps)


def test_multinomial_posterior_matches_dirichlet():
    counts = np.array([[40, 10, 0]])
    theta = multinomial_sets(counts, HUGE, 20000, rand=6)[0]
    a = counts[0] + 1 / 3
    mean, sd = a / a.sum(), np.sqrt(a * (a.sum() - a) / (a.sum() ** 2 * (a.sum() + 1)))
    assert np.all(np.abs(theta.mean(axis=0) - mean) < 4 * sd / math.sqrt(20000))


def test_inverse_wishart_draws_have_the_right_law():
    df, psi, reps = 20, np.array([[2.0, 0.5], [0.5, 1.0]]), 20000
    draws = M.inverse_wishart(df, np.broadcast_to(psi, (reps, 2, 2)), np.random.default_rng(7))
    sd = draws.std(axis=0)
    assert np.all(np.abs(draws.mean(axis=0) - psi / (df - 3)) < 4 * sd / math.sqrt(reps))
    # Σ11 of Inv-Wishart(df, Ψ) is Inv-Gamma((df - p + 1)/2, Ψ11/2)
    assert stats.kstest(draws[:, 0, 0], stats.invgamma((df - 1) / 2, scale=psi[0, 0] / 2).cdf).pvalue > P_MIN


def test_vectorised_sets_have_their_shapes_and_stay_in_bounds():
    s = np.array([0, 5, 10])
    theta = bernoulli_sets(s, 10, 0.01, 10, "truncation", Randomness.from_seed(1), 3, noise="continuous")
    assert theta.shape == (3, 10) and np.all((theta > 0) & (theta < 1))
    mu, sigma2 = normal_sets(
        np.zeros(3), np.ones(3), 30, -2.0, 3.0, 0.1, 5, "non-split", "threshold", np.random.default_rng(0), 3
    )
    assert mu.shape == sigma2.shape == (3, 5) and np.all(sigma2 >= 0)
    with pytest.raises(DipsyError, match="shape"):
        bernoulli_sets(np.array([1, 2]), 10, 1.0, 2, rand=1, reps=3)


# -- end to end -------------------------------------------------------------------------------------


def test_ce_income_normal_end_to_end_on_both_engines():
    releases = [
        dipsy.synthesize(
            data, CE_DOMAIN, method="modips", epsilon=5.0, sets=3, columns=["Income"], seed=9, options={"model": "normal"}
        )
        for data in (CE_DATA, pd.read_csv(CE_DATA))
    ]
    for release in releases:
        assert len(release.tables) == 3 and release.statement.relation == SUBSTITUTE
        assert sum(s.budget.epsilon for s in release.spends) == pytest.approx(5.0)
        for t in release.tables:
            assert list(t.columns) == ["Income"] and len(t) == 994 and t["Income"].dtype == float
            assert t["Income"].between(0, 1e6).all()
    # both engines read the same statistics, so a seed gives the same sets
    pd.testing.assert_frame_equal(releases[0].tables[0], releases[1].tables[0])
    assert "Mironov" in releases[0].statement.mechanism and releases[0].parameters["n"] == 994


def mixed_domain() -> Domain:
    return Domain(
        (
            Column("sex", "categorical", categories=("f", "m")),
            Column("region", "categorical", categories=(1, 2, 3)),
            Column("y1", "numeric", lower=0.0, upper=10.0, bins=(0.0, 2.5, 5.0, 7.5, 10.0)),
            Column("y2", "numeric", lower=-5.0, upper=5.0, bins=(-5.0, 0.0, 5.0)),
        )
    )


def mixed_data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex, region = rng.integers(0, 2, n), rng.integers(0, 3, n)
    mean = np.column_stack([3 + 2 * sex + region, -1 + region])
    y = mean + rng.multivariate_normal([0, 0], [[1.0, 0.6], [0.6, 1.0]], n)
    return pd.DataFrame(
        {"sex": np.array(["f", "m"])[sex], "region": region + 1, "y1": np.clip(y[:, 0], 0, 10), "y2": np.clip(y[:, 1], -5, 5)}
    )


def test_mixed_model_end_to_end(tmp_path):
    data = mixed_data(2000, 1)
    path = tmp_path / "mixed.csv"
    data.to_csv(path, index=False)
    domain = mixed_domain()
    synth = Modips(PureDP(200.0), sets=2)
    plan = synth.plan(len(data), domain)
    assert plan.parameters["model"] == "mixed"
    query = plan.measurements[0].query  # the statistic every set measures, read exactly (private)
    stats_numpy = query.answer(NumpyEngine(data, domain))
    stats_duckdb = query.answer(DuckDBEngine(path, domain))
    assert len(stats_numpy) == 6 and all(np.array_equal(a, b) for a, b in zip(stats_numpy, stats_duckdb))  # identical bits
    # so a seed gives the same sanitized statistics on both engines
    (_, a, _), (_, b, _) = fitted(synth, NumpyEngine(data, domain), 4), fitted(synth, DuckDBEngine(path, domain), 4)
    assert all(np.array_equal(x, y) for k in range(2) for x, y in zip(a.sanitized(k), b.sanitized(k)))

    release = dipsy.synthesize(path, domain, method="modips", epsilon=200.0, sets=2, seed=3)
    for t in release.tables:
        assert list(t.columns) == ["sex", "region", "y1", "y2"] and len(t) == 2000
        assert set(t["sex"]) <= {"f", "m"} and set(t["region"]) <= {1, 2, 3}
        assert t["y1"].between(0, 10).all() and t["y2"].between(-5, 5).all()
        # large ε: the synthetic cell means and correlation follow the data's
        for (sex, region), cell in data.groupby(["sex", "region"]):
            syn = t[(t["sex"] == sex) & (t["region"] == region)]
            assert abs(syn["y1"].mean() - cell["y1"].mean()) < 0.3
        assert abs(t[["y1", "y2"]].corr().iloc[0, 1] - 0.6) < 0.1


def test_mixed_statistics_are_nearly_exact_at_huge_epsilon():
    data, domain = mixed_data(300, 2), mixed_domain()
    synth = Modips(PureDP(HUGE), sets=1, options={"model": "mixed"})
    plan, model, _ = fitted(synth, NumpyEngine(data, domain), seed=1)
    for raw, noisy in zip(plan.measurements[0].query.answer(NumpyEngine(data, domain)), model.sanitized(0)):
        assert np.allclose(raw, noisy, rtol=0, atol=1e-3)


@pytest.mark.parametrize("post", ["threshold", "truncation"])
def test_count_models_release_records(post, tmp_path):
    cat = Domain((Column("g", "categorical", categories=("a", "b")),))
    data = pd.DataFrame({"g": ["a"] * 70 + ["b"] * 30})
    r = dipsy.synthesize(data, cat, method="modips", epsilon=1.0, sets=4, seed=1, options={"post": post})
    assert r.parameters["model"] == "bernoulli" and r.parameters["prior"] == "0.333333,0.333333"
    assert all(len(t) == 100 and set(t["g"]) <= {"a", "b"} for t in r.tables)
    r = dipsy.synthesize(
        data,
        cat,
        method="modips",
        epsilon=1.0,
        seed=1,
        neighbouring="add-remove",
        options={"model": "multinomial", "post": post, "prior": "1/2"},
    )
    assert r.statement.relation == ADD_REMOVE and not any("n =" in p for p in r.statement.public)
    assert r.parameters["sanitization"]["cell counts"]["sensitivity"] == 1 and "n" not in r.parameters
    meta = json.loads((r.save(tmp_path / "out") / "release.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert meta["parameters"]["sanitization"]["cell counts"]["upper"] is None


def test_model_refuses_more_sets_than_paid_for():
    cat = Domain((Column("g", "categorical", categories=("a", "b")),))
    synth = Modips(PureDP(1.0), sets=2)
    _, model, _ = fitted(synth, NumpyEngine(pd.DataFrame({"g": list("abab")}), cat))
    rand = Randomness.from_seed(0)
    model.draw(rand), model.draw(rand)
    with pytest.raises(PrivacyError, match="charged for 2 set"):
        model.draw(rand)


MODEL_CASES = {  # model: (domain, data, relation)
    "bernoulli": (
        lambda: Domain((Column("g", "categorical", categories=("a", "b")),)),
        lambda: pd.DataFrame({"g": list("aababbbaab")}),
        "substitute",
    ),
    "multinomial": (
        lambda: Domain((Column("h", "categorical", categories=(1, 2, 3)),)),
        lambda: pd.DataFrame({"h": [1, 2, 3, 3, 2, 1, 1, 1]}),
        "add-remove",
    ),
    "normal": (
        lambda: Domain((Column("x", "numeric", lower=0, upper=10, bins=(0, 5, 10)),)),
        lambda: pd.DataFrame({"x": np.linspace(1, 9, 12)}),
        "substitute",
    ),
    "mixed": (mixed_domain, lambda: mixed_data(60, 4), "substitute"),
}


@pytest.mark.parametrize("post", ["threshold", "truncation"])
@pytest.mark.parametrize("model_name", sorted(MODEL_CASES))
def test_the_model_refuses_a_draw_past_its_charged_sets(model_name, post):
    """m sets = m measurements, each charged ε/m with fresh noise; the model draws exactly m sets."""
    domain, data, relation = (f() if callable(f) else f for f in MODEL_CASES[model_name])
    eps, m = 3.0, 3
    synth = Modips(PureDP(eps), sets=m, options={"model": model_name, "post": post}, neighbouring=relation)
    plan, model, session = fitted(synth, NumpyEngine(data, domain), seed=2)
    assert len(plan.measurements) == m and session.ran == plan.measurements
    assert [s.budget.epsilon for s in session.spends] == pytest.approx([eps / m] * m)
    assert model.sets == m and len(model.outputs) == m
    # fresh noise per set: set k is the mechanism's k-th successive draw on the exact statistics
    exact, replay = plan.measurements[0].query.answer(NumpyEngine(data, domain)), Randomness.from_seed(2)
    for k in range(m):
        again = plan.measurements[k].mechanism.randomise(exact, replay)
        assert all(np.array_equal(a, b) for a, b in zip(again, model.sanitized(k)))
    assert len({np.concatenate([np.ravel(v).astype(float) for v in model.sanitized(k)]).tobytes() for k in range(m)}) > 1
    rand = Randomness.from_seed(3)
    for _ in range(m):
        assert list(model.draw(rand).columns) == list(domain.names)
    with pytest.raises(PrivacyError, match="has drawn them all"):
        model.draw(rand)
    for k in (m, -1):  # sampling by index cannot reach an uncharged set either
        with pytest.raises(PrivacyError, match="not charged"):
            model.sample(k, rand)
    with pytest.raises(PrivacyError):  # nor can the plan's measurements run again
        session.measure(plan.measurements[0])


def test_add_remove_plan_needs_no_n_and_a_zero_noisy_total_gives_an_empty_set():
    domain = Domain((Column("h", "categorical", categories=(1, 2, 3)),))
    synth = Modips(PureDP(1.0), sets=2, options={"model": "multinomial"}, neighbouring="add-remove")
    plan = synth.plan(None, domain)  # what the release path hands it under add/remove
    assert "n" not in plan.parameters and not any(p.startswith("n =") for p in plan.public)
    (component,) = plan.measurements[0].mechanism.components
    assert component.sensitivity == 1 and component.upper == math.inf
    setup = plan.measurements[0].query.compute.setup
    model = ModipsModel(setup, ((np.zeros(3, dtype=np.int64),), (np.array([0, 4, 1]),)))
    rand = Randomness.from_seed(0)
    empty, five = model.draw(rand), model.draw(rand)  # n* = the noisy counts' total: 0, then 5
    assert list(empty.columns) == ["h"] and len(empty) == 0
    assert len(five) == 5 and set(five["h"]) <= {1, 2, 3}
    with pytest.raises(DipsyError, match="plan was made for n = 3"):  # under substitution the rows must be the plan's n
        Modips(PureDP(1.0), options={"model": "multinomial"}).plan(3, domain).measurements[0].query.answer(
            NumpyEngine(pd.DataFrame({"h": [1, 2]}), domain)
        )


def test_engine_values_drop_invalid_rows_on_both_engines(tmp_path):
    domain = mixed_domain()
    data = mixed_data(50, 3)
    data.loc[[3, 7], "y1"] = [11.0, np.nan]
    data.loc[9, "sex"] = "x"
    path = tmp_path / "d.csv"
    data.to_csv(path, index=False)
    a = NumpyEngine(data, domain, on_invalid="drop").values(domain.names)
    b = DuckDBEngine(path, domain, on_invalid="drop").values(domain.names)
    assert len(a["y1"]) == 47 and all(np.array_equal(a[k], b[k]) for k in domain.names)


def test_default_models_and_option_errors():
    cat2 = Column("g", "categorical", categories=("a", "b"))
    cat3 = Column("h", "categorical", categories=(1, 2, 3))
    num = Column("y", "numeric", lower=0, upper=1, bins=(0, 0.5, 1))
    assert choose_model(Domain((cat2,))) == "bernoulli"
    assert choose_model(Domain((cat3,))) == "multinomial"
    assert choose_model(Domain((num,))) == "normal"
    assert choose_model(Domain((cat2, num))) == "mixed"
    cases = [
        ({"model": "poisson"}, Domain((num,)), None, "unknown"),
        ({"budget": "half"}, Domain((num,)), None, "unknown"),
        ({"model": "normal", "prior": 1}, Domain((num,)), None, "no prior"),
        ({"model": "bernoulli", "prior": "0,1"}, Domain((cat2,)), None, "not valid"),
        ({"model": "normal"}, Domain((cat2,)), None, "one numeric column"),
        ({"model": "bernoulli"}, Domain((cat3,)), None, "two categories"),
        ({"model": "mixed"}, Domain((num,)), None, "categorical and numeric"),
        ({"model": "normal"}, Domain((num,)), "add-remove", "substitution"),
        ({"model": "bernoulli"}, Domain((cat2,)), "add-remove", "substitution"),
    ]
    for options, domain, neighbouring, message in cases:
        with pytest.raises(DipsyError, match=message):
            synth = Modips(PureDP(1.0), options=options, neighbouring=neighbouring)
            synth.plan(10 if synth.relation.fixes_n else None, domain)  # under add/remove the plan gets no n


def test_mixed_sets_shapes_and_high_epsilon_limit():
    """Vectorised mixed model: shapes, and at a huge ε the draws sit at the exact posterior's scale."""
    from dipsy.methods.modips import mixed_sets
    from dipsy.methods.modips.models import mixed_statistics

    rng = np.random.default_rng(5)
    cells = rng.integers(0, 3, 600)
    y = np.column_stack([rng.normal(cells, 1.0), rng.normal(-cells, 2.0)])
    y = np.clip(y, [-6, -12], [6, 12])
    st = mixed_statistics(cells, y, 3, np.zeros(2))
    pi, mu, sigma = mixed_sets([np.stack([a, a]) for a in st], 600, [-6.0, -12.0], [6.0, 12.0], 1e9, 4, rand=3)
    assert pi.shape == (2, 4, 3) and mu.shape == (2, 4, 3, 2) and sigma.shape == (2, 4, 2, 2)
    counts = np.bincount(cells, minlength=3)
    assert np.allclose(pi.mean(axis=(0, 1)), counts / 600, atol=0.03)
    assert np.allclose(mu[..., 0].mean(axis=(0, 1)), [y[cells == k, 0].mean() for k in range(3)], atol=0.15)
    resid = y - np.array([y[cells == k].mean(axis=0) for k in range(3)])[cells]
    assert np.allclose(sigma.mean(axis=(0, 1)), resid.T @ resid / (600 - 3), rtol=0.2, atol=0.1)
