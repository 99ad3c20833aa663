r"""DP-prior synthesizer (McClure & Reiter 2012): draws from the posterior mean, held fixed.

``METHODS.md`` §1 ("DP-prior"); Bowen & Liu (S-003) §2: "simulates synthetic data from a
distribution with fixed parameters ... no need to release multiple data sets".

Release
-------
Over the ``K`` cells of the chosen columns with counts ``y`` (``n = sum(y)``) and a flat prior
``a`` per cell, the posterior mean is ``p_k = (y_k + a) / (n + K a)`` and the release is one set

    y* ~ Multinomial(n; p).

For one binary column this is McClure & Reiter's ``s* ~ Binomial(n, (s + a)/(n + 2a))``.

Privacy (a derivation: Bowen & Liu's exact expression was lost in extraction, METHODS.md [R])
--------------------------------------------------------------------------------------------
Definition ε-DP; neighbours differ by one record moved between two cells, ``n`` fixed and public.
Moving one record from cell ``i`` to cell ``j`` changes only ``p_i`` and ``p_j`` (the denominator
``n + K a`` is unchanged), so

    p(y* | y) / p(y* | x) = ((y_i + a)/(y_i - 1 + a))^{y*_i} * ((y_j + a)/(y_j + 1 + a))^{y*_j}.

The first factor is at most ``((1 + a)/a)^n`` (``y_i = 1``, ``y*_i = n``), the second at least
``(a/(1 + a))^n`` (``y_j = 0``, ``y*_j = n``), and both bounds are attained. Hence
``|log ratio| <= n log(1 + 1/a)``, and the release is ε-DP if and only if

    a >= 1 / (e^{ε/n} - 1)        (≈ n/ε for large n).

The prior mass grows with ``n`` and pulls every cell to ``1/K``: the method is biased unless the
true proportions are uniform (S-003). ``tests/test_count_methods.py`` checks the bound by
enumeration: it holds at this ``a`` and fails below it.
"""

from __future__ import annotations

import math

import numpy as np

from ..domain import Domain, check_cells
from ..errors import DipsyError
from ..privacy.budget import PureDP
from ..privacy.measurement import Measurement, PosteriorDraw, Table
from ..privacy.rng import Randomness
from ..privacy.session import Session
from .base import MAX_PRIOR, Option, Plan, Synthesizer, real
from .counts import CountModel
from .dirichlet_multinomial import TINY, log_ratio


def minimum_prior(n: int, epsilon: float) -> float:
    """The least flat prior ``a`` that makes the DP-prior release ε-DP: ``1/(e^{ε/n} - 1)``.

    >>> round(minimum_prior(100, 1.0), 3)
    99.501
    """
    x = epsilon / n
    return max(math.exp(-x) / -math.expm1(-x), TINY)  # 1/(e^x − 1) without overflow


def log_likelihood(ystar: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    """``log p(y* | y, a)`` of the multinomial with the posterior-mean probabilities."""
    from scipy.special import gammaln

    ystar = np.asarray(ystar, dtype=float)
    p = (np.asarray(y, dtype=float) + a) / (np.sum(y) + len(y) * a)
    n = ystar.sum(axis=-1)
    return gammaln(n + 1) - gammaln(ystar + 1).sum(axis=-1) + (ystar * np.log(p)).sum(axis=-1)


class DPPrior(Synthesizer):
    """DP-prior synthesizer; one set, ε-DP with ``n`` public.

    >>> from dipsy.domain import Domain
    >>> from dipsy.privacy import PureDP
    >>> round(DPPrior(PureDP(1.0)).plan(100, Domain.from_sizes({"x": 2})).parameters["prior"], 3)
    99.501
    """

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "dp-prior"
    summary = (
        "Multinomial draw from the posterior mean with a prior of 1/(e^(ε/n) - 1) per cell (McClure & Reiter 2012); ε-DP, one set"
    )
    definition = "pure-DP"
    releases = ("records", "table")
    multiple_sets = False
    options = (
        Option(
            "prior",
            real("prior", 0.0, MAX_PRIOR, open_low=True, example=10),
            "flat prior per cell; default and least value 1/(e^(ε/n) - 1)",
        ),
    )

    def plan(self, n: int | None, domain: Domain) -> Plan:
        check_cells(domain)
        self.require_rows(n)
        if n is None:
            raise DipsyError(
                f"{self.name} treats n as public and was planned without it", "plan it under substitution, with n given"
            )
        epsilon = self.budget.epsilon
        prior = self.at_least("prior", minimum_prior(n, epsilon), "1/(e^(ε/n) - 1)")
        mechanism = (
            "DP-prior (McClure & Reiter 2012): y* ~ Multinomial(n; (y + a)/(n + K a)) over the K cells of the "
            "released columns, with a >= 1/(exp(epsilon/n) - 1) (derived in dipsy.methods.dp_prior)"
        )
        draw = PosteriorDraw(
            "multinomial draw from the posterior mean",
            epsilon,
            prior,
            draw=draw_from_mean,
            bound=lambda a: n * log_ratio(1, a),
            details=(("n", n), ("privacy map", "epsilon = n log((1 + a)/a), derived in dipsy.methods.dp_prior")),
        )
        m = Measurement(f"{self.name}: y* ~ Multinomial(n; posterior mean)", Table(domain.names), draw, self.relation)
        return Plan(
            (m,), self.relation, self.public(n), mechanism, self.composition(), {"prior": prior, "n": n, "cells": domain.cells()}
        )

    def fit(self, session: Session, plan: Plan) -> CountModel:
        m = plan.measurements[0]
        return CountModel(m.query_as(Table).columns, session.domain.shape(), (session.measure(m),))


def draw_from_mean(y: np.ndarray, a: float, rand: Randomness) -> np.ndarray:
    """``y* ~ Multinomial(n; (y + a)/(n + K a))``."""
    n = int(y.sum())
    return rand.numpy.multinomial(n, (y + a) / (n + y.size * a))
