r"""Sanitizing Bayesian sufficient statistics: Laplace noise, budget within a set, out-of-bound values.

Bowen & Liu (S-003, §3.2 and §4.1–4.3; ``METHODS.md`` §2.2) describe modips's sanitizer in words
only; the formulas below are derivations [R/NR in METHODS.md], each proved here and tested in
``tests/test_modips.py``.

Components and their sensitivities
----------------------------------
The statistics of a model come in ``J`` *components* ``g = 1..J`` (Bowen & Liu's word: e.g. the
mixed model's "6 components": counts, sums of ``y1``, sums of ``y2``, two variance terms, one
covariance). Component ``g`` is a vector with public bounds ``[L_g, U_g]`` on every coordinate and
an L1 global sensitivity ``Δ_g`` (the largest ``Σ_i |s_i(x) - s_i(x')|`` over neighbours ``x, x'``),
derived per model in :mod:`.models`.

Laplace mechanism and the budget inside one set (eqs. N1–N3)
------------------------------------------------------------
Each set spends ``ε_set = ε/m`` (sequential composition over the ``m`` sets). Every coordinate of
component ``g`` gets independent noise of scale ``b_g``::

    split      b_g = J Δ_g / ε_set           (eq. N1: ε_set/J for each component)
    non-split  b_g = (Σ_h Δ_h) / ε_set        (eq. N2: one scale, the L1 sensitivity of all of s)

Proof of ε_set-DP. Laplace noise of scale ``b`` — continuous, density ``exp(-|z|/b)/(2b)``, or
discrete, ``P(z) ∝ exp(-|z|/b)`` on the integers — has density ratio at most ``exp(|d|/b)``
between ``z`` and ``z + d``. With independent coordinates the ratio of the whole release between
neighbours is at most ``exp(Σ_g Σ_i |d_gi| / b_g)``. Split: ``Σ_i |d_gi| <= Δ_g`` and
``Δ_g/b_g = ε_set/J``, so the exponent is at most ``ε_set`` (this is sequential composition of the
``J`` components). Non-split: ``Σ_g Σ_i |d_gi| <= Σ_g Δ_g = b ε_set`` (eq. N3, the triangle
inequality over the components; for the normal model it is attained, see :mod:`.models`).

Integer-valued statistics (counts) get the exact discrete Laplace of
:func:`dipsy.privacy.samplers.discrete_laplace`; real-valued ones the continuous
:func:`dipsy.privacy.samplers.laplace`, whose ε-DP holds for the ideal real-valued mechanism, not
exactly for floating point (Mironov 2012) — stated in every statement that uses it. Scales are
computed as exact fractions from the public bounds (floats read exactly) and rounded *up* before
use, so the realised scale is never below the one the proof needs.

Out-of-bound values (``post``)
------------------------------
``threshold`` (default; Liu's boundary-inflated truncation, BIT; Bowen & Liu's "thresholding",
"piecewise"): ``s* = min(max(s + e, L), U)``. A function of the noisy release only, so
post-processing: it costs nothing.

``truncation`` (Bowen & Liu: "truncate the distribution at the boundaries"): ``s*`` is drawn
from the Laplace centred at ``s`` truncated to ``[L, U]``, i.e. noise is redrawn until
``s + e`` lies in bounds. This is **not** post-processing: the redrawing looks at ``s``. Its
density is ``p(s* | s) = f_b(s* - s) / Z(s)`` on ``[L, U]`` with ``Z(s) = P(s + e ∈ [L, U])``, and
the normaliser depends on the data.

*Cost (eq. N4).* For neighbours with ``s' = s + d``::

    p(s*|s)/p(s*|s') = exp((|s* - s'| - |s* - s|)/b) · Z(s')/Z(s)
    Z(s') = ∫_L^U f_b(t - s - d) dt <= e^{|d|/b} ∫_L^U f_b(t - s) dt = e^{|d|/b} Z(s),

so the log ratio is at most ``2|d|/b``: truncation at scale ``b`` costs up to **twice** what the
Laplace mechanism costs at that scale.

*Exact cost of one coordinate (eq. N5).* For ``L <= s`` and ``0 <= d <= D = min(Δ, U - L)``, put
``s*`` on the far side of both (``s* = L`` when ``s < s'``): the first factor reaches
``e^{d/b}``. ``Z(x) = 1 - ½e^{-(x-L)/b} - ½e^{-(U-x)/b}`` (continuous; the discrete case has
``1 - (q^{x-L+1} + q^{U-x+1})/(1+q)``, ``q = e^{-1/b}``) is concave and symmetric about the
midpoint, so ``log Z`` is concave and ``log Z(s+d) - log Z(s)`` falls as ``s`` rises: its largest
value is at ``s = L``. And ``d/b + log Z(L+d)`` rises with ``d``, because
``Z'(x) + Z(x)/b = (1 - e^{-(U-x)/b})/b >= 0`` (discrete: ``(1 - 2q e^{-(U-x)/b}/(1+q))/b > 0``).
Hence the privacy loss of one truncated coordinate whose statistic moves by at most ``Δ`` is::

    h(Δ) = D/b + log Z(L + D) - log Z(L),                                          (eq. N5)
    continuous:  Z(L+D)/Z(L) = (expm1(-D/b) + expm1(-(R-D)/b)) / expm1(-R/b),        R = U - L
    discrete:    Z(L+D)/Z(L) = (expm1(-(D+1)/b) + q·expm1(-(R-D)/b)) / expm1(-(R+1)/b),

attained at ``s = L, s' = L + D`` (and by symmetry at the upper bound). ``h(Δ) <= 2Δ/b`` and
``h(Δ)/(Δ/b) → 2`` both when ``R/b → ∞`` and ``ε → 0`` (then ``h = ε + log(2 - e^{-ε})``) and
when ``R/b → 0`` (then ``Z(L+D)/Z(L) ≈ 1 + D(R - D)/(bR)``): the factor 2 cannot be saved
materially in the regimes that matter.

*What dipsy does.* Under ``post=truncation`` every scale of eqs. N1–N2 is **doubled** (eq. N6:
each component is run at half its share), so by eq. N4 the set is ``ε_set``-DP. For the record,
:func:`truncation_loss` evaluates eq. N5 — summed over the coordinates one neighbour can move,
which is exact for the Bernoulli, normal and multinomial models and an upper bound for the mixed
model (see :mod:`.models`) — and the plan reports it per component; it is always at most the
component's share. (Bowen & Liu's truncation, if run at the Laplace scale ``Δ/ε``, therefore costs
``h(Δ)`` of eq. N5 — nearly ``2ε`` — not ε: dipsy's truncation at ε equals theirs at ε/2.)

The mechanism and what it declares
----------------------------------
One set's sanitization is **one measurement** (:class:`Sanitization`, a
:class:`~dipsy.privacy.measurement.Mechanism`): its query is the model's sufficient statistics, all
``J`` components; its noise is the above, at the scales of eqs. N1–N2 (N6: doubled for
truncation), computed only in :meth:`Sanitization.for_budget`; its declared cost — the privacy map
the session charges and the statement adds up — is computed back from the realised scales::

    ε_set = f · Σ_g Δ_g / b_g,      f = 1 (threshold) or 2 (truncation, eq. N4).

This is the bound proved above (the whole release's ratio is at most ``exp(f Σ_g Σ_i |d_gi|/b_g)``),
for split and non-split alike: split gives every term ``ε_set/J``, non-split one ``b`` and
``Σ_g Δ_g/b = ε_set``. So the doubling that keeps truncation honest is part of the declared cost:
the same scales run with ``post=truncation`` declare twice what they declare with thresholding.
The exact loss of eq. N5 (at most the declared cost) is reported per component in the plan.

*Sampling.* Drawing from the truncated Laplace "by redrawing until in bounds" has acceptance
``Z(s)``, tiny when ``b >> U - L``. The same law is drawn faster and exactly: continuous — by
inverting its CDF (pick the side of ``s`` with its mass, then a truncated exponential, with
``log1p``/``expm1`` for accuracy); discrete — by rejection from the discrete Laplace when
``b <= U - L`` (acceptance ``>= (1 - e^{-1})/2``) and otherwise from the uniform proposal on
``{L, …, U}`` accepted with the exact coin ``Bernoulli(exp(-|t - s|/b))`` (acceptance ``>= e^{-1}``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import DipsyError
from ...privacy.budget import PureDP
from ...privacy.loss import PrivacyLoss, bounded_discrete_laplace_factor
from ...privacy.measurement import Mechanism, discrete_laplace_variance
from ...privacy.rng import Randomness
from ...privacy.samplers import bernoulli_exp, discrete_laplace, laplace, to_fraction

BUDGETS = ("split", "non-split")
POSTS = ("threshold", "truncation")
#: Extra factor on the noise scale that each post-processing needs (eqs. N4, N6).
SCALE_FACTOR = {"threshold": 1, "truncation": 2}


@dataclass(frozen=True)
class Component:
    """One group of sufficient statistics sanitized together, with its public facts.

    Attributes
    ----------
    name
        What the component is (shown in the plan and in release.json).
    size
        Number of coordinates.
    sensitivity
        L1 global sensitivity of the whole component, as an exact fraction.
    lower, upper
        Public bounds of every coordinate (``upper`` may be ``math.inf``).
    discrete
        Integer-valued (counts): exact discrete Laplace noise.
    moved, step
        At most ``moved`` coordinates change between neighbours, each by at most ``step``, with
        ``moved · h(step)`` bounding the truncation loss (eq. N5; see :mod:`.models` per model).
    """

    name: str
    size: int
    sensitivity: Fraction
    lower: float
    upper: float
    discrete: bool
    moved: int = 1
    step: Fraction | None = None

    @property
    def coordinate_step(self) -> Fraction:
        return self.sensitivity if self.step is None else self.step


# --------------------------------------------------------------------------------------------
# Exact arithmetic on scales
# --------------------------------------------------------------------------------------------


def exact(x: float | int | Fraction) -> Fraction:
    """The exact rational value of a public number (a float is read as its binary value).

    >>> exact(0.5), exact(3)
    (Fraction(1, 2), Fraction(3, 1))
    """
    return x if isinstance(x, Fraction) else Fraction(x)


def round_up(x: Fraction, bits: int = 52) -> Fraction:
    """``x`` rounded up to about ``bits`` significant bits (never down), so exact samplers stay fast.

    >>> x = Fraction(10**40 + 1, 3 * 10**39)
    >>> r = round_up(x)
    >>> r >= x, r - x < x * 2**-50, r.denominator <= 2**64
    (True, True, True)
    >>> round_up(Fraction(7, 2))   # small fractions are kept as they are
    Fraction(7, 2)
    """
    if x.denominator < 2**32 and x.numerator < 2**62:
        return x
    shift = bits - (x.numerator.bit_length() - x.denominator.bit_length())
    if shift >= 0:
        return Fraction(-((-x.numerator << shift) // x.denominator), 1 << shift)
    return Fraction(-(-x.numerator // (x.denominator << -shift)) << -shift)


def float_up(x: Fraction) -> float:
    """The least float ``>= x`` (a scale may be rounded up, never down).

    >>> float_up(Fraction(1, 3)) >= Fraction(1, 3)
    True
    """
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    v = str(value).strip().lower()
    if v == "nonsplit":
        v = "non-split"
    if v not in choices:
        raise DipsyError(f"option {name}={value!r} is unknown", f"use one of {', '.join(choices)}")
    return v


def noise_scales(components: Sequence[Component], epsilon_set: Fraction, budget: str, post: str) -> list[Fraction]:
    """Exact noise scale of each component: eq. N1 (split) or N2 (non-split), doubled for truncation (N6).

    >>> c = [Component("a", 1, Fraction(1), 0, 1, False), Component("b", 1, Fraction(3), 0, 1, False)]
    >>> noise_scales(c, Fraction(1), "split", "threshold")
    [Fraction(2, 1), Fraction(6, 1)]
    >>> noise_scales(c, Fraction(1), "non-split", "truncation")
    [Fraction(8, 1), Fraction(8, 1)]
    """
    budget = check_choice("budget", budget, BUDGETS)
    post = check_choice("post", post, POSTS)
    factor = SCALE_FACTOR[post]
    if budget == "split":
        j = len(components)
        return [factor * j * c.sensitivity / epsilon_set for c in components]
    total = sum((c.sensitivity for c in components), Fraction(0))
    return [factor * total / epsilon_set for _ in components]


# --------------------------------------------------------------------------------------------
# Privacy loss of a component (what the plan reports and checks)
# --------------------------------------------------------------------------------------------


def truncation_loss(scale: float, step: float, lower: float, upper: float, discrete: bool) -> float:
    """Exact privacy loss ``h(Δ)`` of one truncated Laplace coordinate (eq. N5).

    ``step`` is the most the statistic moves between neighbours; ``upper`` may be infinite.

    >>> b = 1.0
    >>> round(truncation_loss(b, 1.0, 0.0, math.inf, False), 6) == round(1 + math.log(2 - math.exp(-1)), 6)
    True
    >>> truncation_loss(b, 1.0, 0.0, 1e6, False) <= 2 * 1.0 / b
    True
    """
    b = float(scale)
    r = float(upper) - float(lower)
    d = min(float(step), r)
    if d <= 0:
        return 0.0
    if discrete:
        q = math.exp(-1 / b)
        num = math.expm1(-(d + 1) / b) + q * math.expm1(-(r - d) / b)
        den = math.expm1(-(r + 1) / b)
    else:
        num = math.expm1(-d / b) + math.expm1(-(r - d) / b)
        den = math.expm1(-r / b)
    return d / b + math.log(num / den)


def component_loss(c: Component, scale: Fraction, post: str) -> float:
    """Privacy loss of component ``c`` at noise scale ``scale`` (a float, for reporting and checks).

    Threshold: ``Δ/b``. Truncation: ``moved · h(step)`` (eq. N5), never above ``2Δ/b`` (eq. N4).
    """
    if post == "threshold":
        return float(c.sensitivity / scale)
    loss = c.moved * truncation_loss(float(scale), float(c.coordinate_step), c.lower, c.upper, c.discrete)
    return min(loss, float(2 * c.sensitivity / scale))


# --------------------------------------------------------------------------------------------
# The mechanism: one set's sanitization, and what it declares
# --------------------------------------------------------------------------------------------


def realised(scale: Fraction, discrete: bool) -> Fraction:
    """The scale a sampler runs at: :func:`round_up` (exact discrete Laplace) or :func:`float_up`
    (floating-point Laplace) of the exact one — never below it.

    >>> realised(Fraction(1, 3), False) >= Fraction(1, 3), realised(Fraction(7, 2), True)
    (True, Fraction(7, 2))
    """
    return round_up(scale) if discrete else Fraction(float_up(scale))


@dataclass(frozen=True)
class Sanitization(Mechanism):
    r"""Laplace noise on every component of the sufficient statistics, then thresholding (free) or
    the truncated Laplace (charged twice): one set's ``s*`` (module docstring, eqs. N1–N6).

    Privacy map: ``ε = f · Σ_g Δ_g / b_g`` with ``f = 1`` for ``threshold`` and ``f = 2`` for
    ``truncation`` (eq. N4) — computed from the realised scales ``b_g``, so the doubling is part
    of what a truncated run declares and is charged.

    >>> c = (Component("a", 1, Fraction(1), 0, 10, True), Component("b", 1, Fraction(3), 0, 1, False))
    >>> split = Sanitization.for_budget(PureDP(1.0), c, "split", "threshold", sets=2)
    >>> split.scales, split.cost
    ((Fraction(4, 1), Fraction(12, 1)), PureDP(epsilon=0.5))
    >>> Sanitization.for_budget(PureDP(1.0), c, "non-split", "truncation", sets=2).scales
    (Fraction(16, 1), Fraction(16, 1))
    >>> Sanitization(c, split.scales, "truncation").cost   # truncation at the threshold scales: twice
    PureDP(epsilon=1.0)
    """

    components: tuple[Component, ...]
    scales: tuple[Fraction, ...]
    post: str = "threshold"

    @classmethod
    def for_budget(
        cls, budget: PureDP, components: Sequence[Component], split: str = "split", post: str = "threshold", sets: int = 1
    ) -> Sanitization:
        """The sanitizer of one of ``sets`` sets of ``budget``: ``ε_set = ε/sets`` exactly, scales by
        eq. N1 (``split``) or N2 (``non-split``), doubled for truncation (N6), rounded up."""
        post = check_choice("post", post, POSTS)
        epsilon = to_fraction(budget.epsilon, "epsilon") / sets
        exact_scales = noise_scales(components, epsilon, split, post)
        return cls(tuple(components), tuple(realised(b, c.discrete) for b, c in zip(exact_scales, components)), post)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        """Exact only when every statistic gets discrete noise (counts); real sums get float Laplace."""
        return all(c.discrete for c in self.components)

    @property
    def cost(self) -> PureDP:
        factor = SCALE_FACTOR[self.post]
        return PureDP(float(sum((factor * c.sensitivity / b for c, b in zip(self.components, self.scales)), Fraction(0))))

    def randomise(self, answer: Any, rand: Randomness) -> list[np.ndarray]:
        """``s*``: one array per component (any leading shape), in bounds."""
        values = list(answer)
        if len(values) != len(self.components):
            raise ValueError(f"{len(values)} statistics for {len(self.components)} components")
        return sanitize(values, self.components, self.scales, self.post, rand)

    def describe(self) -> dict[str, Any]:
        out = []
        for c, b in zip(self.components, self.scales):
            variance = discrete_laplace_variance(b) if c.discrete else 2 * float(b) ** 2
            out.append(
                {
                    "statistic": c.name,
                    "coordinates": c.size,
                    "distribution": (
                        "discrete Laplace: P(e = z) proportional to exp(-|z| / scale)"
                        if c.discrete
                        else "Laplace (continuous, floating point)"
                    ),
                    "scale": float(b),
                    "sensitivity": float(c.sensitivity),
                    "variance": variance,
                    "sd": math.sqrt(variance),
                    "bounds": [c.lower, c.upper if math.isfinite(c.upper) else None],
                }
            )
        post = (
            "out-of-bound values clamped to the bounds (post-processing, free)"
            if self.post == "threshold"
            else "drawn from the Laplace truncated to the bounds (not post-processing: charged twice, eq. N4)"
        )
        return {
            "distribution": "Laplace on each component of the sufficient statistics",
            "post": post,
            "privacy_map": f"epsilon = {SCALE_FACTOR[self.post]} * sum over components of sensitivity / scale",
            "components": out,
        }

    def weakened(self, factor: float) -> Sanitization:
        return replace(self, scales=tuple(b * to_fraction(factor) for b in self.scales))

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss | None:
        """Exact when every component is a count: each coordinate is an independent discrete
        Laplace at the scale :func:`sanitize` draws with, clamped (threshold) or truncated to the
        component's bounds (:func:`~dipsy.privacy.loss.bounded_discrete_laplace_factor`). None with
        real-valued components (floating-point Laplace: the audit samples :meth:`randomise`).

        >>> c = (Component("n", 2, Fraction(2), 0, 1, True),)
        >>> Sanitization(c, (Fraction(1),)).privacy_loss([np.array([1, 0])], [np.array([0, 1])]).epsilon
        2.0
        """
        if not self.exact:
            return None
        moved: dict[tuple[int, int, float, int, float], int] = {}
        for x, y, c, scale in zip(a, b, self.components, self.scales):
            for u, v in zip(np.ravel(x).tolist(), np.ravel(y).tolist()):
                if u != v:
                    key = (int(u), int(v), float(round_up(scale)), int(c.lower), c.upper)
                    moved[key] = moved.get(key, 0) + 1
        truncated = self.post == "truncation"
        return PrivacyLoss(tuple(bounded_discrete_laplace_factor(*key, truncated, times) for key, times in moved.items()))


# --------------------------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------------------------


def sanitize(
    values: Sequence[np.ndarray],
    components: Sequence[Component],
    scales: Sequence[Fraction],
    post: str,
    rand: Randomness,
) -> list[np.ndarray]:
    """Noisy, in-bound copies of the statistics, one array per component (any leading shape).

    Threshold: ``clip(s + e)``, with ``e`` from :func:`discrete_laplace` (counts) or :func:`laplace`
    (real values), drawn in component order — so at a seed the noise is exactly what those
    samplers give. Truncation: a draw from the truncated Laplace (eq. N5's law).
    """
    out = []
    for s, c, scale in zip(values, components, scales):
        s = np.asarray(s)
        if c.discrete:
            s = np.asarray(s, dtype=np.int64)
            if post == "threshold":
                noisy = s + discrete_laplace(round_up(scale), s.shape, rand)
                out.append(np.clip(noisy, int(c.lower), c.upper if math.isfinite(c.upper) else None))
            else:
                out.append(truncated_discrete_laplace(s, round_up(scale), int(c.lower), c.upper, rand))
        else:
            s = np.asarray(s, dtype=float)
            if post == "threshold":
                noisy = s + laplace(float_up(scale), s.shape, rand)
                out.append(np.clip(noisy, c.lower, c.upper))
            else:
                out.append(truncated_laplace(s, float_up(scale), c.lower, c.upper, rand.numpy))
    return out


def truncated_laplace(s: np.ndarray, scale: float, lower: float, upper: float, rng: np.random.Generator) -> np.ndarray:
    """Draws from the continuous Laplace centred at ``s`` truncated to ``[lower, upper]`` (inverse CDF).

    The mass below ``s`` is ``P- = -½ expm1((L - s)/b)``, above it ``P+ = -½ expm1(-(U - s)/b)``;
    pick a side in proportion, then invert the exponential truncated to that side:
    ``s + b log1p(v expm1((L - s)/b))`` below, ``s - b log1p(v expm1(-(U - s)/b))`` above.

    >>> x = truncated_laplace(np.zeros(1000), 100.0, -1.0, 2.0, np.random.default_rng(0))
    >>> bool(x.min() >= -1.0 and x.max() <= 2.0)
    True
    """
    s = np.clip(np.asarray(s, dtype=float), lower, upper)  # the true statistic is in bounds; guard rounding
    b = float(scale)
    em_low = np.expm1((lower - s) / b)  # in (-1, 0]
    em_high = np.expm1(-(upper - s) / b)  # in [-1, 0)
    p_low, p_high = -0.5 * em_low, -0.5 * em_high
    below = rng.random(s.shape) * (p_low + p_high) < p_low
    v = rng.random(s.shape)
    x = np.where(below, s + b * np.log1p(v * em_low), s - b * np.log1p(v * em_high))
    return np.clip(x, lower, upper)  # rounding only


def truncated_discrete_laplace(s: np.ndarray, scale: Fraction, lower: int, upper: float, rand: Randomness) -> np.ndarray:
    """Exact draws from ``P(t) ∝ exp(-|t - s|/scale)`` on the integers of ``[lower, upper]``.

    Rejection from the discrete Laplace where ``scale <= upper - lower`` (or ``upper`` is infinite);
    otherwise a uniform proposal on ``{lower, …, upper}`` kept with probability
    ``exp(-|t - s|/scale)`` (:func:`bernoulli_exp`, exact). Both accept each proposal with a
    probability bounded away from 0 (module docstring), and both give exactly the truncated law.

    >>> r = Randomness.from_seed(1)
    >>> x = truncated_discrete_laplace(np.array([0, 5, 10]), Fraction(1000), 0, 10, r)
    >>> bool(x.min() >= 0 and x.max() <= 10)
    True
    """
    s = np.asarray(s, dtype=np.int64)
    shape = s.shape
    flat = s.reshape(-1)
    out = np.empty(flat.size, dtype=np.int64)
    finite = math.isfinite(upper)
    high = int(upper) if finite else 0
    width = high - lower  # used only when finite
    uniform = finite and scale > width
    pending = np.arange(flat.size)
    while pending.size:
        centre = flat[pending]
        if uniform:
            t = lower + rand.below(width + 1, size=pending.size).astype(np.int64)
            dist = np.abs(t - centre).astype(object) * scale.denominator  # |t - s|/b = |t - s|·den/num
            keep = bernoulli_exp(dist, scale.numerator, rand)
        else:
            t = centre + discrete_laplace(scale, pending.size, rand)
            keep = (t >= lower) & ((t <= high) if finite else True)
        out[pending[keep]] = t[keep]
        pending = pending[~keep]
    return out.reshape(shape)
