r"""Leaf-size calibration of the random decision trees (S-004 §5, "Specification of … n_B").

The model
---------
A leaf of ``n`` records holds a share ``p₀`` of label ``i``. Its count ``c = n p₀`` is released with
discrete Laplace noise ``Z``, ``P(Z = z) = (1 − q)/(1 + q) q^{|z|}`` with ``q = e^{−λ}`` and
``λ = ε/Δ`` (Δ = 1 under add/remove of a record, 2 under substitution); the noisy share is
``p(z) = clip((c + z)/n, 0, 1)``; the ``n`` synthetic labels later drawn from the leaf number
``X | p ~ Binomial(n, p)``. S-004's eq. (1) takes the joint ("Laplace–binomial") law

    P(X = k) = Σ_z Binomial(k; n, p(z)) P(Z = z),                                      (1)

and accumulates its mass over ``[x − δ, x + δ]`` (clipped to ``[0, n]``) around ``x = ⌊n p₀ + ½⌋``
for δ = 0, 1, 2, … until it reaches ``1 − α``; the interval on the synthetic share is
``[(x − δ)/n, (x + δ)/n]``. The least ``n`` whose interval is narrow enough is the least branch
size ``n_B`` worth splitting down to.

S-004 puts the noise on the share (``p ~ Laplace(λ, p₀)``); here it is on the count, with scale
``Δ/ε``, which is what the tree's leaves release (:mod:`dipsy.privacy.samplers`) and what makes ε
the leaf's privacy loss.

The worked example
------------------
S-004: ``p₀ = 0.25``, ``λ = 0.4`` needs ``n_B ≥ 1000`` for a 90 % interval within ``[0.22, 0.27]``,
read off its Figure 1, whose x-axis is a grid of leaf sizes. Read as a width of 0.05, the grid
answer is 1000 and the exact least size 840 (841–845 qualify too, 846–879 do not: see
:func:`min_leaf_size`); the interval at 1000, ``[0.227, 0.273]``, sticks out
of ``[0.22, 0.27]`` at the top by 0.003 (the least size within it is 1289).

>>> r = min_leaf_size(0.25, 0.4, width=0.05, grid=(100, 250, 500, 1000, 2000, 5000))
>>> r.n, r.interval.lower, r.interval.upper
(1000, 0.227, 0.273)
>>> min_leaf_size(0.25, 0.4, width=0.05).n, min_leaf_size(0.25, 0.4, lower=0.22, upper=0.27).n
(840, 1289)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from ...errors import DipsyError
from ...privacy.rng import Randomness
from ...privacy.samplers import discrete_laplace, to_fraction

#: Discrete Laplace mass left out of the sum in eq. (1) (noise values ``|z|`` beyond a bound).
TAIL = 1e-12
#: The largest leaf the search of :func:`min_leaf_size` considers.
MAX_N = 1_000_000
#: The ε of one tree the search of :func:`min_leaf_size` takes. S-004 computes its intervals for
#: λ = ε/Δ from 0.1 to 1 (its studies use ε = 0.1 and 0.4). Each interval sums eq. (1) over the
#: noise values within about 28/λ of 0, so the search's cost grows as 1/ε: at 0.01 a search takes
#: seconds to minutes, at 10⁻³ hours, and at 1e-300 it never ends. Above 10⁴ the noise is nil
#: (its tail mass below :data:`TAIL`), so a larger ε changes nothing.
EPSILON_RANGE = (0.01, 1e4)
#: :func:`min_leaf_size` stops scanning down once an interval misses its target by this many counts.
SLACK = 6
#: … or after this many sizes.
MAX_SCAN = 2000
_EPS = 1e-9  # counts: comparisons of k/n with a decimal target must not fail on rounding


@dataclass(frozen=True)
class Interval:
    """A ``level`` interval ``[lower, upper]`` on the synthetic share X/n and the mass of eq. (1) in it."""

    lower: float
    upper: float
    mass: float
    width: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", self.upper - self.lower)


@dataclass(frozen=True)
class LeafSize:
    """The least leaf size found (``n``), its interval, and what was asked."""

    n: int
    interval: Interval
    p0: float
    epsilon: float
    sensitivity: float = 1
    level: float = 0.90
    width: float | None = None
    lower: float | None = None
    upper: float | None = None
    grid: tuple[int, ...] | None = None

    @property
    def asked(self) -> str:
        target = f"at most {self.width:g} wide" if self.width is not None else f"within [{self.lower:g}, {self.upper:g}]"
        return f"a {self.level:.0%} interval {target}" + ("" if self.grid is None else " (leaf sizes from the grid)")


# -- checks --------------------------------------------------------------------------------------


def _number(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
        raise DipsyError(f"{name} must be a finite number, got {v!r}", f"pass {name} as a number, e.g. 0.25")
    return float(v)


def _check(p0: Any, epsilon: Any, level: Any = 0.5, sensitivity: Any = 1) -> tuple[float, float, float, float]:
    p0, epsilon, level, sensitivity = (
        _number(v, k) for v, k in ((p0, "p0"), (epsilon, "epsilon"), (level, "level"), (sensitivity, "sensitivity"))
    )
    if not 0 <= p0 <= 1:
        raise DipsyError(f"p0 must lie in [0, 1], got {p0!r}", "give the label's share in the leaf, e.g. 0.25")
    if epsilon <= 0 or sensitivity <= 0:
        raise DipsyError(
            f"epsilon and sensitivity must be > 0, got {epsilon!r} and {sensitivity!r}",
            "e.g. epsilon 0.4 per tree; sensitivity 1 (add/remove) or 2 (substitution)",
        )
    if not 0 < level < 1:
        raise DipsyError(f"level must lie strictly between 0 and 1, got {level!r}", "e.g. 0.9 for a 90 % interval")
    return p0, epsilon, level, sensitivity


def _leaf(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DipsyError(f"the leaf size must be a whole number >= 1, got {n!r}", "e.g. 1000")
    return int(n)


def _stirling_error(m: np.ndarray) -> np.ndarray:
    """``log m! − log(√(2πm) (m/e)^m)`` for whole ``m >= 0`` (0 at m = 0), without forming ``log m!``."""
    m = np.asarray(m, dtype=float)
    out = np.zeros_like(m)
    small = (m > 0) & (m < 16)
    s = m[small]
    out[small] = special.gammaln(s + 1) - (s + 0.5) * np.log(s) + s - 0.5 * math.log(2 * math.pi)
    r = 1 / m[m >= 16]  # Stirling's series: its first omitted term is below 1e-16 from m = 16 on
    r2 = r * r
    out[m >= 16] = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))
    return out


def _binomial_k_part(n: int, k: np.ndarray) -> np.ndarray:
    """The part of ``log Binomial(k; n, p)`` that does not depend on p, in Loader's (2000) form.

    ``log C(n, k) p^k (1 − p)^(n − k)`` written with Stirling's formula is this plus
    ``−k log(k/np) − (n − k) log((n − k)/(n(1 − p)))``. The plain form ``log C(n, k) + k log p + …``
    subtracts terms of size ``n log n`` and loses ``1e-9`` of the mass at n = 10⁶; this one keeps the
    binomial within ``1e-11`` of ``scipy.stats.binom.pmf`` (relatively, measured up to n = 10⁶) at a
    fifth of its cost.
    """
    kf = k.astype(float)
    out = _stirling_error(np.array([n]))[0] - _stirling_error(kf) - _stirling_error(n - kf)
    inner = (k > 0) & (k < n)  # C(n, 0) = C(n, n) = 1: no √(2π k (n − k)/n) factor there
    out[inner] -= 0.5 * np.log(2 * math.pi * kf[inner] * (n - kf[inner]) / n)
    return out


# -- the law and its interval --------------------------------------------------------------------


def laplace_binomial_pmf(n: int, p0: float, epsilon: float, sensitivity: float = 1) -> np.ndarray:
    r"""The Laplace–binomial law of the synthetic count, S-004 §5 eq. (1): ``P(X = k)``, k = 0 … n.

    Parameters
    ----------
    n : int
        Records in the leaf (and synthetic labels drawn from it).
    p0 : float
        The label's true share in the leaf; its count ``c = n p0`` (need not be whole).
    epsilon, sensitivity : float
        The noise is discrete Laplace with ``λ = epsilon/sensitivity``.

    Returns
    -------
    numpy.ndarray
        Length ``n + 1``; sums to 1 up to :data:`TAIL`.

    Notes
    -----
    Noise values ``z <= −c`` all give ``p = 0`` and ``z >= n − c`` all give ``p = 1``: their mass is
    added to ``k = 0`` and ``k = n`` in closed form (``P(Z <= t) = q^{−t}/(1 + q)`` for ``t < 0``).
    The other values are summed one by one, up to ``|z| <= R`` with ``P(|Z| > R) < 1e-12``
    (:data:`TAIL`; the mass beyond is dropped, not renormalised). Each binomial row is evaluated only
    within ``10 sd + 40`` of its mean (by Bernstein's inequality the mass beyond is below ``1e-21``), in
    the cancellation-free form of :func:`_binomial_k_part`.

    >>> pmf = laplace_binomial_pmf(10, 0.3, 1.0)
    >>> round(float(pmf.sum()), 12), int(pmf.argmax())
    (1.0, 3)
    >>> from scipy import stats
    >>> bool(np.allclose(laplace_binomial_pmf(50, 0.3, 1e4), stats.binom.pmf(range(51), 50, 0.3)))
    True
    """
    n = _leaf(n)
    p0, epsilon, _, sensitivity = _check(p0, epsilon, 0.5, sensitivity)
    lam = epsilon / sensitivity
    c = n * p0
    if abs(c - round(c)) < 1e-9:  # 400 × 0.07 is 28.000000000000004: a whole count was meant
        c = float(round(c))
    q = math.exp(-lam)

    def cdf(t: int) -> float:  # P(Z <= t)
        return math.exp(lam * t) / (1 + q) if t < 0 else 1 - math.exp(-lam * (t + 1)) / (1 + q)

    pmf = np.zeros(n + 1)
    pmf[0] += cdf(math.floor(-c))  # c + z <= 0: p = 0
    pmf[n] += cdf(-math.ceil(n - c))  # c + z >= n: p = 1 (Z is symmetric)
    reach = max(0, math.floor(-math.log(TAIL * (1 + q) / 2) / lam))  # P(|Z| > reach) < TAIL
    z = np.arange(max(math.floor(-c) + 1, -reach), min(math.ceil(n - c) - 1, reach) + 1)
    if z.size == 0:
        return pmf
    # eq. (1): weights P(Z = z) = tanh(λ/2) e^{−λ|z|} times Binomial(k; n, p(z)), summed over z.
    weight = math.tanh(lam / 2) * np.exp(-lam * np.abs(z))
    count = c + z  # the noisy count n p(z), strictly inside (0, n) here
    k = np.arange(n + 1)
    k_part = _binomial_k_part(n, k)
    half = int(10 * math.sqrt(float(np.max(count * (n - count))) / n) + 40)
    chunk = min(256, max(16, 2 * half))  # rows per block; its window is chunk + 2 half wide (n = 10⁶: 21 MB)
    for start in range(0, z.size, chunk):
        w, m = weight[start : start + chunk], count[start : start + chunk]
        lo, hi = max(0, math.floor(m[0]) - half), min(n, math.ceil(m[-1]) + half)
        kk = k[lo : hi + 1].astype(float)
        # log Binomial(k; n, r/n) at the block's middle count r: k_part(k) − k log(k/r) − (n − k)
        # log((n − k)/(n − r)), the logs taken as log1p of (k − r)/r and (r − k)/(n − r), so every term
        # is of the size of k − r, not of n log n …
        r = m[m.size // 2]
        base = k_part[lo : hi + 1] - special.xlog1py(kk, (kk - r) / r) - special.xlog1py(n - kk, (r - kk) / (n - r))
        # … then moved to each row's count m: + k log(m/r) + (n − k) log((n − m)/(n − r)), terms of the
        # size of the block's spread of counts; one exp per element
        # (log1p only near 1, where it is the more accurate; near 0 it would lose the ratio)
        up = np.where(m < r / 2, np.log(m / r), np.log1p(np.maximum((m - r) / r, -0.5)))[:, None]
        down = np.where(n - m < (n - r) / 2, np.log((n - m) / (n - r)), np.log1p(np.maximum((r - m) / (n - r), -0.5)))[:, None]
        pmf[lo : hi + 1] += w @ np.exp(base + kk * up + (n - kk) * down)
    return pmf


def interval(
    n: int, p0: float, epsilon: float, level: float = 0.90, sensitivity: float = 1, *, interpolate: bool = False
) -> Interval:
    r"""S-004 §5's interval on the synthetic share: mass of eq. (1) over ``[x − δ, x + δ]``.

    ``x = ⌊n p0 + ½⌋``; δ is the least whole number for which the mass over ``[x − δ, x + δ] ∩ [0, n]``
    reaches ``level`` (so ``mass >= level``, usually above it).

    Parameters
    ----------
    n, p0, epsilon, sensitivity
        As for :func:`laplace_binomial_pmf`.
    level : float
        ``1 − α``, in (0, 1).
    interpolate : bool
        S-004's exact variant: move both ends linearly between δ − 1 and δ so that the mass, read
        as linear between the two, is exactly ``level`` (``mass`` is then ``level``). A point
        interval (δ = 0) is left as is.

    Returns
    -------
    Interval

    >>> interval(1000, 0.25, 0.4)  # doctest: +ELLIPSIS
    Interval(lower=0.227, upper=0.273, mass=0.903..., width=0.046...)
    >>> i = interval(1000, 0.25, 0.4, interpolate=True)
    >>> round(i.lower, 4), round(i.upper, 4), i.mass
    (0.2272, 0.2728, 0.9)
    """
    p0, epsilon, level, sensitivity = _check(p0, epsilon, level, sensitivity)
    pmf = laplace_binomial_pmf(n, p0, epsilon, sensitivity)
    below = np.concatenate([[0.0], np.cumsum(pmf)])  # below[j] = P(X < j)
    x = math.floor(n * p0 + 0.5)
    delta = np.arange(n + 1)
    mass = below[np.minimum(n, x + delta) + 1] - below[np.maximum(0, x - delta)]
    reached = mass >= level
    d = int(np.argmax(reached)) if reached.any() else n  # level within TAIL of 1: the whole range
    if interpolate and d > 0 and reached.any():
        d_exact = float(d - 1 + (level - mass[d - 1]) / (mass[d] - mass[d - 1]))
        return Interval(max(0.0, x - d_exact) / n, min(float(n), x + d_exact) / n, level)
    return Interval(max(0, x - d) / n, min(n, x + d) / n, float(mass[d]))


# -- the least leaf size -------------------------------------------------------------------------


def min_leaf_size(
    p0: float,
    epsilon: float,
    *,
    width: float | None = None,
    lower: float | None = None,
    upper: float | None = None,
    level: float = 0.90,
    sensitivity: float = 1,
    grid: Sequence[int] | None = None,
    interpolate: bool = False,
) -> LeafSize:
    r"""The least leaf size ``n_B`` whose :func:`interval` is at most ``width`` wide, or lies in [``lower``, ``upper``].

    Parameters
    ----------
    p0, epsilon, level, sensitivity, interpolate
        As for :func:`interval`.
    width : float, optional
        The widest interval wanted, in (0, 1].
    lower, upper : float, optional
        Or the range the interval must stay within; it must contain ``p0``. Give ``width`` or both.
    grid : sequence of int, optional
        Candidate sizes: the least of them that qualifies (as one reads S-004's Figure 1).

    Returns
    -------
    LeafSize

    Raises
    ------
    DipsyError
        For bad input (an ε outside :data:`EPSILON_RANGE` too), or when no size qualifies (in the
        grid, or up to :data:`MAX_N`).

    Notes
    -----
    Without a grid, the answer is the least ``n`` at which the condition holds, found by search. The
    interval's ends are whole counts, so its width is a sawtooth in ``n`` (δ steps up by one, the
    centre ``x`` moves by one), not monotone: qualifying and failing sizes alternate near the
    threshold. The search doubles ``n`` until one qualifies, bisects down to a size that qualifies
    with its predecessor failing, then scans down from there, one size at a time, until an interval
    misses the target by more than :data:`SLACK` counts (at most :data:`MAX_SCAN` sizes), keeping the
    least size that qualifies. The misses trend upwards as ``n`` falls and the sawtooth moves them
    by a few counts only, so no smaller size is expected to qualify; this is checked against an
    exhaustive scan in the tests, not proved. Sizes just above the answer may fail.

    >>> r = min_leaf_size(0.1, 0.5, width=0.1)
    >>> r.n, r.interval.width <= 0.1, interval(r.n - 1, 0.1, 0.5).width > 0.1
    (140, True, True)
    """
    p0, epsilon, level, sensitivity = _check(p0, epsilon, level, sensitivity)
    if not EPSILON_RANGE[0] <= epsilon <= EPSILON_RANGE[1]:  # before any interval is computed
        raise DipsyError(
            f"epsilon must lie between {EPSILON_RANGE[0]:g} and {EPSILON_RANGE[1]:g} for the leaf-size search, got {epsilon:g}",
            "give one tree's ε within that range (the search's work grows as 1/ε; S-004 uses 0.1 to 1)",
        )
    if (width is not None and (lower is not None or upper is not None)) or (width is None and (lower is None or upper is None)):
        raise DipsyError("give either a width or both lower and upper", "e.g. width=0.05, or lower=0.22 upper=0.27")
    if width is not None:
        width = _number(width, "width")
        if not 0 < width <= 1:
            raise DipsyError(f"width must lie in (0, 1], got {width!r}", "e.g. 0.05")
    else:
        lower, upper = _number(lower, "lower"), _number(upper, "upper")
        if not 0 <= lower <= p0 <= upper <= 1:
            raise DipsyError(
                f"[{lower:g}, {upper:g}] must lie in [0, 1] and contain p0 = {p0:g}", "e.g. lower=0.22 upper=0.27 for p0 = 0.25"
            )
    if grid is not None:
        try:
            grid = tuple(sorted({_leaf(g) for g in grid}))
        except TypeError:
            raise DipsyError(f"grid must be a sequence of leaf sizes, got {grid!r}", "e.g. grid=(250, 500, 1000)") from None
        if not grid:
            raise DipsyError("the grid of leaf sizes is empty", "e.g. grid=(250, 500, 1000)")
        if grid[-1] > MAX_N:  # each size's interval is a law over n + 1 counts: 10¹⁰ would take 80 GB
            raise DipsyError(
                f"the grid asks for a leaf of {grid[-1]:,} records, more than the {MAX_N:,} the search considers",
                f"give leaf sizes of at most {MAX_N:,}",
            )
    cache: dict[int, Interval] = {}

    def at(n: int) -> Interval:
        if n not in cache:
            cache[n] = interval(n, p0, epsilon, level, sensitivity, interpolate=interpolate)
        return cache[n]

    def miss(n: int) -> float:  # counts by which the interval at n misses the target (<= 0: it qualifies)
        i = at(n)
        if width is not None:
            return (i.width - width) * n
        assert lower is not None and upper is not None, "checked above: without a width, both bounds are given"
        return max(lower - i.lower, i.upper - upper) * n

    def done(n: int) -> LeafSize:
        return LeafSize(n, at(n), p0, epsilon, sensitivity, level, width, lower, upper, grid)

    if grid is not None:
        for n in grid:
            if miss(n) <= _EPS:
                return done(n)
        raise DipsyError(
            f"no leaf size in the grid gives {done(grid[-1]).asked}", "extend the grid, widen the interval or raise epsilon"
        )
    low, high = 0, 1  # low fails (or is 0), high is being tried
    while miss(high) > _EPS:
        if high == MAX_N:
            raise DipsyError(
                f"no leaf of up to {MAX_N:,} records gives {done(high).asked}",
                "widen the interval, lower the level or raise epsilon",
            )
        low, high = high, min(2 * high, MAX_N)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if miss(mid) <= _EPS else (mid, high)
    best = high
    for n in range(high - 1, max(0, high - 1 - MAX_SCAN), -1):
        m = miss(n)
        if m <= _EPS:
            best = n
        elif m > SLACK:
            break
    return done(best)


# -- the validation simulation, the terminal, the figure -----------------------------------------


def simulate(n: int, p0: float, epsilon: float, draws: int, rand: Randomness, sensitivity: float = 1) -> np.ndarray:
    """S-004 §5's validation: ``draws`` synthetic shares X/n, each from a freshly noised leaf count.

    ``Z`` is drawn exactly (:func:`dipsy.privacy.samplers.discrete_laplace`, scale ``Δ/ε = 1/λ``),
    then ``X ~ Binomial(n, clip((n p0 + Z)/n, 0, 1))``.

    >>> x = simulate(1000, 0.25, 0.3, 5, Randomness.from_seed(1))
    >>> x.shape, bool(np.all((0 <= x) & (x <= 1)))
    ((5,), True)
    """
    n = _leaf(n)
    p0, epsilon, _, sensitivity = _check(p0, epsilon, 0.5, sensitivity)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise DipsyError(f"draws must be a whole number >= 1, got {draws!r}", "e.g. 10000")
    scale = to_fraction(sensitivity, "sensitivity") / to_fraction(epsilon, "epsilon")
    z = discrete_laplace(scale, (int(draws),), rand)
    share = np.clip((n * p0 + z) / n, 0.0, 1.0)
    return rand.numpy.binomial(n, share) / n


def format_calibration(r: LeafSize) -> str:
    """The answer, in a few plain lines for a terminal.

    >>> print(format_calibration(min_leaf_size(0.25, 0.4, width=0.05, grid=(500, 1000))))
    asked: a 90% interval at most 0.05 wide (leaf sizes from the grid) for a label share p0 = 0.25, ε = 0.4, sensitivity 1 (λ = 0.4)
    least leaf size n_B: 1,000
    interval at n_B: [0.2270, 0.2730] (width 0.0460, mass 0.9037)
    (S-004 §5 eq. (1): the Laplace–binomial law of the synthetic share; splitting stops below n_B)
    """
    lam = r.epsilon / r.sensitivity
    i = r.interval
    return "\n".join(
        [
            f"asked: {r.asked} for a label share p0 = {r.p0:g}, ε = {r.epsilon:g}, sensitivity {r.sensitivity:g} (λ = {lam:g})",
            f"least leaf size n_B: {r.n:,}",
            f"interval at n_B: [{i.lower:.4f}, {i.upper:.4f}] (width {i.width:.4f}, mass {i.mass:.4f})",
            "(S-004 §5 eq. (1): the Laplace–binomial law of the synthetic share; splitting stops below n_B)",
        ]
    )


def calibration_table(
    p0s: Sequence[float], epsilons: Sequence[float], ns: Sequence[int], level: float = 0.90, sensitivity: float = 1
) -> list[dict[str, float]]:
    """One row per ``p0 × ε × n``: the interval of S-004's Figure 1.

    >>> calibration_table([0.25], [0.4], [1000])  # doctest: +ELLIPSIS
    [{'p0': 0.25, 'epsilon': 0.4, 'lambda': 0.4, 'n': 1000, 'lower': 0.227, 'upper': 0.273, 'mass': 0.903...}]
    """
    rows = []
    for p0 in p0s:
        for eps in epsilons:
            for n in ns:
                i = interval(n, p0, eps, level, sensitivity)
                rows.append(
                    {
                        "p0": p0,
                        "epsilon": eps,
                        "lambda": eps / sensitivity,
                        "n": n,
                        "lower": i.lower,
                        "upper": i.upper,
                        "mass": i.mass,
                    }
                )
    return rows


def plot_calibration(rows: Sequence[dict[str, float]], path: str | Path) -> Path:
    """Write S-004's Figure 1 from :func:`calibration_table` rows as a PNG: a panel per ``p0``,
    the interval per λ (colour) as an error bar over the leaf size ``n`` (log axis).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = plot_calibration(calibration_table([0.05, 0.25], [0.1, 0.4], [100, 1000]), Path(d) / "f.png")
    ...     out.read_bytes()[:4] == b"\\x89PNG"
    True
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure  # a bare Agg figure: no pyplot state in the caller's process

    if not rows:
        raise DipsyError("there are no rows to plot", "make them with calibration_table(p0s, epsilons, ns)")
    p0s = sorted({r["p0"] for r in rows})
    lams = sorted({r["lambda"] for r in rows})
    colour = colormaps["viridis"]
    cols = min(3, len(p0s))
    fig = Figure(figsize=(3.2 * cols, 2.8 * math.ceil(len(p0s) / cols)), dpi=96, layout="constrained")
    axes = fig.subplots(math.ceil(len(p0s) / cols), cols, squeeze=False).ravel()
    for ax in axes[len(p0s) :]:
        ax.set_axis_off()
    for ax, p0 in zip(axes, p0s):
        for j, lam in enumerate(lams):
            sel = [r for r in rows if r["p0"] == p0 and r["lambda"] == lam]
            # spread the λ's bars a little sideways around each n so they do not overlap
            x = np.array([r["n"] for r in sel]) * 1.06 ** (j - (len(lams) - 1) / 2)
            lo, hi = np.array([r["lower"] for r in sel]), np.array([r["upper"] for r in sel])
            ax.vlines(x, lo, hi, color=colour(j / max(1, len(lams) - 1)), lw=1.5, label=f"λ = {lam:g}")
        ax.axhline(p0, color="#222222", lw=0.6, ls=":")
        ax.set(xscale="log", title=f"p0 = {p0:g}", xlabel="leaf size n", ylabel="interval on X/n")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center", fontsize=7, frameon=False)
    path = Path(path)
    fig.savefig(path, format="png")
    return path
