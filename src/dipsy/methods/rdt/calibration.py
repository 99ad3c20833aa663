r"""Leaf-size calibration of the random decision trees (S-004 §5, "Specification of … n_B").

A leaf of ``n`` records holds a share ``p₀`` of label ``i``: its count ``c = n p₀`` is released with
discrete Laplace noise ``Z``, ``P(Z = z) = (1 − q)/(1 + q) q^{|z|}``, ``q = e^{−λ}``, ``λ = ε/Δ``
(Δ = 1 under add/remove, 2 under substitution), and the noisy proportion is
``p(z) = clip((c + z)/n, 0, 1)``. The ``n`` synthetic labels drawn from the leaf then number
``X | p ~ Binomial(n, p)``. S-004's eq. (1) takes the joint (Laplace–binomial) law

    P(X = k) = Σ_z P(X = k | p(z)) P(Z = z),                                        (1)

and accumulates its mass over ``[x − δ, x + δ]`` around ``x = round(n p₀)`` for δ = 0, 1, 2, …
until it reaches ``1 − α``; the interval on the synthetic proportion is ``[(x − δ)/n, (x + δ)/n]``.
The least ``n`` whose interval is narrow enough is the least ``n_B`` worth splitting to.

S-004's worked example: ``p₀ = 0.25``, ``λ = 0.4`` needs ``n_B ≥ 1000`` for a 90 % interval within
``[0.22, 0.27]`` (read off its Figure 1, whose x-axis is a grid of leaf sizes). Read as a width of
0.05, the grid answer is 1000 and the exact least size 840; the interval at 1000 is [0.227, 0.273],
which sticks out of [0.22, 0.27] at the top by 0.003 (the exact answer for that asymmetric target is
1304): the figure's reading is approximate.

>>> r = min_leaf_size(0.25, 0.4, width=0.05, grid=(100, 250, 500, 1000, 2000, 5000))
>>> r.n, round(r.interval.lower, 3), round(r.interval.upper, 3)
(1000, 0.227, 0.273)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from scipy import stats

from ...errors import DipsyError
from ...privacy.rng import Randomness
from ...privacy.samplers import discrete_laplace, to_fraction

#: The discrete Laplace mass left out of the sum in eq. (1): beyond it, terms cannot move the pmf.
TAIL = 1e-12
#: The largest leaf the search considers.
MAX_N = 1_000_000


@dataclass(frozen=True)
class Interval:
    """A 1 − α interval on the synthetic proportion X/n, and the mass it holds (≥ 1 − α)."""

    lower: float
    upper: float
    mass: float

    @property
    def width(self) -> float:
        return self.upper - self.lower


@dataclass(frozen=True)
class LeafSize:
    """The least leaf size found, its interval, and what was asked."""

    n: int
    interval: Interval
    p0: float
    epsilon: float
    sensitivity: float
    level: float
    asked: str


def _check(p0: float, epsilon: float, level: float, sensitivity: float) -> None:
    if not 0 <= p0 <= 1:
        raise DipsyError(f"p0 must lie in [0, 1], got {p0!r}", "give the share of the label in the leaf, e.g. 0.25")
    for name, v in (("epsilon", epsilon), ("sensitivity", sensitivity)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise DipsyError(f"{name} must be a finite number > 0, got {v!r}", "e.g. epsilon=0.4 per tree, sensitivity 1 or 2")
    if not 0 < level < 1:
        raise DipsyError(f"level must lie strictly between 0 and 1, got {level!r}", "e.g. 0.9")


def laplace_binomial_pmf(n: int, p0: float, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """``P(X = k)``, k = 0 … n, of eq. (1).

    Noise values that push the count below 0 or above n all give p = 0 or p = 1: their mass is taken
    in closed form; the other values are summed one by one, except where the discrete Laplace mass
    beyond them is below :data:`TAIL`.

    >>> pmf = laplace_binomial_pmf(10, 0.3, 1.0)
    >>> round(float(pmf.sum()), 12), int(pmf.argmax())
    (1.0, 3)
    """
    _check(p0, epsilon, 0.5, sensitivity)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DipsyError(f"n must be a whole number >= 1, got {n!r}", "e.g. 1000")
    q = math.exp(-epsilon / sensitivity)
    c = n * p0
    reach = math.inf if q == 0 else math.ceil(math.log(TAIL * (1 + q) / 2) / math.log(q)) if q > 0 else 0
    low, high = math.floor(-c) + 1, math.ceil(n - c) - 1  # z in [low, high]: 0 < c + z < n
    low, high = max(low, -reach), min(high, reach)
    k = np.arange(n + 1)
    pmf = np.zeros(n + 1)
    norm = (1 - q) / (1 + q)

    def mass_below(t: float) -> float:  # P(Z <= t) for integer t
        t = math.floor(t)
        return q ** (-t) / (1 + q) if t < 0 else 1 - q ** (t + 1) / (1 + q)

    pmf[0] += mass_below(-c)  # c + z <= 0: p = 0
    pmf[n] += 1 - mass_below(math.ceil(n - c) - 1)  # c + z >= n: p = 1
    for start in range(low, high + 1, 512):  # blocks keep the matrix small for large n
        z = np.arange(start, min(start + 512, high + 1))
        if z.size == 0:
            continue
        weight = norm * q ** np.abs(z)
        p = np.clip((c + z) / n, 0.0, 1.0)
        spread = 13 * math.sqrt(n / 4) + 2  # beyond 13 sd (sd <= sqrt(n)/2) a binomial has no mass left
        lo, hi = max(0, math.floor(n * p[0] - spread)), min(n, math.ceil(n * p[-1] + spread))
        pmf[lo:hi + 1] += weight @ stats.binom.pmf(k[None, lo:hi + 1], n, p[:, None])
    return pmf


def interval(n: int, p0: float, epsilon: float, level: float = 0.90, sensitivity: float = 1.0) -> Interval:
    """S-004's interval: mass of eq. (1) over ``[x − δ, x + δ]``, x = round(n p₀), the least δ with mass ≥ level.

    >>> i = interval(1000, 0.25, 0.4)
    >>> round(i.width, 3), i.mass >= 0.9
    (0.046, True)
    """
    _check(p0, epsilon, level, sensitivity)
    pmf = laplace_binomial_pmf(n, p0, epsilon, sensitivity)
    cs = np.concatenate([[0.0], np.cumsum(pmf)])  # cs[j] = P(X < j)
    x = int(round(n * p0))
    delta = np.arange(n + 1)
    mass = cs[np.minimum(n, x + delta) + 1] - cs[np.maximum(0, x - delta)]
    d = int(np.argmax(mass >= level - 1e-12))
    return Interval(max(0, x - d) / n, min(n, x + d) / n, float(mass[d]))


def min_leaf_size(p0: float, epsilon: float, *, width: float | None = None, lower: float | None = None,
                  upper: float | None = None, level: float = 0.90, sensitivity: float = 1.0,
                  grid: Sequence[int] | None = None) -> LeafSize:
    """The least leaf size ``n_B`` whose interval has ``width`` at most, or lies in [``lower``, ``upper``].

    With ``grid``, the least grid value that qualifies (as one reads S-004's Figure 1). Without it,
    the least whole n found by bisection — then checked downwards over the 50 sizes below it, since
    the interval's ends are whole counts and its width is not strictly monotone in n.
    """
    _check(p0, epsilon, level, sensitivity)
    if (width is None) == (lower is None and upper is None) or (width is None and (lower is None or upper is None)):
        raise DipsyError("give either a width or both lower and upper", "e.g. width=0.05, or lower=0.22 upper=0.27")
    if width is not None:
        if not (math.isfinite(width) and 0 < width <= 1):
            raise DipsyError(f"width must lie in (0, 1], got {width!r}", "e.g. 0.05")
        asked = f"a {level:.0%} interval at most {width:g} wide"
        ok = lambda i: i.width <= width + 1e-12  # noqa: E731
    else:
        if not 0 <= lower <= p0 <= upper <= 1:
            raise DipsyError(f"[{lower}, {upper}] must contain p0 = {p0} inside [0, 1]", "e.g. lower=0.22 upper=0.27 for p0 = 0.25")
        asked = f"a {level:.0%} interval within [{lower:g}, {upper:g}]"
        ok = lambda i: lower - 1e-12 <= i.lower and i.upper <= upper + 1e-12  # noqa: E731
    find = lambda n: interval(n, p0, epsilon, level, sensitivity)  # noqa: E731
    result = lambda n, i: LeafSize(n, i, p0, epsilon, sensitivity, level, asked)  # noqa: E731
    if grid is not None:
        for n in sorted(int(g) for g in grid):
            i = find(n)
            if ok(i):
                return result(n, i)
        raise DipsyError(f"no leaf size in the grid gives {asked}", "extend the grid, widen the interval or raise epsilon")
    high = 1
    while not ok(find(high)):
        high *= 2
        if high > MAX_N:
            raise DipsyError(f"no leaf of up to {MAX_N:,} records gives {asked}", "widen the interval or raise epsilon")
    low = high // 2  # fails (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(find(mid)) else (mid, high)
    for n in range(max(1, high - 50), high):
        if ok(find(n)):
            high = n
            break
    return result(high, find(high))


def simulate(n: int, p0: float, epsilon: float, draws: int, rand: Randomness, sensitivity: float = 1.0) -> np.ndarray:
    """S-004's validation: ``draws`` synthetic proportions X/n, each from a fresh noisy leaf count."""
    _check(p0, epsilon, 0.5, sensitivity)
    scale = to_fraction(sensitivity) / to_fraction(epsilon)
    z = discrete_laplace(Fraction(scale), (draws,), rand)
    p = np.clip((n * p0 + z) / n, 0.0, 1.0)
    return rand.numpy.binomial(n, p) / n


def format_calibration(r: LeafSize) -> str:
    """The answer for a terminal."""
    lam = r.epsilon / r.sensitivity
    return "\n".join([
        f"asked: {r.asked} for a label share p0 = {r.p0:g}, ε = {r.epsilon:g} per tree, sensitivity {r.sensitivity:g} (λ = {lam:g})",
        f"least leaf size n_B: {r.n:,}",
        f"interval at n_B: [{r.interval.lower:.4f}, {r.interval.upper:.4f}] (width {r.interval.width:.4f}, mass {r.interval.mass:.4f})",
        "(S-004 §5, eq. (1): the Laplace-binomial law of the synthetic share; splitting stops below n_B)",
    ])
