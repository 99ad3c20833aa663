r"""Dirichlet-multinomial synthesizer (Abowd & Vilhuber 2008; Machanavajjhala et al. 2008).

Source S-000 (Hu, "Differentially Private Synthetic Tabular Data"), equations (6)–(13);
``METHODS.md`` §1.

Model and release
-----------------
Let ``y`` be the counts of the ``I`` cells of the full cross-tabulation of the chosen columns,
``n = sum(y)``. With a flat prior ``alpha_i = alpha`` the posterior is Dirichlet (eq. 3), and one
synthetic set is

    theta* ~ Dirichlet(y + alpha)                       (eq. 6)
    y*     ~ Multinomial(n; theta*)                     (eq. 7)

released as ``y*_i`` records of cell ``i``, decoded and shuffled.

Privacy
-------
Definition: ε-DP. Neighbouring relation: substitution — ``x`` and ``y`` have the same total ``n``
and differ by one record moved between two cells (S-000: "Hamming distance 1 ... sum x = sum y").
Public: ``n`` and the domain.

Proof (S-000 eqs. 8–13). The posterior predictive is (eq. 8)

    p(y* | y, alpha) = n!/prod y*_i! * Gamma(sum(y+alpha))/prod Gamma(y_i+alpha)
                       * prod Gamma(y*_i+y_i+alpha) / Gamma(sum(y*+y+alpha)).

For neighbours with ``x_i = y_i - 1`` and ``x_j = y_j + 1`` every term but cells ``i`` and ``j``
cancels (the totals are equal) and, by ``Gamma(z + 1) = z Gamma(z)`` (eq. 10),

    p(y*|y)/p(y*|x) = (alpha + y_j)/(alpha + y_i - 1) * (y*_i + alpha + y_i - 1)/(y*_j + alpha + y_j),

which is at most ``(n + alpha)/alpha`` (take ``y_i = 1``, ``y*_i = n``, ``y*_j = 0``) and at least
``alpha/(n + alpha)`` (eq. 11). Hence ``|log ratio| <= log((n + alpha)/alpha)`` and the release is
ε-DP as soon as ``alpha >= n/(e^ε - 1)`` (eqs. 12–13). The bound is attained, so this ``alpha`` is the
least that gives ε-DP; ``tests/test_dirichlet_multinomial.py`` checks both facts by enumeration.

``m`` sets, each from its own ``theta*``, are ε/m-DP each and ε-DP together by sequential
composition; so each set uses ``alpha >= n/(e^(ε/m) - 1)``.

The guarantee is for exact draws from the posterior predictive. The draws here are NumPy's
floating-point gamma and multinomial samplers, which approximate it; Mironov (2012) shows that
floating-point noise can leak through its low-order bits, and no such analysis exists yet for
these samplers — a caveat for the threat model, stated here rather than hidden.
"""

from __future__ import annotations

import math

import numpy as np

from ..domain import Domain, check_cells
from ..errors import DipsyError
from ..privacy.budget import PureDP
from ..privacy.measurement import Measurement, PosteriorDraw, Table
from ..privacy.session import Session
from .base import MAX_PRIOR, Option, Plan, Synthesizer, real
from .counts import CountModel

MECHANISM = (
    "Dirichlet-multinomial posterior predictive over the full cross-tabulation of the released columns "
    "(Abowd & Vilhuber 2008; Machanavajjhala et al. 2008): theta* ~ Dirichlet(y + alpha), "
    "y* ~ Multinomial(n; theta*), with alpha >= n/(exp(epsilon per set) - 1) (Hu, S-000 eq. 13)"
)


#: The least prior any method uses: a positive float whose logarithm (≈ −690.8) is exact enough.
TINY = 1e-300


def log_ratio(n: float, a: float) -> float:
    """``log((n + a)/a)``, accurate both for tiny ε (log1p) and for a prior near :data:`TINY`."""
    ratio = n / a
    return math.log1p(ratio) if math.isfinite(ratio) else math.log(n + a) - math.log(a)


def minimum_alpha(n: int, epsilon: float) -> float:
    """The least flat prior that makes one set ε-DP: ``n / (e^ε - 1)`` (S-000 eq. 13).

    >>> round(minimum_alpha(994, 5.0), 6)   # the CE Race example of S-000
    6.742953
    """
    # n e^{-ε}/(1 - e^{-ε}): the same value without overflow at large ε; floored at TINY, where
    # log((n + α)/α) is still below ε (TINY binds only when n e^{-ε} < TINY)
    return max(n * math.exp(-epsilon) / -math.expm1(-epsilon), TINY)


def draw_predictive(y: np.ndarray, alpha: float | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``y*``: one multinomial draw of ``sum(y)`` from a fresh ``theta* ~ Dirichlet(y + alpha)`` (eqs. 6–7)."""
    # Dirichlet as normalised gammas (memory: one float array of the cells, normalised in place).
    theta = rng.standard_gamma(y + alpha)
    theta /= theta.sum()
    return rng.multinomial(int(y.sum()), theta)


def dirichlet_draw(
    n: int, epsilon: float, alpha: float, name: str = "Dirichlet-multinomial posterior predictive"
) -> PosteriorDraw:
    """One set's posterior-predictive draw as a mechanism: ε = log((n + α)/α) at most (eq. 11)."""
    return PosteriorDraw(
        name,
        epsilon,
        alpha,
        draw=lambda y, a, rand: draw_predictive(y, a, rand.numpy),
        bound=lambda a: log_ratio(n, a),
        details=(
            ("n", n),
            ("privacy map", "epsilon = log((n + alpha) / alpha), S-000 eqs. 11-13"),
            ("draws", "NumPy floating-point gamma and multinomial"),
        ),
    )


def log_predictive(ystar: np.ndarray, y: np.ndarray, alpha: float | np.ndarray) -> np.ndarray:
    """``log p(y* | y, alpha)`` of the Dirichlet-multinomial posterior predictive (S-000 eq. 8).

    ``ystar`` may hold many count vectors in its leading axes; the last axis is the cells;
    ``alpha`` is one prior for every cell or one per cell.
    """
    from scipy.special import gammaln

    ystar = np.asarray(ystar, dtype=float)
    post = np.asarray(y, dtype=float) + np.asarray(alpha, dtype=float)
    n = ystar.sum(axis=-1)
    return (
        gammaln(n + 1)
        - gammaln(ystar + 1).sum(axis=-1)
        + gammaln(post.sum())
        - gammaln(post).sum()
        + gammaln(ystar + post).sum(axis=-1)
        - gammaln(n + post.sum())
    )


class DirichletMultinomial(Synthesizer):
    """The Dirichlet-multinomial synthesizer; ε-DP with ``n`` public and fixed.

    >>> from dipsy.domain import Domain
    >>> from dipsy.privacy import PureDP
    >>> plan = DirichletMultinomial(PureDP(5.0)).plan(994, Domain.from_sizes({"Race": 6}))
    >>> round(plan.parameters["alpha"], 6)
    6.742953
    """

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "dirichlet-multinomial"
    summary = "Dirichlet-multinomial posterior predictive over the full cross-tabulation (Abowd & Vilhuber 2008); ε-DP, n public"
    definition = "pure-DP"
    releases = ("records", "table")
    options = (
        Option(
            "alpha",
            real("alpha", 0.0, MAX_PRIOR, open_low=True, example=10),
            "flat Dirichlet prior per cell; default and least value n/(e^(ε/m) - 1)",
        ),
    )
    mechanism = MECHANISM

    def check_domain(self, domain: Domain) -> None:
        """Which columns the method accepts (any encodable ones here)."""

    def plan(self, n: int | None, domain: Domain) -> Plan:
        self.check_domain(domain)
        check_cells(domain)
        self.require_rows(n)
        if n is None:
            raise DipsyError(
                f"{self.name} treats n as public and was planned without it", "plan it under substitution, with n given"
            )
        epsilon = self.budget.epsilon / self.sets
        alpha = self.at_least("alpha", minimum_alpha(n, epsilon), "n/(e^(ε/m) - 1)")
        query = Table(domain.names)
        draws = tuple(
            Measurement(label, query, dirichlet_draw(n, epsilon, alpha), self.relation, self.set_index(k))
            for k, label in enumerate(self.per_set_labels("theta* ~ Dirichlet(y + alpha), y* ~ Multinomial(n; theta*)"))
        )
        return Plan(
            draws,
            self.relation,
            self.public(n),
            self.mechanism,
            self.composition(),
            {"alpha": alpha, "n": n, "cells": domain.cells()},
        )

    def fit(self, session: Session, plan: Plan) -> CountModel:
        return CountModel(
            plan.measurements[0].query_as(Table).columns,
            session.domain.shape(),
            tuple(session.measure(m) for m in plan.measurements),
        )


class BetaBinomial(DirichletMultinomial):
    r"""Beta-binomial synthesizer (Charest 2010) for one categorical column; ε-DP, ``n`` public.

    For a binary column with ``s`` ones out of ``n``: ``theta* ~ Beta(s + a, n - s + a)``,
    ``s* ~ Binomial(n, theta*)``, a fresh ``theta*`` per set. This is the Dirichlet-multinomial
    synthesizer with ``I = 2`` cells, so its proof applies verbatim (S-000 eqs. 8–13 with ``I = 2``):
    the least prior that makes one set ε/m-DP under substitution is ``a = b = n/(e^(ε/m) - 1)``
    (METHODS.md §1, derived there from eq. 13). For a column with ``K > 2`` categories the same
    proof gives the Dirichlet-multinomial over its ``K`` cells with the same prior, which is what
    this method then draws. Prior mean 1/K, prior mass growing with ``n``: biased towards the
    uniform when ε is small (Bowen & Liu, S-003).
    """

    name = "beta-binomial"
    summary = "Beta-binomial posterior predictive for one categorical column (Charest 2010); ε-DP, n public"
    options = (
        Option(
            "alpha",
            real("alpha", 0.0, MAX_PRIOR, open_low=True, example=10),
            "Beta prior a = b per category; default and least value n/(e^(ε/m) - 1)",
        ),
    )
    mechanism = (
        "Beta-binomial posterior predictive for one categorical column (Charest 2010): theta* ~ Beta(s + a, n - s + a) "
        "(Dirichlet(y + a) for K > 2 categories), s* ~ Binomial(n, theta*), with a >= n/(exp(epsilon per set) - 1)"
    )

    def check_domain(self, domain: Domain) -> None:
        if len(domain) != 1 or not domain.columns[0].is_categorical:
            raise DipsyError(
                f"{self.name} synthesizes one categorical column, not {', '.join(domain.names)}",
                "choose one categorical column with --columns (or use dirichlet-multinomial for several)",
            )
