"""Conversions between zCDP and (ε, δ)-DP, checked against the exact privacy profile of the Gaussian."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from dipsy.errors import DipsyError
from dipsy.privacy.conversions import approx_to_zcdp, cks_delta, pure_to_zcdp, zcdp_to_epsilon


def gaussian_delta(sigma: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with sensitivity 1 (Balle & Wang 2018, Theorem 8)."""
    return stats.norm.cdf(1 / (2 * sigma) - epsilon * sigma) - math.exp(epsilon) * stats.norm.cdf(
        -1 / (2 * sigma) - epsilon * sigma
    )


@pytest.mark.parametrize("rho", [0.01, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0, 8.0])
def test_cks_bound_is_valid_for_the_gaussian_and_tighter_than_bun_steinke(rho, epsilon):
    """The Gaussian with σ² = 1/(2ρ) is exactly ρ-zCDP, so any valid conversion bounds its δ(ε)."""
    exact = gaussian_delta(math.sqrt(1 / (2 * rho)), epsilon)
    bound = cks_delta(rho, epsilon)
    assert exact <= bound * (1 + 1e-9)
    if epsilon > rho:  # Bun & Steinke: δ = exp(-(ε - ρ)²/(4ρ))
        assert bound <= math.exp(-((epsilon - rho) ** 2) / (4 * rho))


@pytest.mark.parametrize("rho, delta", [(0.005, 1e-9), (0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-3)])
def test_conversions_round_trip_on_the_safe_side(rho, delta):
    eps = zcdp_to_epsilon(rho, delta)
    assert cks_delta(rho, eps) <= delta * (1 + 1e-6)
    assert eps < zcdp_to_epsilon(rho, delta, "bun-steinke")
    back = approx_to_zcdp(eps, delta)
    assert back <= rho * (1 + 1e-9) and back == pytest.approx(rho, rel=1e-6)
    bs = zcdp_to_epsilon(rho, delta, "bun-steinke")
    assert approx_to_zcdp(bs, delta, "bun-steinke") == pytest.approx(rho, rel=1e-12)


def test_pure_dp_and_bad_input():
    assert pure_to_zcdp(2.0) == 2.0
    with pytest.raises(DipsyError, match="delta"):
        zcdp_to_epsilon(1.0, 0.0)
    with pytest.raises(DipsyError, match="unknown conversion"):
        approx_to_zcdp(1.0, 1e-6, "magic")
