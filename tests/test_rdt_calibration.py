"""The leaf-size calibration of S-004 §5: the Laplace–binomial law (eq. 1), its intervals, the least
leaf size, S-004's worked example and its validation simulation."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy import stats

from dipsy.errors import DipsyError
from dipsy.methods.rdt.calibration import (
    Interval,
    calibration_table,
    format_calibration,
    interval,
    laplace_binomial_pmf,
    min_leaf_size,
    plot_calibration,
    simulate,
)
from dipsy.privacy.rng import Randomness

GRID = (100, 250, 500, 1000, 2000, 5000)
P0S = (0, 0.01, 0.05, 0.10, 0.25, 0.50)


def qualifies(i: Interval, n: int, width=None, lower=None, upper=None) -> bool:
    if width is not None:
        return (i.width - width) * n <= 1e-9
    return max(lower - i.lower, i.upper - upper) * n <= 1e-9


def least_by_scan(p0, epsilon, cap, **target) -> int | None:
    """The least qualifying size, by trying every size from 1: what the search must agree with."""
    return next((n for n in range(1, cap + 1) if qualifies(interval(n, p0, epsilon), n, **target)), None)


# -- S-004's worked example ----------------------------------------------------------------------


def test_s004_worked_example():
    """p0 = 0.25, λ = 0.4: n_B >= 1000 for a 90 % interval of [0.22, 0.27] (width 0.05) on S-004's grid."""
    assert min_leaf_size(0.25, 0.4, width=0.05, grid=GRID).n == 1000
    exact = min_leaf_size(0.25, 0.4, width=0.05)
    assert 500 < exact.n <= 1000 and exact.n == 840
    assert exact.interval.width <= 0.05 + 1e-12 and exact.interval.mass >= 0.9
    assert least_by_scan(0.25, 0.4, 1000, width=0.05) == 840
    at_1000 = interval(1000, 0.25, 0.4)
    assert (at_1000.lower, at_1000.upper) == (0.227, 0.273) and at_1000.mass >= 0.9
    # read off a figure: the interval at 1000 is 0.046 wide but sticks out above 0.27 by 0.003
    assert at_1000.lower >= 0.22 and at_1000.upper == pytest.approx(0.27 + 0.003)
    within = min_leaf_size(0.25, 0.4, lower=0.22, upper=0.27)
    assert within.n == 1289 == least_by_scan(0.25, 0.4, 1289, lower=0.22, upper=0.27)


@pytest.mark.parametrize(
    "p0, epsilon, target",
    [
        (0.0, 0.5, {"width": 0.05}),
        (0.1, 2.0, {"width": 0.2}),
        (0.5, 0.2, {"width": 0.2}),
        (0.3, 1.0, {"lower": 0.2, "upper": 0.35}),
        (0.05, 0.5, {"lower": 0.0, "upper": 0.12}),
    ],
)
def test_the_search_finds_the_least_size(p0, epsilon, target):
    """The search (doubling, bisection, a scan down) agrees with trying every size from 1."""
    found = min_leaf_size(p0, epsilon, **target)
    assert qualifies(found.interval, found.n, **target)
    assert found.n == least_by_scan(p0, epsilon, found.n, **target)


# -- eq. (1) -------------------------------------------------------------------------------------


def brute_force(n: int, p0: float, epsilon: float, sensitivity: float = 1) -> np.ndarray:
    """Eq. (1) summed term by term over |z| <= 400 (the noise mass beyond is below e^-100 here)."""
    lam = epsilon / sensitivity
    q = math.exp(-lam)
    out = np.zeros(n + 1)
    for z in range(-400, 401):
        p = min(max((n * p0 + z) / n, 0.0), 1.0)
        out += (1 - q) / (1 + q) * q ** abs(z) * np.array([math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])
    return out


def test_the_pmf_is_eq_1():
    np.testing.assert_allclose(laplace_binomial_pmf(5, 0.4, 0.5), brute_force(5, 0.4, 0.5), rtol=1e-10, atol=1e-15)
    # a count that is not whole (2.1), and Δ = 2 halving λ
    np.testing.assert_allclose(
        laplace_binomial_pmf(7, 0.3, 1.0, sensitivity=2), brute_force(7, 0.3, 1.0, 2), rtol=1e-10, atol=1e-15
    )
    np.testing.assert_allclose(laplace_binomial_pmf(300, 0.2, 0.5, sensitivity=2), laplace_binomial_pmf(300, 0.2, 0.25))


@pytest.mark.parametrize("n, p0, lam", [(400, 0.07, 0.05), (401, 0.07, 0.05), (1000, 0.999, 0.3), (3000, 0.5, 2.0)])
def test_the_pmf_against_scipy_binomials(n, p0, lam):
    """The module's own binomial rows and closed-form ends against scipy.stats.binom, summed over
    |z| <= 60/λ (noise mass beyond: e^-60; the module stops where it is below 1e-12)."""
    z = np.arange(-int(60 / lam), int(60 / lam) + 1)
    w = np.tanh(lam / 2) * np.exp(-lam * np.abs(z))
    p = np.clip((n * p0 + z) / n, 0, 1)
    direct = w @ stats.binom.pmf(np.arange(n + 1)[None, :], n, p[:, None])
    np.testing.assert_allclose(laplace_binomial_pmf(n, p0, lam), direct, rtol=1e-9, atol=1e-12)


def test_the_pmf_sums_to_one_and_noise_vanishes_with_huge_epsilon():
    for n, p0, eps in [(1, 0.5, 1.0), (10, 0.0, 0.3), (10, 1.0, 0.3), (1000, 0.25, 0.4), (3000, 0.5, 0.01)]:
        assert laplace_binomial_pmf(n, p0, eps).sum() == pytest.approx(1, abs=1e-9)
    for n, p0 in [(200, 0.3), (50, 0.0), (50, 1.0)]:
        np.testing.assert_allclose(laplace_binomial_pmf(n, p0, 1e4), stats.binom.pmf(np.arange(n + 1), n, p0), atol=1e-12)


def test_the_pmf_is_fast_for_large_leaves_and_little_epsilon():
    start = time.perf_counter()
    pmf = laplace_binomial_pmf(20_000, 0.1, 0.01)
    assert time.perf_counter() - start < 3
    assert pmf.sum() == pytest.approx(1, abs=1e-9) and np.all(pmf >= 0)


def test_the_interval_is_the_least_delta():
    n, p0, eps = 300, 0.2, 0.3
    pmf = laplace_binomial_pmf(n, p0, eps)
    i = interval(n, p0, eps)
    x, d = 60, round(i.upper * n) - 60
    assert round(i.lower * n) == x - d and i.mass == pytest.approx(pmf[x - d : x + d + 1].sum())
    assert i.mass >= 0.9 > pmf[x - d + 1 : x + d].sum()
    exact = interval(n, p0, eps, interpolate=True)
    assert exact.mass == 0.9 and i.lower <= exact.lower < i.lower + 1 / n and i.upper - 1 / n < exact.upper <= i.upper


# -- S-004's validation simulation ---------------------------------------------------------------


def coverage(x: np.ndarray, i: Interval) -> float:
    return float(((x >= i.lower - 1e-12) & (x <= i.upper + 1e-12)).mean())


@pytest.mark.parametrize("p0", P0S)
def test_s004_validation_simulation(p0):
    """λ = 0.3, n_B = 1000, 10,000 draws: the simulated shares fall in the theoretical interval as often
    as its mass says (binomial sd 0.003; 4 sd allowed), and their 5 % and 95 % quantiles sit at its ends."""
    theory = interval(1000, p0, 0.3)
    x = simulate(1000, p0, 0.3, 10_000, Randomness.from_seed(2026 + P0S.index(p0)))
    assert abs(coverage(x, theory) - theory.mass) < 0.012
    assert 0.885 < coverage(x, theory) < 0.935  # the mass is 0.90-0.92: whole counts overshoot 0.90
    low, high = np.quantile(x, [0.05, 0.95])
    assert abs(low - theory.lower) <= 0.005 and abs(high - theory.upper) <= 0.005


@pytest.mark.parametrize("n, lam, wrong", [(100, 0.05, 1e5), (100, 0.05, 2), (100, 0.05, 0.5), (100, 0.5, 0.1)])
def test_the_simulation_tells_a_wrong_law_apart(n, lam, wrong):
    """Where the noise matters, intervals from a wrong λ (or none) miss their stated mass by far."""
    x = simulate(n, 0.25, lam, 10_000, Randomness.from_seed(7))
    right, bad = interval(n, 0.25, lam), interval(n, 0.25, lam * wrong)
    assert abs(coverage(x, right) - right.mass) < 0.012
    assert abs(coverage(x, bad) - bad.mass) > 0.05


# -- input, output -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"p0": 1.5, "epsilon": 0.4, "width": 0.05}, "p0"),
        ({"p0": float("nan"), "epsilon": 0.4, "width": 0.05}, "p0"),
        ({"p0": 0.2, "epsilon": 0.0, "width": 0.05}, "epsilon"),
        ({"p0": 0.2, "epsilon": -1, "width": 0.05}, "epsilon"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "sensitivity": 0}, "sensitivity"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "level": 1.0}, "level"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "level": 0}, "level"),
        ({"p0": 0.2, "epsilon": 0.4}, "either a width"),
        ({"p0": 0.2, "epsilon": 0.4, "lower": 0.1}, "either a width"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "lower": 0.1, "upper": 0.3}, "either a width"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0}, "width"),
        ({"p0": 0.2, "epsilon": 0.4, "lower": 0.25, "upper": 0.3}, "contain p0"),
        ({"p0": 0.2, "epsilon": 0.4, "lower": 0.1, "upper": 1.2}, "contain p0"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "grid": (100, 0)}, "whole number"),
        ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "grid": ()}, "empty"),
        ({"p0": 0.5, "epsilon": 0.4, "width": 0.001, "grid": (10, 20)}, "no leaf size in the grid"),
        ({"p0": 0.5, "epsilon": 0.4, "lower": 0.5, "upper": 0.5}, "no leaf of up to 1,000,000"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(DipsyError, match=message):
        min_leaf_size(**kwargs)


def test_bad_input_elsewhere():
    with pytest.raises(DipsyError, match="leaf size"):
        laplace_binomial_pmf(0, 0.2, 1.0)
    with pytest.raises(DipsyError, match="leaf size"):
        interval(10.5, 0.2, 1.0)
    with pytest.raises(DipsyError, match="epsilon"):
        simulate(100, 0.2, float("inf"), 10, Randomness.from_seed(1))


def test_the_terminal_table_and_figure(tmp_path):
    text = format_calibration(min_leaf_size(0.25, 0.4, width=0.05))
    assert "least leaf size n_B: 840" in text and "at most 0.05 wide" in text and "mass 0.90" in text
    rows = calibration_table([0.05, 0.25], [0.1, 0.4], [100, 1000])
    assert len(rows) == 8 and rows[-1] == pytest.approx(
        {
            "p0": 0.25,
            "epsilon": 0.4,
            "lambda": 0.4,
            "n": 1000,
            "lower": 0.227,
            "upper": 0.273,
            "mass": interval(1000, 0.25, 0.4).mass,
        }
    )
    path = plot_calibration(rows, tmp_path / "calibration.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_line_gives_the_worked_example(capsys):
    from dipsy.cli import main

    assert main(["rdt-leaf-size", "--p0", "0.25", "--epsilon", "0.4", "--width", "0.05", "--grid", ",".join(map(str, GRID))]) == 0
    assert "least leaf size n_B: 1,000" in capsys.readouterr().out
    assert main(["rdt-leaf-size", "--p0", "0.25", "--epsilon", "0.4", "--width", "0.05", "--grid", "a,b"]) != 0
    assert "--grid must list whole numbers" in capsys.readouterr().err
