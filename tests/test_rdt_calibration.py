"""The leaf-size calibration of S-004 §5: the Laplace–binomial law (eq. 1), its intervals, the worked
example and the validation simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dipsy.errors import DipsyError
from dipsy.methods.rdt.calibration import interval, laplace_binomial_pmf, min_leaf_size, simulate
from dipsy.privacy.rng import Randomness

GRID = (100, 250, 500, 1000, 2000, 5000)


def test_s004_worked_example():
    """p0 = 0.25, λ = 0.4: n_B >= 1000 for a 90 % interval of [0.22, 0.27] (width 0.05) on S-004's grid."""
    assert min_leaf_size(0.25, 0.4, width=0.05, grid=GRID).n == 1000
    exact = min_leaf_size(0.25, 0.4, width=0.05)
    assert 500 < exact.n <= 1000 and exact.interval.width <= 0.05 + 1e-12
    assert interval(exact.n - 1, 0.25, 0.4).width > 0.05 or interval(exact.n - 2, 0.25, 0.4).width > 0.05
    at_1000 = interval(1000, 0.25, 0.4)
    assert at_1000.mass >= 0.9 and 0.22 <= at_1000.lower and at_1000.upper == pytest.approx(0.273)


def brute_force(n: int, p0: float, epsilon: float) -> np.ndarray:
    """Eq. (1) summed directly over |z| <= 200 (the mass beyond is below 1e-80 at ε = 0.5... and 1)."""
    q = math.exp(-epsilon)
    out = np.zeros(n + 1)
    for z in range(-200, 201):
        p = min(max((n * p0 + z) / n, 0.0), 1.0)
        out += (1 - q) / (1 + q) * q ** abs(z) * np.array([math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])
    return out


def test_the_pmf_is_eq_1():
    pmf = laplace_binomial_pmf(5, 0.4, 0.5)
    np.testing.assert_allclose(pmf, brute_force(5, 0.4, 0.5), atol=1e-12)
    assert pmf.sum() == pytest.approx(1, abs=1e-9)
    np.testing.assert_allclose(laplace_binomial_pmf(200, 0.3, 1e4), stats.binom.pmf(np.arange(201), 200, 0.3), atol=1e-12)
    assert laplace_binomial_pmf(20_000, 0.1, 0.01).sum() == pytest.approx(1, abs=1e-9)  # large n, small λ
    assert laplace_binomial_pmf(300, 0.2, 0.5, sensitivity=2) == pytest.approx(laplace_binomial_pmf(300, 0.2, 0.25))


@pytest.mark.parametrize("p0", [0, 0.01, 0.05, 0.10, 0.25, 0.50])
def test_s004_validation_simulation(p0):
    """λ = 0.3, n_B = 1000, 10,000 draws: the simulated shares fall in the theoretical interval as often as
    its mass says (binomial sd 0.003), and their 5 % and 95 % quantiles sit at its ends."""
    theory = interval(1000, p0, 0.3)
    x = simulate(1000, p0, 0.3, 10_000, Randomness.from_seed(11))
    inside = ((x >= theory.lower - 1e-12) & (x <= theory.upper + 1e-12)).mean()
    assert abs(inside - theory.mass) < 0.012
    low, high = np.quantile(x, [0.05, 0.95])
    assert theory.lower - 0.005 <= low and high <= theory.upper + 0.005


def test_the_simulation_tells_a_wrong_law_apart():
    """At n = 100 and λ = 0.05 the noise matters: intervals that ignore it cover far too little."""
    x = simulate(100, 0.25, 0.05, 10_000, Randomness.from_seed(12))
    right, noiseless = interval(100, 0.25, 0.05), interval(100, 0.25, 1e4)
    cover = lambda i: ((x >= i.lower - 1e-12) & (x <= i.upper + 1e-12)).mean()  # noqa: E731
    assert abs(cover(right) - right.mass) < 0.012
    assert cover(noiseless) < noiseless.mass - 0.1


@pytest.mark.parametrize("kwargs, message", [
    ({"p0": 1.5, "epsilon": 0.4, "width": 0.05}, "p0"),
    ({"p0": 0.2, "epsilon": 0.0, "width": 0.05}, "epsilon"),
    ({"p0": 0.2, "epsilon": 0.4}, "either a width"),
    ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "lower": 0.1, "upper": 0.3}, "either a width"),
    ({"p0": 0.2, "epsilon": 0.4, "lower": 0.25, "upper": 0.3}, "must contain p0"),
    ({"p0": 0.2, "epsilon": 0.4, "width": 0.05, "level": 1.0}, "level"),
    ({"p0": 0.5, "epsilon": 0.4, "width": 0.001, "grid": (10, 20)}, "no leaf size in the grid"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(DipsyError, match=message):
        min_leaf_size(**kwargs)


def test_the_command_line_gives_the_worked_example(capsys):
    from dipsy.cli import main
    assert main(["rdt-leaf-size", "--p0", "0.25", "--epsilon", "0.4", "--width", "0.05", "--grid", ",".join(map(str, GRID))]) == 0
    assert "least leaf size n_B: 1,000" in capsys.readouterr().out
    assert main(["rdt-leaf-size", "--p0", "0.25", "--epsilon", "0.4", "--width", "0.05", "--grid", "a,b"]) != 0
    assert "--grid must list whole numbers" in capsys.readouterr().err
