r"""Laplace sanitizer for contingency tables (Barak et al. 2007; Bowen & Liu, S-003 §2, METHODS.md §1.1).

Release
-------
1. Cross-tabulate the chosen columns into ``K`` cells with counts ``n_k``.
2. Add exact discrete Laplace noise, ``ñ_k = n_k + e_k`` with ``P(e_k = z) ∝ exp(-|z| ε/Δ)``.
3. Post-process (free): ``post=threshold`` (default) sets negative counts to 0; ``post=raw``
   keeps the noisy counts as measured — unbiased, for users who compute their own intervals
   (table releases only).
4. Release the table, or records:

   - ``records=replicate`` (default; Bowen & Liu's release, S-003 §4.1: the synthetic count
     *is* the thresholded noisy count ``s*``): cell ``k`` repeated ``max(ñ_k, 0)`` times, so
     the number of rows is the noisy total ``Σ_k max(ñ_k, 0)``, not ``n``. A count read off
     the records is the noisy count itself, with the Laplace variance ``2 exp(-ε/Δ)/(1 -
     exp(-ε/Δ))²`` and nothing more.
   - ``records=redraw``: ``n`` records drawn from ``Multinomial(n; max(ñ, 0)/Σ max(ñ, 0))``
     (uniform over the cells if every count is 0). It keeps the row count at ``n`` and costs
     a second layer of noise: a count read off the records has the multinomial variance
     ``n p(1 − p)`` *on top of* the Laplace variance, which at large ε is as large as the
     sampling variance of the data itself, so a Wald interval computed as if the records were
     a sample covers less than its level: with the variance doubled, a nominal 95 % interval
     covers ``2Φ(1.96/√2) − 1 = 0.834`` (Bowen & Liu's binary study at large ε, measured in
     ``benchmarks/bowen_liu.py``; ``replicate`` reaches 0.95 there). Under add/remove it also
     spends a share of ε on a noisy ``n`` (below).

Privacy
-------
Definition ε-DP. The table has L1 sensitivity ``Δ = 1`` under add/remove one record (one cell
moves by one) and ``Δ = 2`` under substitution (one cell down, another up). The discrete Laplace
mechanism with scale ``Δ/ε`` on an integer query of L1 sensitivity ``Δ`` is ε-DP (Ghosh,
Roughgarden & Sundararajan 2009; Canonne, Kamath & Steinke 2020): the noise densities at ``z`` and
``z + d`` differ by the factor ``exp(|d| ε/Δ)`` and the shifts over the cells add up to at most Δ.
The noise is drawn exactly (:func:`dipsy.privacy.samplers.discrete_laplace`), so the floating-point
attack of Mironov (2012) does not apply. Everything after step 2 is post-processing: the
thresholded table, the records that replicate it and their number ``Σ_k max(ñ_k, 0)`` are
functions of the noisy table alone, and the multinomial redraw uses the noisy table, fresh
randomness and ``n`` only.

What is public: the domain; under substitution ``n`` too (neighbours share it), which a table
release and a ``records=redraw`` release state. A ``records=replicate`` release neither needs nor
states ``n``: its number of rows is the noisy total ``Σ_k max(ñ_k, 0)`` (under substitution the
guarantee is still for neighbours of equal ``n``). Under add/remove a ``records=redraw`` release
measures ``n`` as a noisy total with a share of ε (``total_share``, default 0.1) and the table gets
the rest — sequential composition (the ε's of pure DP add); table and ``replicate`` releases spend
all of ε on the table and release no total beyond the noisy cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain import Domain, check_cells
from ..errors import DipsyError
from ..privacy.budget import PureDP
from ..privacy.measurement import DiscreteLaplace, Measurement, Table, Total
from ..privacy.relation import ADD_REMOVE, SUBSTITUTE
from ..privacy.rng import Randomness
from ..privacy.samplers import to_fraction
from ..privacy.session import Session
from .base import Option, Plan, Synthesizer
from .counts import CountModel

POST = ("threshold", "raw")
#: How records are made from the noisy table: the paper's (default) and the one that keeps n rows.
RECORDS = ("replicate", "redraw")


def total_share_option(value: Any) -> float:
    """The option ``total_share``: the share of ε spent on the noisy total n, strictly between 0 and 1."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not 0 < x < 1:
        raise DipsyError(f"option total_share must lie strictly between 0 and 1, got {value!r}", "e.g. total_share=0.1")
    return x


def _post(value: Any) -> str:
    if value not in POST:
        raise DipsyError(f"option post={value!r} is unknown", f"use one of {', '.join(POST)}")
    return value


def _records(value: Any) -> str:
    if value not in RECORDS:
        raise DipsyError(f"option records={value!r} is unknown", f"use one of {', '.join(RECORDS)}")
    return value


class LaplaceSanitizer(Synthesizer):
    """Noisy contingency table with exact discrete Laplace noise; ε-DP, one release."""

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "laplace-sanitizer"
    summary = "Exact discrete Laplace noise on every cell of the cross-tabulation, negatives to 0; a table or records; ε-DP, one release"
    definition = "pure-DP"
    relations = (SUBSTITUTE, ADD_REMOVE)
    releases = ("records", "table")
    multiple_sets = False
    options = (
        Option(
            "post", _post, "post-processing of the noisy counts: threshold (negatives to 0, default) or raw (table release only)"
        ),
        Option(
            "records",
            _records,
            "records from the noisy table: replicate (default, Bowen & Liu's: each cell repeated by its thresholded noisy count, "
            "so the row count is the noisy total) or redraw (n records from the normalised table: n rows, but a second layer of "
            "multinomial noise, about double the variance of a count at large ε, and under add/remove a share of ε for n)",
        ),
        Option(
            "total_share",
            total_share_option,
            "share of ε for the noisy total n under add/remove with records=redraw (default 0.1)",
        ),
    )

    def plan(self, n: int | None, domain: Domain) -> Plan:
        check_cells(domain)
        post = self.settings.get("post", "threshold")
        if post == "raw" and self.release == "records":
            raise DipsyError(
                "post=raw keeps negative counts, which records cannot have", "use post=threshold, or --release table"
            )
        redraw = self.release == "records" and self.settings.get("records", "replicate") == "redraw"
        epsilon = to_fraction(self.budget.epsilon)
        add_remove = self.relation == ADD_REMOVE
        sensitivity = 1 if add_remove else 2
        measurements = []
        if add_remove and redraw:
            share = to_fraction(self.settings.get("total_share", 0.1))
            total = DiscreteLaplace.for_epsilon(epsilon * share)
            measurements.append(
                Measurement(f"{self.name}: noisy total n, discrete Laplace scale {total.scale}", Total(), total, self.relation)
            )
            epsilon *= 1 - share
        noise = DiscreteLaplace.for_epsilon(epsilon, sensitivity)
        measurements.insert(
            0,
            Measurement(
                f"{self.name}: noisy table, discrete Laplace scale {noise.scale} (sensitivity {sensitivity})",
                Table(domain.names),
                noise,
                self.relation,
            ),
        )
        mechanism = (
            f"Laplace sanitizer (Barak et al. 2007): exact discrete Laplace noise of scale {sensitivity}/epsilon on every cell "
            "of the full cross-tabulation of the released columns, then post-processing"
        )
        params: dict[str, Any] = {
            "sensitivity": sensitivity,
            "cells": domain.cells(),
            "noise": {
                **noise.describe(),
                "post_processing": "negative counts set to 0" if post == "threshold" else "none (raw noisy counts)",
            },
        }
        if self.release == "records":
            params["records"] = (
                "redraw: n records from Multinomial(n, normalised thresholded noisy table); multinomial noise on top of the Laplace noise"
                if redraw
                else "replicate: each cell repeated by its thresholded noisy count; the number of rows is their sum, not n"
            )
        replicate = self.release == "records" and not redraw
        if not (add_remove or replicate):
            params["n"] = n
        composition = "sequential composition: noisy table, then noisy total" if len(measurements) > 1 else "one noisy table"
        public = self.public(None if replicate else n)
        return Plan(tuple(measurements), self.relation, public, mechanism, composition, params)

    def fit(self, session: Session, plan: Plan) -> SanitizerModel:
        table, *total = (session.measure(m) for m in plan.measurements)
        redraw = self.release == "records" and self.settings.get("records", "replicate") == "redraw"
        n = (max(int(total[0][0]), 0) if total else plan.parameters.get("n")) if redraw else None
        return SanitizerModel(
            plan.measurements[0].query_as(Table).columns,
            session.domain.shape(),
            (table,),
            n,
            self.settings.get("post", "threshold"),
            redraw,
        )


@dataclass(frozen=True, eq=False)
class SanitizerModel(CountModel):
    """The noisy table; for ``records=redraw`` also the public (substitute) or noisy (add/remove) total."""

    n: int | None
    post: str
    redraw: bool = False

    def table(self, k: int, rand: Randomness) -> np.ndarray:
        noisy = self.outputs[k]
        return np.maximum(noisy, 0) if self.post == "threshold" else noisy

    def counts(self, k: int, rand: Randomness) -> np.ndarray:
        """The record counts: the thresholded noisy table itself (``replicate``), or a multinomial redraw of ``n``."""
        table = np.maximum(self.outputs[k], 0)
        if not self.redraw:
            return table
        total = table.sum()
        p = table / total if total > 0 else np.full(table.size, 1 / table.size)
        if self.n is None:
            raise DipsyError(
                "this model was fitted without n: it cannot redraw n records",
                "plan it with --release records --option records=redraw",
            )
        return rand.numpy.multinomial(self.n, p)
