r"""The privacy loss of a mechanism between two given inputs, computed from its output laws.

For a mechanism ``M`` and two inputs ``a``, ``b`` (the exact answers of one query on two
neighbouring data sets), let ``P`` be the law of ``M(a)`` and ``Q`` that of ``M(b)``. A privacy
claim for the pair is a bound on one of

- the **pure loss** ``ε(P, Q) = max_y |log P(y)/Q(y)|``: ε-DP holds for the pair iff ``ε(P, Q) <= ε``
  (Dwork, McSherry, Nissim & Smith 2006);
- the **Rényi divergences** ``D_α(P‖Q) = (α − 1)⁻¹ log Σ_y P(y)^α Q(y)^{1−α}`` (Rényi 1961; Mironov
  2017): ρ-zCDP holds for the pair iff ``D_α <= ρα`` both ways for every α > 1 (Bun & Steinke
  2016, Def. 1.1), i.e. iff ``sup_α max(D_α(P‖Q), D_α(Q‖P))/α <= ρ``;
- the **hockey-stick divergence** ``δ_{P‖Q}(ε) = Σ_y (P(y) − e^ε Q(y))₊ = E_P[(1 − e^{ε − L})₊]``,
  ``L = log P(Y)/Q(Y)`` the privacy loss of ``Y ~ P`` (its law is the *privacy-loss distribution*,
  PLD): (ε, δ)-DP holds for the pair iff ``δ_{P‖Q}(ε) <= δ`` both ways (Balle & Wang 2018, Thm 5).

**Representation.** A :class:`PrivacyLoss` is a product of independent :class:`Factor`\ s, each a
pair of log-probability vectors over one finite set of outputs (or of groups of outputs). Merging
outputs whose likelihood ratio ``P(y)/Q(y)`` is the same changes none of the three quantities
(each is a sum over outputs of a function of the ratio, weighted by ``Q``). Merging outputs with
*different* ratios, or leaving outputs out, can only lower each of them: merging is
post-processing, and the three are monotone under it (the data-processing inequality: van Erven
& Harremoës 2014 for Rényi divergences; Dwork & Roth 2014, Prop. 2.1 for the others), and
leaving outputs out drops non-negative terms from the sums and the maximum. So a factor built
from a truncated or binned law gives a **lower bound** — what refuting a claim needs — and the
exact value when nothing was merged across ratios or left out.

**Composition.** For independent factors the three compose exactly: the pure loss adds (the
maximum of a sum over a product space is the sum of the maxima), ``D_α`` adds in each direction
(the integrand factorises: additivity, van Erven & Harremoës 2014), and the PLD of the product is the
convolution of the factors' PLDs (the loss of a product output is the sum of the factors' losses,
independent under ``P``; Sommer, Meiser & Mohammadi 2019, Thm 1).

**Numerics.** ``ε`` is exact. ``ρ`` is the largest ``max(D_α(P‖Q), D_α(Q‖P))/α`` over the grid
:data:`ALPHAS` — a lower bound of the supremum, and exact for products of discrete Gaussians with
integer shifts, which attain it at every integer α (:func:`discrete_gaussian_factor`). ``δ(ε)``
comes from the PLD with every loss value rounded *down* to a multiple of :data:`STEP` and masses
below :data:`TINY` dropped: both lower ``E_P[(1 − e^{ε−L})₊]``, whose integrand is non-negative and
increasing in ``L`` (the "optimistic" discretisation of Doroshenko, Ghazi, Kamath, Kumar &
Manurangsi 2022), so it is a lower bound too. All three are computed in floating point from
log-probabilities: their rounding (relative 10⁻¹² here) is far below the relative
:data:`~dipsy.privacy.budget.TOLERANCE` (10⁻⁹) within which the audit takes a loss equal to its cost.

>>> loss = discrete_laplace_factor(1, 0.5)   # discrete Laplace of scale 1/2, answers one apart
>>> round(PrivacyLoss((loss,)).epsilon, 12)  # ‖a − b‖₁ / scale
2.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

#: The Rényi orders over which ρ = sup_α D_α/α is taken: near 1 (where small losses peak), the
#: integers 2–16 (where discrete Gaussians attain their sup), and out to 10⁴.
ALPHAS = np.unique(np.concatenate([1 + np.geomspace(1e-3, 1, 25), np.arange(2.0, 17.0), np.geomspace(16, 1e4, 40)]))
#: The PLD's grid: each loss value is rounded down to a multiple of STEP.
STEP = 1e-6
#: PLD masses below TINY are dropped (each is far below any δ a release states).
TINY = 1e-30
#: exp(x) underflows to 0 in double precision below this.
_UNDERFLOW = -745.0


@dataclass(frozen=True, eq=False)
class Factor:
    """One independent part of a mechanism's output: ``log P`` and ``log Q`` over the same outputs,
    drawn ``times`` times independently (−inf where an output is impossible)."""

    log_p: np.ndarray
    log_q: np.ndarray
    times: int = 1

    def _flipped(self) -> Factor:
        return Factor(self.log_q, self.log_p, self.times)

    def _epsilon(self) -> float:
        """``max_y log P(y)/Q(y)`` over the outputs P can give (+inf where Q cannot)."""
        seen = self.log_p > -np.inf
        return float(np.max(self.log_p[seen] - self.log_q[seen])) if seen.any() else 0.0

    def _renyi(self, alphas: np.ndarray) -> np.ndarray:
        """``D_α(P‖Q)`` at each α (> 1)."""
        seen = self.log_p > -np.inf
        lp, lq = self.log_p[seen], self.log_q[seen]
        if np.any(lq == -np.inf):
            return np.full(alphas.shape, np.inf)
        a = alphas[:, None]
        return logsumexp(a * lp[None, :] + (1 - a) * lq[None, :], axis=1) / (alphas - 1)

    def _pld(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The PLD under P: loss values rounded down to the grid (indices), their masses, and the
        mass where Q is 0 (loss +inf)."""
        seen = self.log_p > -np.inf
        lp, lq = self.log_p[seen], self.log_q[seen]
        infinite = lq == -np.inf
        mass = np.exp(lp)
        keep = ~infinite & (mass >= TINY)
        index = np.floor((lp[keep] - lq[keep]) / STEP).astype(np.int64)
        return _merged(index, mass[keep]) + (float(mass[infinite].sum()),)


def _merged(index: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal grid indices summed, masses below :data:`TINY` dropped."""
    index, where = np.unique(index, return_inverse=True)
    mass = np.bincount(where.ravel(), weights=mass)
    keep = mass >= TINY
    return index[keep], mass[keep]


def _convolved(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return _merged((a[0][:, None] + b[0][None, :]).ravel(), (a[1][:, None] * b[1][None, :]).ravel())


@dataclass(frozen=True)
class PrivacyLoss:
    """The privacy loss between ``M(a)`` and ``M(b)``: a product of independent factors (module docstring).

    ``+`` composes two independent outputs.
    """

    factors: tuple[Factor, ...] = ()

    def __add__(self, other: PrivacyLoss) -> PrivacyLoss:
        return PrivacyLoss(self.factors + other.factors)

    def _ways(self) -> tuple[tuple[Factor, ...], tuple[Factor, ...]]:
        return self.factors, tuple(f._flipped() for f in self.factors)

    @property
    def epsilon(self) -> float:
        """``max_y |log P(y)/Q(y)|``: exact (or a lower bound for truncated or binned factors)."""
        return max(sum(f.times * f._epsilon() for f in way) for way in self._ways())

    def renyi(self, alphas: np.ndarray = ALPHAS) -> np.ndarray:
        """``max(D_α(P‖Q), D_α(Q‖P))`` at each α."""
        alphas = np.asarray(alphas, dtype=float)
        return np.max([sum((f.times * f._renyi(alphas) for f in way), np.zeros(alphas.shape)) for way in self._ways()], axis=0)

    @property
    def rho(self) -> float:
        """``max over α in ALPHAS of max(D_α(P‖Q), D_α(Q‖P))/α``: a lower bound of the pair's zCDP ρ."""
        return float(np.max(self.renyi(ALPHAS) / ALPHAS))

    def delta(self, epsilon: float) -> float:
        """``max(δ_{P‖Q}(ε), δ_{Q‖P}(ε))`` from the PLD rounded down: a lower bound (module docstring)."""
        return max(_hockey_stick(way, epsilon) for way in self._ways())


def _hockey_stick(factors: tuple[Factor, ...], epsilon: float) -> float:
    """``E_P[(1 − e^{ε − L})₊]`` for the product of ``factors``, the convolution of their PLDs."""
    pld, finite = (np.zeros(1, dtype=np.int64), np.ones(1)), 1.0
    for f in factors:
        index, mass, infinite = f._pld()
        for _ in range(f.times):
            pld = _convolved(pld, (index, mass))
            finite *= 1 - infinite
    loss = pld[0] * STEP
    above = loss > epsilon
    return float((1 - finite) + np.sum(pld[1][above] * -np.expm1(epsilon - loss[above])))


# -- factors of the mechanisms' output laws ---------------------------------------------------------


def categorical(p: np.ndarray, q: np.ndarray, times: int = 1) -> Factor:
    """A factor from two probability vectors over the same outputs (exact).

    >>> round(PrivacyLoss((categorical(np.array([0.75, 0.25]), np.array([0.25, 0.75])),)).epsilon, 6) == round(math.log(3), 6)
    True
    """
    with np.errstate(divide="ignore"):
        return Factor(np.log(np.asarray(p, dtype=float)), np.log(np.asarray(q, dtype=float)), times)


def discrete_laplace_factor(shift: int, scale: float, times: int = 1) -> Factor:
    r"""``y = a + Z`` against ``y = b + Z``, ``P(Z = z) ∝ exp(−|z|/s)``, ``|a − b| = d`` (exact).

    With ``q = e^{−1/s}`` and ``c = (1 − q)/(1 + q)``: the outputs ``y <= 0`` (taking ``a = 0``,
    ``b = d``) all have ratio ``q^{−d}``, mass ``1/(1 + q)`` under P and ``q^d/(1 + q)`` under Q; the
    outputs ``y >= d`` all have ratio ``q^d``, the same masses swapped; each ``0 < y < d`` has
    ``P = c q^y``, ``Q = c q^{d−y}``. Grouping outputs of one ratio is exact, so the pure loss is
    ``d/s`` (attained at every ``y <= 0``) and the factor is the whole law.
    """
    d, s = abs(int(shift)), float(scale)
    log1q = math.log1p(math.exp(-1 / s))
    middle = np.arange(1, d, dtype=float)
    logc = math.log(-math.expm1(-1 / s)) - log1q
    log_p = np.concatenate([[-log1q], logc - middle / s, [-d / s - log1q]])
    return Factor(log_p, log_p[::-1].copy(), times)


def discrete_gaussian_factor(shift: int, sigma2: float, times: int = 1) -> Factor:
    r"""``a + Z`` against ``b + Z``, ``P(Z = z) ∝ exp(−z²/2σ²)``, ``|a − b| = d`` an integer.

    Completing the square, ``α z² + (1 − α)(z − d)² = (z − (1 − α)d)² + α(1 − α)d²``, so

    .. math::  D_α = \frac{α d^2}{2σ^2} + \frac{1}{α - 1}\log\frac{θ((1-α)d)}{θ(0)},
               \qquad θ(c) = \sum_{z∈ℤ} e^{-(z-c)^2/2σ^2},

    and ``θ(c) <= θ(0)`` for every real ``c``, with equality at the integers: by Poisson summation
    ``θ(c) = σ√(2π) Σ_k e^{−2π²σ²k²} cos(2πkc)``, a sum of non-negative weights times cosines that
    are all 1 at integer ``c`` (the bound Canonne, Kamath & Steinke 2020 use for the discrete
    Gaussian's concentrated DP). So ``D_α <= αd²/(2σ²)`` with equality at every integer α: the
    pair's ρ is exactly ``d²/(2σ²)``, attained at α = 2, as for the continuous Gaussian.

    The factor holds every ``z`` whose probability does not underflow (``z² <= 1490σ²``): the
    masses left out are below 10⁻³²³, and leaving them out only lowers what is computed.
    """
    d, v = abs(int(shift)), float(sigma2)
    reach = math.ceil(math.sqrt(-2 * _UNDERFLOW * v)) + 1
    z = np.arange(-reach, reach + d + 1, dtype=float)
    log_pmf = lambda x: -x * x / (2 * v)  # noqa: E731  (normalised below)
    norm = logsumexp(log_pmf(np.arange(-reach, reach + 1, dtype=float)))
    return Factor(log_pmf(z) - norm, log_pmf(z - d) - norm, times)


def bounded_discrete_laplace_factor(
    a: int, b: int, scale: float, lower: int, upper: float, truncated: bool, times: int = 1
) -> Factor:
    r"""``a + Z`` against ``b + Z`` (discrete Laplace of scale ``s``) kept in the integers of
    ``[lower, upper]``: *clamped* (a value past a bound is put on it) or *truncated* (drawn again
    until in bounds: ``P(t) ∝ exp(−|t − a|/s)`` on the bounded integers).

    Exact up to underflow: the outputs are the integers within ``745 s`` of ``a`` or ``b`` (farther
    ones have probability below 10⁻³²³ under both laws and are left out, which only lowers the
    loss), each bound carrying its clamped tail ``P(Z <= lower − a)`` or ``P(Z >= upper − a)``,
    ``P(Z >= k) = q^k/(1 + q)`` for ``k >= 0``, ``q = e^{−1/s}``.

    >>> f = bounded_discrete_laplace_factor(0, 1, 0.5, 0, 1, truncated=False)   # outputs 0 and 1 only
    >>> round(PrivacyLoss((f,)).epsilon, 12)   # P(0 | a = 0) = 1/(1 + q), P(0 | b = 1) = q/(1 + q): 1/s
    2.0
    """
    s = float(scale)
    log1q = math.log1p(math.exp(-1 / s))

    def log_above(k: int) -> float:  # log P(Z >= k)
        return -k / s - log1q if k >= 0 else math.log1p(-math.exp((k - 1) / s - log1q))

    reach = math.ceil(-_UNDERFLOW * s) + 1
    low, high = max(lower, min(a, b) - reach), min(upper, max(a, b) + reach)
    t = np.arange(low, int(high) + 1, dtype=float)

    def law(c: int) -> np.ndarray:
        if t.size == 1:  # one value in bounds: it is released whatever the answer
            return np.zeros(1)
        weights = -np.abs(t - c) / s
        if truncated:
            return weights - logsumexp(weights)
        out = weights + math.log(-math.expm1(-1 / s)) - log1q
        if low == lower:
            out[0] = log_above(c - lower)  # P(c + Z <= lower) = P(Z >= c - lower)
        if high == upper:
            out[-1] = log_above(int(upper) - c)
        return out

    return Factor(law(a), law(b), times)


def laplace_factor(shift: float, scale: float, times: int = 1, bins: int = 256) -> Factor:
    r"""``a + Lap(s)`` against ``b + Lap(s)`` (continuous), ``|a − b| = d``, binned: a lower bound,
    exact in ε.

    Taking ``a = 0``, ``b = d``: every ``y <= 0`` has ratio ``e^{d/s}`` (mass ½ under P, ``½e^{−d/s}``
    under Q), every ``y >= d`` ratio ``e^{−d/s}``; between them the ratio ``e^{(d − 2y)/s}`` varies,
    and ``(0, d)`` is cut into ``bins`` equal bins. The pure loss ``d/s`` is exact (attained on
    ``y <= 0``); the binning lowers the Rényi and hockey-stick divergences a little (module
    docstring), which ``bins`` makes negligible.
    """
    d, s = abs(float(shift)), float(scale)
    edges = np.linspace(0.0, d, bins + 1)
    inside_p = np.log(0.5) + np.log(-np.expm1(-(edges[1:] - edges[:-1]) / s)) - edges[:-1] / s
    inside_q = inside_p[::-1]
    log_p = np.concatenate([[np.log(0.5)], inside_p, [np.log(0.5) - d / s]])
    log_q = np.concatenate([[np.log(0.5) - d / s], inside_q, [np.log(0.5)]])
    return Factor(log_p, log_q, times)


def shifts(a: np.ndarray, b: np.ndarray) -> dict[float, int]:
    """How many coordinates of ``a`` and ``b`` differ by each non-zero ``|a − b|``.

    >>> shifts(np.array([3, 1, 0]), np.array([2, 1, 2]))
    {1: 1, 2: 1}
    """
    d = np.abs(np.asarray(a).ravel() - np.asarray(b).ravel())
    values, counts = np.unique(d[d != 0], return_counts=True)
    return {v.item(): int(c) for v, c in zip(values, counts)}


__all__ = [
    "ALPHAS",
    "Factor",
    "PrivacyLoss",
    "bounded_discrete_laplace_factor",
    "categorical",
    "discrete_gaussian_factor",
    "discrete_laplace_factor",
    "laplace_factor",
    "shifts",
]
