r"""Laplace sanitizer for contingency tables (Barak et al. 2007; Bowen & Liu, S-003 §2, METHODS.md §1.1).

Release
-------
1. Cross-tabulate the chosen columns into ``K`` cells with counts ``n_k``.
2. Add exact discrete Laplace noise, ``ñ_k = n_k + e_k`` with ``P(e_k = z) ∝ exp(-|z| ε/Δ)``.
3. Post-process (free): ``post=threshold`` (default) sets negative counts to 0; ``post=raw``
   keeps the noisy counts as measured — unbiased, for users who compute their own intervals
   (table releases only).
4. Release the table, or ``n`` records drawn from ``Multinomial(n; max(ñ, 0)/sum max(ñ, 0))``
   (uniform over the cells if every count is 0).

Privacy
-------
Definition ε-DP. The table has L1 sensitivity ``Δ = 1`` under add/remove one record (one cell
moves by one) and ``Δ = 2`` under substitution (one cell down, another up). The discrete Laplace
mechanism with scale ``Δ/ε`` on an integer query of L1 sensitivity ``Δ`` is ε-DP (Ghosh,
Roughgarden & Sundararajan 2009; Canonne, Kamath & Steinke 2020): the noise densities at ``z`` and
``z + d`` differ by the factor ``exp(|d| ε/Δ)`` and the shifts over the cells add up to at most Δ.
The noise is drawn exactly (:func:`dipsy.privacy.samplers.discrete_laplace`), so the floating-point
attack of Mironov (2012) does not apply. Everything after step 2 is post-processing.

What is public: the domain; under substitution also ``n``. Under add/remove a record release
needs ``n``: it is measured as a noisy total with a share of ε (``total_share``, default 0.1)
and the table gets the rest — sequential composition. A table release under add/remove spends
all of ε on the table and releases no total beyond the noisy cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Domain
from ..engine import Engine
from ..errors import DipsyError
from ..privacy import PureDP, Spend
from ..privacy.rng import Randomness
from ..privacy.samplers import discrete_laplace, to_fraction
from .base import ADD_REMOVE, SUBSTITUTE, Option, Plan, Statement, Synthesizer
from .counts import CountModel

POST = ("threshold", "raw")


def _share(value: Any) -> float:
    x = float(value)
    if not 0 < x < 1:
        raise DipsyError(f"option total_share must lie strictly between 0 and 1, got {value!r}", "e.g. total_share=0.1")
    return x


def _post(value: Any) -> str:
    if value not in POST:
        raise DipsyError(f"option post={value!r} is unknown", f"use one of {', '.join(POST)}")
    return value


def discrete_laplace_variance(scale: Fraction) -> float:
    """Variance of the discrete Laplace with ``P(z) ∝ exp(-|z|/scale)``: ``2q/(1 - q)^2``, ``q = e^{-1/scale}``.

    >>> round(discrete_laplace_variance(Fraction(1)), 6)
    1.841347
    """
    q = math.exp(-1 / float(scale))
    return 2 * q / (1 - q) ** 2


class LaplaceSanitizer(Synthesizer):
    """Noisy contingency table with exact discrete Laplace noise; ε-DP, one release."""

    name = "laplace-sanitizer"
    summary = "Exact discrete Laplace noise on every cell of the cross-tabulation, negatives to 0; a table or records; ε-DP, one release"
    definition = "pure-DP"
    neighbouring = SUBSTITUTE
    neighbourings = (SUBSTITUTE, ADD_REMOVE)
    releases = ("records", "table")
    multiple_sets = False
    options = (
        Option("post", _post, "post-processing of the noisy counts: threshold (negatives to 0, default) or raw (table release only)"),
        Option("total_share", _share, "share of ε for the noisy total n under add/remove with a record release (default 0.1)"),
    )

    def plan(self, n: int, domain: Domain) -> Plan:
        post = self.settings.get("post", "threshold")
        if post == "raw" and self.release == "records":
            raise DipsyError("post=raw keeps negative counts, which records cannot have", "use post=threshold, or --release table")
        epsilon = to_fraction(self.budget.epsilon)
        add_remove = self.neighbouring == ADD_REMOVE
        sensitivity = 1 if add_remove else 2
        total_eps = None
        if add_remove and self.release == "records":
            share = to_fraction(self.settings.get("total_share", 0.1))
            total_eps, epsilon = epsilon * share, epsilon * (1 - share)
        scale = sensitivity / epsilon
        spends = [Spend(f"{self.name}: noisy table, discrete Laplace scale {scale} (sensitivity {sensitivity})", PureDP(float(epsilon)))]
        if total_eps is not None:
            spends.append(Spend(f"{self.name}: noisy total n, discrete Laplace scale {1 / total_eps}", PureDP(float(total_eps))))
        noise = {
            "distribution": "discrete Laplace: P(e = z) proportional to exp(-|z| / scale)",
            "scale": str(scale),
            "scale_value": float(scale),
            "variance": discrete_laplace_variance(scale),
            "sd": math.sqrt(discrete_laplace_variance(scale)),
            "post_processing": "negative counts set to 0" if post == "threshold" else "none (raw noisy counts)",
        }
        mechanism = (
            f"Laplace sanitizer (Barak et al. 2007): exact discrete Laplace noise of scale {sensitivity}/epsilon on every cell "
            "of the full cross-tabulation of the released columns, then post-processing"
        )
        public = (("the domain of the released columns",) if add_remove else
                  (f"n = {n} (the number of rows)", "the domain of the released columns"))
        statement = Statement(self.definition, self.budget, self.budget, 1, self.neighbouring, public, mechanism,
                              "sequential composition: noisy total, then noisy table" if total_eps else "one noisy table")
        params = {"sensitivity": sensitivity, "noise": noise, "cells": domain.cells(), "_post": post,
                  "_scale": scale, "_total_scale": None if total_eps is None else 1 / total_eps}
        if not add_remove:
            params["n"] = n
        return Plan(statement, tuple(spends), params)

    def fit(self, engine: Engine, plan: Plan) -> "SanitizerModel":
        table = engine.contingency(engine.domain.names, form="dense")
        p = plan.parameters
        return SanitizerModel(table.columns, table.shape, table.counts, p["_scale"], p["_total_scale"], p["_post"], p["noise"])


@dataclass(frozen=True, eq=False)
class SanitizerModel(CountModel):
    """Holds the exact counts (private); every call of :meth:`measure` is one noisy measurement.

    The API calls :meth:`table` or :meth:`sample` once per set, and the plan charged each set for
    exactly one measurement.
    """

    counts: np.ndarray
    scale: Fraction
    total_scale: Fraction | None
    post: str
    noise_info: dict

    def measure(self, rand: Randomness) -> tuple[np.ndarray, int]:
        """The noisy table after post-processing, and the public or noisy total."""
        noisy = self.counts + discrete_laplace(self.scale, self.counts.size, rand)
        if self.post == "threshold":
            noisy = np.maximum(noisy, 0)
        n = int(self.counts.sum())
        if self.total_scale is not None:
            n = max(int(n + discrete_laplace(self.total_scale, 1, rand)[0]), 0)
        return noisy, n

    def noise(self) -> dict:
        return self.noise_info

    def table(self, rand: Randomness) -> np.ndarray:
        return self.measure(rand)[0]

    def draw_counts(self, rand: Randomness) -> np.ndarray:
        table, n = self.measure(rand)
        total = table.sum()
        p = table / total if total > 0 else np.full(table.size, 1 / table.size)
        return rand.numpy.multinomial(n, p)
