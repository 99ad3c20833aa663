r"""Conversions between privacy definitions (``METHODS.md`` §0.4).

- ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016, Proposition 1.4).
- ρ-zCDP ⇒ (ε, δ)-DP with ``ε = ρ + 2 sqrt(ρ log(1/δ))`` (Bun & Steinke 2016, Proposition 1.3), and its
  inverse ``sqrt(ρ) = sqrt(ε + log(1/δ)) - sqrt(log(1/δ))`` — the conversion DPSyn and PrivSyn use.
- ρ-zCDP ⇒ (ε, δ)-DP with the tighter (Canonne, Kamath & Steinke 2020, §2.3)

      δ(ε) = inf_{α > 1}  exp((α - 1)(αρ - ε)) / (α - 1) · (1 - 1/α)^α,

  computed here by a bounded scalar minimisation over log(α - 1); ε for a given δ and ρ for a
  given (ε, δ) by bisection, both monotone. Every search ends on the safe side: the ε returned for
  (ρ, δ) has δ(ε) ≤ δ, and the ρ returned for (ε, δ) converts to at most ε.

The CKS bound is checked in the tests against the exact privacy profile of the Gaussian mechanism
(Balle & Wang 2018), which is exactly ρ-zCDP and so must lie below any valid conversion.

>>> round(zcdp_to_epsilon(0.5, 1e-5, "bun-steinke"), 4)
5.2985
>>> zcdp_to_epsilon(0.5, 1e-5) < zcdp_to_epsilon(0.5, 1e-5, "bun-steinke")
True
"""

from __future__ import annotations

import math

from ..errors import DipsyError
from .budget import positive

METHODS = ("cks", "bun-steinke")
_TOL = 1e-12


def pure_to_zcdp(epsilon: float) -> float:
    """ρ = ε²/2: an ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return positive("epsilon", epsilon) ** 2 / 2


def cks_delta(rho: float, epsilon: float) -> float:
    """The least δ for which ρ-zCDP gives (ε, δ)-DP by CKS 2020 §2.3 (a float, rounded up)."""
    rho, epsilon = positive("rho", rho), float(epsilon)
    if epsilon < 0:
        raise DipsyError(f"epsilon must be >= 0, got {epsilon}", "give a non-negative epsilon")

    def log_delta(t: float) -> float:  # α = 1 + e^t keeps α > 1 over the whole real line
        a = 1 + math.exp(t)
        return (a - 1) * (a * rho - epsilon) - math.log(a - 1) + a * math.log1p(-1 / a)

    # The optimal α is at least (1 + ε/ρ)/2 (CKS); search a wide bracket around it in log(α - 1).
    centre = math.log(max((1 + epsilon / rho) / 2 - 1, 1e-9))
    from scipy.optimize import minimize_scalar  # here: SciPy's optimizers take half a second to import, and the CLI's start waits

    best = minimize_scalar(log_delta, bounds=(centre - 30, centre + 30), method="bounded", options={"xatol": 1e-10})
    return min(1.0, math.exp(best.fun) * (1 + 1e-9))


def zcdp_to_epsilon(rho: float, delta: float, method: str = "cks") -> float:
    """The ε of (ε, δ)-DP implied by ρ-zCDP."""
    rho = positive("rho", rho)
    if not 0 < delta < 1:
        raise DipsyError(f"delta must lie in (0, 1), got {delta!r}", "e.g. delta=1e-9")
    if method == "bun-steinke":
        return rho + 2 * math.sqrt(rho * math.log(1 / delta))
    if method != "cks":
        raise DipsyError(f"unknown conversion {method!r}", f"use one of {', '.join(METHODS)}")
    low, high = 0.0, zcdp_to_epsilon(rho, delta, "bun-steinke")  # CKS is never looser
    while high - low > _TOL * max(1.0, high):
        mid = (low + high) / 2
        low, high = (mid, high) if cks_delta(rho, mid) > delta else (low, mid)
    return high  # δ(high) <= delta: the safe side


def approx_to_zcdp(epsilon: float, delta: float, method: str = "cks") -> float:
    """The largest ρ whose ρ-zCDP guarantee converts to (ε, δ)-DP (the budget a zCDP method may use)."""
    epsilon = positive("epsilon", epsilon)
    if not 0 < delta < 1:
        raise DipsyError(f"delta must lie in (0, 1), got {delta!r}", "e.g. delta=1e-9")
    log_inv = math.log(1 / delta)
    bs = (math.sqrt(epsilon + log_inv) - math.sqrt(log_inv)) ** 2
    if method == "bun-steinke":
        return bs
    if method != "cks":
        raise DipsyError(f"unknown conversion {method!r}", f"use one of {', '.join(METHODS)}")
    # ρ-zCDP gives (ε, δ)-DP iff δ(ρ, ε) <= δ, and δ(ρ, ε) grows with ρ: one bisection on ρ, aimed
    # a hair below ε so that zcdp_to_epsilon (a search with its own tolerance) also stays <= ε.
    target = epsilon * (1 - 1e-10)
    low, high = bs, 2 * bs
    while cks_delta(high, target) <= delta:
        low, high = high, 2 * high
    while high - low > _TOL * high:
        mid = (low + high) / 2
        low, high = (mid, high) if cks_delta(mid, target) <= delta else (low, mid)
    while zcdp_to_epsilon(low, delta) > epsilon:  # never taken in practice; a guard for the statement
        low *= 1 - 1e-9
    return low  # converts to at most ε: the safe side
