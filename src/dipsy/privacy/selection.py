r"""The exponential mechanism, sampled exactly: choosing one candidate by a noisy score.

Adaptive methods choose what to measure next from the data (MST's tree edges, AIM's marginals):
each choice is a :class:`Measurement` whose query returns every candidate's quality score
``q_r(D)`` and whose mechanism, :class:`ExponentialSelection`, releases one index ``r`` with

.. math::  \Pr[r] \;\propto\; \exp\!\Big(\frac{\varepsilon\, q_r(D)}{2\Delta}\Big),

where ``Δ`` bounds ``|q_r(D) − q_r(D')|`` for every candidate and every pair of neighbours under
the measurement's relation (McSherry & Talwar 2007).

**Exact sampling.** The scores are put on an integer grid of ``units`` steps per ``Δ``:
``k_r = ⌊q_r · units / Δ⌋``. For neighbours, ``|q_r(D) − q_r(D')| · units/Δ ≤ units``, and for
reals ``x, y``, ``⌊x⌋ − ⌊y⌋ < x − y + 1``, so the integers differ by at most ``units`` — the
integer scores have sensitivity ``units`` exactly. The scores are computed in floating point
(model marginals, norms), whose rounding could move a floor by one step; the mechanism is
therefore run at the integer sensitivity ``units + 1``:

.. math::  \Pr[r] \propto \exp(-\gamma\,\ell_r), \quad \ell_r = \max_s k_s - k_r, \quad
           \gamma = \frac{\varepsilon}{2(\mathrm{units} + 1)}

(a rational), drawn by :func:`exponential_choice` — rejection from the uniform proposal with exact
``Bernoulli(exp(−γℓ))`` coins (Canonne, Kamath & Steinke 2020, Algorithm 1) — with no floating
point anywhere in the draw. The grid costs a relative ``1/units`` of the score's resolution.

**Privacy map.** The exponential mechanism with sensitivity ``Δ'`` and ``Pr ∝ exp(ε k/(2Δ'))``
is ε-DP (McSherry & Talwar 2007, Thm 6; Dwork & Roth 2014, Thm 3.10): here ``Δ' = units + 1``
bounds the realised integer scores' sensitivity, so the choice is ε-DP. It is also ε-bounded-range
(Durfee & Rogers 2019, Lemma 3.2), and an ε-bounded-range mechanism is ``ε²/8``-zCDP (Cesar &
Rogers 2021, Lemma 3.4), which is what a zCDP release charges: :attr:`ExponentialSelection.cost`
is ``ZCDP(ε²/8)`` (``definition="zCDP"``) or ``PureDP(ε)`` (``"pure-DP"``).

>>> from fractions import Fraction
>>> s = ExponentialSelection.for_epsilon(Fraction(1, 2), 1.0)
>>> s.cost, s.gamma
(ZCDP(rho=0.03125), Fraction(1, 4004))
>>> s.weakened(0.5).gamma == 2 * s.gamma   # the audit's broken variant: twice the ε, the same stated cost
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from .budget import ZCDP, Budget, PureDP
from .loss import PrivacyLoss, categorical
from .measurement import Mechanism
from .rng import Randomness
from .samplers import bernoulli_exp, to_fraction

_INT64_MAX = 2**63 - 1
#: Grid steps per unit of sensitivity: the scores' resolution is Δ/UNITS (1/1000 of a record's effect).
UNITS = 1000


def exponential_choice(levels: np.ndarray, gamma: Fraction, size: int, rand: Randomness) -> np.ndarray:
    """``size`` independent indices ``r`` with ``Pr(r) ∝ exp(-γ · levels[r])``, exactly.

    Rejection from the uniform proposal: ``r`` uniform on the candidates, kept with probability
    ``exp(-γ (levels[r] - min levels))`` (CKS 2020 Algorithm 1); proposals come in batches, and each
    draw takes the first kept proposal of its batch (the proposals are i.i.d., so that is the first
    kept proposal of an i.i.d. sequence). The batch size follows the acceptance rate, which only
    sets the running time, never the distribution.
    """
    levels = np.asarray(levels, dtype=np.int64)
    shifted = levels - levels.min()
    rate = float(np.mean(np.exp(-float(gamma) * shifted)))
    per = max(1, min(math.ceil(3 / max(rate, 1e-300)), 1 << 16))
    wide = gamma.numerator * max(int(shifted.max(initial=0)), 1) > _INT64_MAX  # else exact Python ints
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        batch = max(1, min(per, (1 << 20) // pending.size))
        r = rand.below(levels.size, size=pending.size * batch).astype(np.int64)
        num = shifted[r].astype(object) * gamma.numerator if wide else shifted[r] * gamma.numerator
        kept = bernoulli_exp(num, gamma.denominator, rand).reshape(pending.size, batch)
        hit = kept.any(axis=1)
        first = kept.argmax(axis=1)
        out[pending[hit]] = r.reshape(pending.size, batch)[hit, first[hit]]
        pending = pending[~hit]
    return out


def epsilon_for(rho: float) -> Fraction:
    """The largest ε on a 2⁻⁴⁰ grid with ``ε²/8 <= ρ`` (the exponential mechanism's zCDP cost).

    >>> e = epsilon_for(0.125); e, e * e / 8 <= Fraction(0.125)
    (Fraction(1, 1), True)
    """
    if not rho > 0:
        raise ValueError(f"the selection needs ρ > 0, got {rho}")
    step = Fraction(1, 1 << 40)
    eps = Fraction(math.sqrt(8 * rho)).limit_denominator(1 << 40)
    while eps * eps / 8 > Fraction(rho):
        eps -= step
    return eps


def grid_scores(scores: Any, sensitivity: Fraction, units: int = UNITS) -> np.ndarray:
    """``⌊q · units / Δ⌋`` for every score (int64; refused when a score does not fit).

    >>> grid_scores([0.0, 1.5, -0.25], Fraction(1, 2), 10).tolist()
    [0, 30, -5]
    """
    q = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(q)):
        raise ValueError("the exponential mechanism needs finite scores")
    k = np.floor(q * (units * sensitivity.denominator / sensitivity.numerator))
    if np.abs(k).max(initial=0) > 2**52:
        raise ValueError("a score is too large for the grid: lower 'units' or rescale the scores")
    return k.astype(np.int64)


@dataclass(frozen=True)
class ExponentialSelection(Mechanism):
    r"""Release the index of one candidate, ``Pr[r] ∝ exp(ε q_r / 2Δ)`` on the integer grid (module docstring).

    The answer is the vector of every candidate's score ``q_r(D)`` (floats, each of sensitivity
    ``sensitivity`` under the measurement's relation); the release is one index (an ``int``).
    ``gamma`` is ``ε / (2 (units + 1))``, per grid step.
    """

    epsilon: Fraction
    sensitivity: Fraction
    units: int = UNITS
    definition: str = "zCDP"
    #: ε actually used to draw (the stated ``epsilon`` unless weakened by the audit).
    drawn_epsilon: Fraction | None = None

    @classmethod
    def for_epsilon(cls, epsilon: Any, sensitivity: Any, definition: str = "zCDP", units: int = UNITS) -> ExponentialSelection:
        """An ε-DP (and ε²/8-zCDP) choice among scores of sensitivity ``sensitivity``, both exact rationals."""
        if definition not in ("zCDP", "pure-DP"):
            raise ValueError(f"definition must be 'zCDP' or 'pure-DP', not {definition!r}")
        eps, delta = to_fraction(epsilon, "epsilon"), to_fraction(sensitivity, "sensitivity")
        if eps <= 0 or delta <= 0 or units < 1:
            raise ValueError("the exponential mechanism needs ε > 0, a sensitivity > 0 and units >= 1")
        return cls(eps, delta, units, definition)

    @classmethod
    def for_rho(cls, rho: float, sensitivity: Any, units: int = UNITS) -> ExponentialSelection:
        """The choice that costs ``ρ`` of zCDP: ε = sqrt(8ρ), rounded *down* to a rational (:func:`epsilon_for`)."""
        return cls.for_epsilon(epsilon_for(rho), sensitivity, "zCDP", units)

    @property
    def gamma(self) -> Fraction:
        return (self.drawn_epsilon or self.epsilon) / (2 * (self.units + 1))

    @property
    def cost(self) -> Budget:
        if self.definition == "pure-DP":
            return PureDP(float(self.epsilon))
        return ZCDP(float(self.epsilon * self.epsilon / 8))

    def probabilities(self, scores: Any) -> np.ndarray:
        """The exact selection probabilities for ``scores`` (floats; for tests and the audit)."""
        k = grid_scores(scores, self.sensitivity, self.units)
        w = np.exp(-float(self.gamma) * (k.max() - k).astype(float))
        return w / w.sum()

    def randomise(self, answer: Any, rand: Randomness) -> int:
        k = grid_scores(answer, self.sensitivity, self.units)
        return int(exponential_choice(k.max() - k, self.gamma, 1, rand)[0])

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "exponential mechanism: Pr[r] ∝ exp(ε q_r / 2Δ), scores on a grid of Δ/units, "
            "drawn exactly by rejection with exact Bernoulli(exp(−γℓ)) coins",
            "epsilon": float(self.epsilon),
            "sensitivity": float(self.sensitivity),
            "units": self.units,
            "privacy_map": "ε-DP (McSherry & Talwar 2007); ε-bounded range, so ε²/8-zCDP (Cesar & Rogers 2021)",
        }

    def weakened(self, factor: float) -> ExponentialSelection:
        # half the noise: twice the ε in the draw, the same stated cost
        return replace(self, drawn_epsilon=self.epsilon / to_fraction(factor))

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss:
        """Exact: the release is one index whose law is :meth:`probabilities` (the grid scores and
        γ the draw uses), a :func:`~dipsy.privacy.loss.categorical` factor.

        >>> s = ExponentialSelection.for_epsilon(1, 1, "pure-DP", units=1)
        >>> round(s.privacy_loss([0.0, 1.0], [1.0, 0.0]).epsilon, 12)   # γ = 1/4; the levels swap
        0.25
        """
        return PrivacyLoss((categorical(self.probabilities(a), self.probabilities(b)),))


__all__ = ["ExponentialSelection", "UNITS", "epsilon_for", "exponential_choice", "grid_scores"]
