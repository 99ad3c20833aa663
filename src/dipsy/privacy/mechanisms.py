r"""Measurements of integer counts, each declaring its cost before it touches the data.

:func:`discrete_gaussian_counts` — the discrete Gaussian mechanism charged in ρ (zCDP), for the
marginal-based methods. Adding ``N_Z(0, σ²)`` independently to each count of a vector with L2
sensitivity Δ is ``Δ²/(2σ²)``-zCDP (Canonne, Kamath & Steinke 2020, Theorem 4 and its multivariate
form; the same ρ as the continuous Gaussian mechanism, Bun & Steinke 2016, Lemma 2.5 / METHODS.md
§0.4). Given a budget ρ, the variance is the least rational ``σ² >= Δ²/(2ρ)`` with a small
denominator (``σ²`` rounded *up*, so the noise is never smaller than the budget allows); the
measurement then spends exactly ``Δ²/(2σ²) <= ρ``, which is what the accountant records.

Per-individual sensitivity: when one individual may own up to θ records (the NIST 2020 challenge,
METHODS.md §0.1), adding or removing that individual moves the cells of a marginal by ``c_i >= 0``
with ``Σ c_i <= θ``; the L2 norm ``sqrt(Σ c_i²)`` is largest, θ, when all records share one cell.
So ``Δ₂ = θ`` and callers pass ``sensitivity=θ``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .budget import ZCDP, positive
from .rng import Randomness
from .samplers import discrete_gaussian

#: σ² is rounded up to a multiple of 1/DENOMINATOR: exact, cheap for the sampler, and costing at
#: most a relative 1/(DENOMINATOR·σ²) of the budget.
DENOMINATOR = 1024


@dataclass(frozen=True)
class GaussianPlan:
    """The declared measurement: variance σ² (exact) and the ρ it spends."""

    sigma2: Fraction
    sensitivity: float
    spend: ZCDP

    @property
    def sd(self) -> float:
        return math.sqrt(self.sigma2)


def plan_discrete_gaussian(rho: float, sensitivity: float = 1.0) -> GaussianPlan:
    """The least σ² on the 1/1024 grid with ``Δ²/(2σ²) <= ρ``, and the ρ it actually spends.

    >>> p = plan_discrete_gaussian(0.5)
    >>> p.sigma2, p.spend.rho
    (Fraction(1, 1), 0.5)
    """
    rho, delta = positive("rho", rho), positive("sensitivity", sensitivity)
    exact = Fraction(delta) ** 2 / (2 * Fraction(rho))
    sigma2 = Fraction(math.ceil(exact * DENOMINATOR), DENOMINATOR)
    spent = float(Fraction(delta) ** 2 / (2 * sigma2))
    return GaussianPlan(sigma2, delta, ZCDP(min(spent, rho)))


def discrete_gaussian_counts(counts: np.ndarray, plan: GaussianPlan, rand: Randomness) -> np.ndarray:
    """``counts + N_Z(0, σ²)`` cell by cell, exactly (integer arithmetic only)."""
    counts = np.asarray(counts, dtype=np.int64)
    return counts + discrete_gaussian(plan.sigma2, counts.shape, rand)
