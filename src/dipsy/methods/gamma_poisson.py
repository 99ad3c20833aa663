r"""Gamma-Poisson synthesizer for counts with known exposures (after Quick 2019, arXiv:1906.00455).

``METHODS.md`` §1.2. Events (e.g. deaths) are the records; each falls in a cell ``i`` (e.g. a
county) whose exposure ``E_i`` (e.g. its population) is public.

Model
-----
    y_i | lambda_i ~ Poisson(E_i lambda_i),     lambda_i ~ Gamma(a_i, b_i)   (shape, rate),
    lambda_i | y  ~ Gamma(y_i + a_i, E_i + b_i),
    synthetic counts y*_i | lambda* ~ Poisson(E_i lambda*_i).

Here the prior is centred on a public rate ``r`` (events per unit of exposure) with strength ``c``:
``a_i = c r E_i`` and ``b_i = c E_i`` (prior mean ``a_i/b_i = r`` in every cell, prior weight
proportional to exposure, which is how the model "accommodates heterogeneity in population
sizes"). Defaults: ``r = n / sum(E)`` (public: ``n`` is) and the least ``c`` below.

Privacy (a derivation; Quick's theorem itself was not recovered, METHODS.md [NR])
------------------------------------------------------------------------------------
Unconditionally the release is not ε-DP for any finite ε: ``y*_i`` is negative binomial
``NB(y_i + a_i, q_i)`` with ``q_i = (E_i + b_i)/(2E_i + b_i)``, and for neighbours that move one
event out of cell ``i`` the ratio ``p(y* | y)/p(y* | x) = (y_i + a_i - 1 + y*_i)/(y_i + a_i - 1) * (1 - q_i)``
grows without bound in ``y*_i``. dipsy therefore releases the synthetic counts **conditioned on
their total** ``sum(y*) = n`` (``n`` public, neighbours move one event between cells, ``n``
fixed). Independent ``NB(r_i, q)`` with a common ``q`` conditioned on their sum are
Dirichlet-multinomial ``DM(n; r)``; with ``b_i = c E_i`` every ``q_i = (1 + c)/(2 + c)`` is the same,
so the release is exactly ``DM(n; y + a)``, i.e. ``theta* ~ Dirichlet(y + a)``,
``y* ~ Multinomial(n; theta*)`` — the normalised ``E_i lambda*_i`` are ``Dirichlet(y + a)``.
By S-000 eqs. 10–11 with cell-specific priors the log ratio is at most
``log((n + a_i)/a_i)`` for the cell ``i`` that loses the event, so the release is ε-DP iff

    min_i a_i = c r min_i E_i >= n / (e^ε - 1),   i.e.   c >= n / ((e^ε - 1) r min_i E_i).

``tests/test_count_methods.py`` checks this by enumeration from the negative-binomial product
(not from the Dirichlet-multinomial closed form): bounded by ε at the least ``c``, above ε
below it, and unbounded without the conditioning. ``m`` sets each use ε/m.

The draws are exactly the model's: ``lambda*_i ~ Gamma(y_i + a_i, E_i + b_i)``, then the counts
given their total, ``Multinomial(n; E lambda* / sum(E lambda*))``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..domain import Domain, check_cells, encode_frame
from ..errors import DipsyError
from ..privacy.budget import PureDP
from ..privacy.measurement import Measurement, PosteriorDraw, Table
from ..privacy.rng import Randomness
from ..privacy.session import Session
from .base import MAX_PRIOR, Option, Plan, Synthesizer, real
from .counts import CountModel
from .dirichlet_multinomial import TINY, log_ratio

EXPOSURE = "exposure"


def read_exposures(path: str | Path, domain: Domain) -> np.ndarray:
    """Exposures of every cell from a public CSV: the released columns and an ``exposure`` column."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise DipsyError(
            f"cannot read the exposures file {str(path)!r} ({e})", "give a CSV with the cell columns and 'exposure'"
        ) from None
    if EXPOSURE not in frame.columns:
        raise DipsyError(f"the exposures file {str(path)!r} has no column 'exposure'", "add one with each cell's exposure")
    encoded, report = encode_frame(frame, domain)
    if not report.ok:
        raise DipsyError(
            f"the exposures file does not match the domain: {report.summary()}", "list each cell once, by its category"
        )
    cells = np.ravel_multi_index(tuple(encoded[n].codes for n in domain.names), domain.shape())
    values = pd.to_numeric(frame[EXPOSURE], errors="coerce").to_numpy(dtype=float)
    exposures = np.full(domain.cells(), np.nan)
    exposures[cells] = values
    if len(np.unique(cells)) != len(cells) or not np.all(np.isfinite(exposures)) or np.any(exposures <= 0):
        raise DipsyError(
            f"the exposures file {str(path)!r} must give every cell exactly once a positive exposure",
            f"list all {domain.cells()} cells of {', '.join(domain.names)}",
        )
    return exposures


def least_strength(n: int, epsilon: float, rate: float, exposures: np.ndarray) -> float:
    """The least prior strength ``c`` that makes one set ε-DP: ``n / ((e^ε - 1) r min E)``."""
    least = n * math.exp(-epsilon) / -math.expm1(-epsilon)  # n/(e^ε − 1) without overflow
    return max(least, TINY) / (rate * float(np.min(exposures)))


class GammaPoisson(Synthesizer):
    """Gamma-Poisson synthesizer with public exposures; ε-DP given the public total ``n``."""

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "gamma-poisson"
    summary = (
        "Gamma-Poisson posterior predictive for counts with public exposures, given the total (after Quick 2019); ε-DP, n public"
    )
    definition = "pure-DP"
    releases = ("records", "table")
    options = (
        Option(
            "exposures",
            str,
            "CSV of the public exposure of every cell: the released columns and 'exposure' (required)",
            public_file=True,
        ),
        Option(
            "rate",
            real("rate", 0.0, MAX_PRIOR, open_low=True),
            "public prior rate per unit of exposure; default n / sum(exposures)",
        ),
        Option(
            "strength",
            real("strength", 0.0, MAX_PRIOR, open_low=True),
            "prior strength c (a = c·rate·E, b = c·E); default and least n/((e^(ε/m) - 1)·rate·min E)",
        ),
    )

    def plan(self, n: int | None, domain: Domain) -> Plan:
        if "exposures" not in self.settings:
            raise DipsyError(f"{self.name} needs the public exposures of the cells", "pass --option exposures=FILE.csv")
        check_cells(domain)
        self.require_rows(n)
        if n is None:
            raise DipsyError(
                f"{self.name} treats n as public and was planned without it", "plan it under substitution, with n given"
            )
        exposures = read_exposures(self.settings["exposures"], domain)
        rate = self.settings.get("rate", n / float(exposures.sum()))
        epsilon = self.budget.epsilon / self.sets
        strength = self.at_least("strength", least_strength(n, epsilon, rate, exposures), "n/((e^(ε/m) - 1)·rate·min E)")
        mechanism = (
            "Gamma-Poisson posterior predictive with public exposures E (after Quick 2019), conditioned on the public total n: "
            "lambda* ~ Gamma(y + c r E, (1 + c) E), y* ~ Multinomial(n; E lambda*/sum(E lambda*)), with "
            "min(c r E) >= n/(exp(epsilon per set) - 1) (derived in dipsy.methods.gamma_poisson)"
        )
        public = (f"n = {n} (the total count)", "the exposures of the cells", "the domain of the released columns")
        smallest = rate * float(exposures.min())
        draw = PosteriorDraw(
            "Gamma-Poisson posterior predictive given the total",
            epsilon,
            strength,
            draw=lambda y, c, rand: predictive_given_total(y, c, rate, exposures, rand),
            bound=lambda c: log_ratio(n, c * smallest),
            details=(("n", n), ("privacy map", "epsilon = log((n + c r min E)/(c r min E)), S-000 eqs. 10-11")),
        )
        query = Table(domain.names)
        draws = tuple(
            Measurement(label, query, draw, self.relation, self.set_index(k))
            for k, label in enumerate(self.per_set_labels("lambda* ~ Gamma posterior, counts given the total"))
        )
        params = {"rate": rate, "strength": strength, "min_prior_shape": strength * smallest, "n": n}
        return Plan(draws, self.relation, public, mechanism, self.composition(), params)

    def fit(self, session: Session, plan: Plan) -> CountModel:
        return CountModel(
            plan.measurements[0].query_as(Table).columns,
            session.domain.shape(),
            tuple(session.measure(m) for m in plan.measurements),
        )


def predictive_given_total(y: np.ndarray, strength: float, rate: float, exposures: np.ndarray, rand: Randomness) -> np.ndarray:
    """``lambda* ~ Gamma(y + c r E, (1 + c) E)``, then ``Multinomial(n; E lambda*/sum(E lambda*))``."""
    lam = rand.numpy.standard_gamma(y + strength * rate * exposures) / ((1 + strength) * exposures)
    mean = exposures * lam
    return rand.numpy.multinomial(int(y.sum()), mean / mean.sum())
