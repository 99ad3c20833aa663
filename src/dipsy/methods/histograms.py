r"""Perturbed and smoothed histograms for numeric columns (Wasserman & Zhou 2010; Bowen & Liu, S-003 §3.1.2).

``METHODS.md`` §2.1 (c)–(e) and §2.3 study 2. Both methods start from the histogram density
estimator (Scott 2015; Bowen & Liu eq. 3) over the cells ``B_1 … B_K`` of the released columns,

    f^(x) = Σ_k (n_k / n) · 1{x ∈ B_k} / μ(B_k)                                  (eq. 3)

and release draws from a differentially private version of it. A cell is a product of one bin (or
integer, or category) per column; ``μ`` is the product of the columns' base measures — length for a
numeric column, counting for an integer or categorical one — so ``μ(B_k)`` is the bin width ``h^p`` of
eq. 3 when the bins are equal hypercubes. Below, ``v_k = μ(B_k)/μ(X)`` is cell ``k``'s share of the
box ``X`` (the product of the public bounds): ``1/K`` for ``K`` equal cells.

Sampling
--------
Both densities are piecewise uniform, so a record is drawn by picking a cell by its probability and
then a point uniformly inside it (Bowen & Liu §3.1.2). The models draw the cells; the codec's decode
(:func:`dipsy.domain.codec.decode_column`) draws the point — uniformly inside a numeric bin, uniformly
over the whole numbers of an integer bin — which is exactly the second step.

Bins
----
The cells come from the public domain (design rule 1): every released column needs bins, or must be
integer or categorical. Option ``bins=K`` replaces the bins of every *numeric* column by ``K``
equal-width bins over its public bounds; that is data-independent and costs nothing. Sizes are
refused from what is declared, before anything is allocated (:func:`cells_of`): ``K`` above
:data:`~dipsy.domain.MAX_CODES` (10⁶, as for a column of the domain file), more than
:data:`MAX_CELLS` = 2²⁶ cells, or more than :data:`MAX_STORED` = 2²⁸ noisy counts over the
perturbed histogram's sets (each set keeps its own vector). Scott's rule ``h = 3.49 s n^(-1/3)``,
which Bowen & Liu use in study 2, is **not** offered: it reads the sample standard deviation ``s``
off the confidential data, so it would need a DP estimate of the spread (and a share of ε) that the
published method does not account for.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..domain import MAX_CODES, Column, Domain, decode
from ..domain.limits import too_many_codes
from ..errors import DipsyError, DomainError
from ..privacy import PureDP
from ..privacy.loss import PrivacyLoss, categorical
from ..privacy.measurement import DiscreteLaplace, Measurement, Mechanism, Table, Total
from ..privacy.relation import ADD_REMOVE, SUBSTITUTE
from ..privacy.rng import Randomness
from ..privacy.samplers import to_fraction
from ..privacy.session import Session
from .base import CHUNK_ROWS, Option, Plan, Synthesizer, whole
from .counts import CountModel
from .laplace_sanitizer import total_share_option

#: The most cells a histogram method works over: 2**26 (67 million; 512 MiB per vector of int64
#: counts or float64 masses, of which a measurement holds a few at once).
MAX_CELLS = 2**26
#: The most noisy counts the perturbed histogram keeps over all its sets (one vector per set):
#: 2**28, 2 GiB of int64.
MAX_STORED = 2**28

# -- shared: bins, engines over other bins, cell shares ---------------------------------------------------


def equal_bins(domain: Domain, k: int | None) -> Domain:
    """``domain`` with ``k`` equal-width bins over the public bounds of every numeric column (None: as is).

    >>> d = Domain((Column("x", "numeric", lower=0, upper=1, bins=(0, 0.9, 1)),))
    >>> equal_bins(d, 4)["x"].bins
    (0.0, 0.25, 0.5, 0.75, 1.0)
    """
    if k is None:
        return domain
    if k > MAX_CODES:  # before np.linspace allocates k + 1 edges
        raise too_many_codes("option bins", k, "bins", "give fewer bins, e.g. --option bins=50")
    columns = tuple(
        replace(c, bins=tuple(float(e) for e in np.linspace(*_bounds(c), k + 1))) if c.kind == "numeric" else c
        for c in domain.columns
    )
    return Domain(columns, domain.name, domain.description)


def _bounds(column: Column) -> tuple[float, float]:
    """A numeric or integer column's public bounds, as declared (the domain requires both)."""
    assert column.lower is not None and column.upper is not None, "Column checks every non-categorical column's bounds"
    return column.lower, column.upper


def cells_of(domain: Domain, k: int | None, sets: int = 1) -> Domain:
    """The cells a histogram counts: ``domain`` re-binned by option ``bins``.

    Refused from the declared sizes only (Python integers; nothing is allocated, not even the
    bins' edges) when a column cannot be cut into cells (numeric without bins and no ``k``), ``k``
    passes :data:`~dipsy.domain.MAX_CODES`, the cells pass :data:`MAX_CELLS`, or ``sets`` vectors
    of them pass :data:`MAX_STORED`.

    >>> d = Domain((Column("x", "numeric", lower=0, upper=1), Column("y", "numeric", lower=0, upper=1)))
    >>> cells_of(d, 10).cells()
    100
    >>> cells_of(d, 10_000)
    Traceback (most recent call last):
    ...
    dipsy.errors.DomainError: the histogram of x × y has 100,000,000 cells (10,000 × 10,000), more than the 67,108,864 it may have; use fewer bins (option bins=K, or coarser bins in the domain file) or fewer columns (--columns)
    """
    if k is not None and k > MAX_CODES:
        raise too_many_codes("option bins", k, "bins", "give fewer bins, e.g. --option bins=50")
    sizes = [k + c.n_states if k is not None and c.kind == "numeric" else domain.shape([c.name])[0] for c in domain.columns]
    cells = math.prod(sizes)
    if cells > MAX_CELLS:
        raise DomainError(
            f"the histogram of {' × '.join(domain.names)} has {cells:,} cells ({' × '.join(f'{s:,}' for s in sizes)}), "
            f"more than the {MAX_CELLS:,} it may have",
            "use fewer bins (option bins=K, or coarser bins in the domain file) or fewer columns (--columns)",
        )
    if cells * sets > MAX_STORED:
        raise DomainError(
            f"{sets} sets of {cells:,} noisy cell counts each are {cells * sets:,} counts, more than the "
            f"{MAX_STORED:,} a release may hold",
            "use fewer sets, or fewer bins (option bins=K)",
        )
    return equal_bins(domain, k)


def table_of(cells: Domain, domain: Domain) -> Table:
    """The query counting ``cells``: over the engine's own bins, or re-binned."""
    return Table(cells.names, None if cells == domain else cells)


def column_shares(column: Column) -> np.ndarray:
    """Each code's share ``μ(bin)/μ(column)`` of the column's base measure.

    Length for a numeric column; the number of whole numbers for an integer one (the codec decodes
    uniformly over them); one per category for a categorical one.

    >>> column_shares(Column("x", "numeric", lower=0, upper=10, bins=(0, 1, 10))).tolist()
    [0.1, 0.9]
    >>> column_shares(Column("k", "integer", lower=0, upper=9, bins=(0, 2.5, 9))).tolist()
    [0.3, 0.7]

    A column with missing states is refused: a state has no length or count of whole numbers,
    and the smoothed histogram's privacy (its ``v_min``) is computed from these shares.
    """
    column.refuse_missing(
        "the smoothed histogram (its cells' shares of the box, from which its privacy is computed)",
        "the smoothed histogram does not yet synthesize missing states: leave the column out (--columns), use "
        "perturbed-histogram, or drop missing: and pass --on-invalid drop",
    )
    if column.is_categorical:
        assert column.categories is not None, "Column checks every categorical column's categories"
        return np.full(len(column.categories), 1 / len(column.categories))
    lower, upper = _bounds(column)
    if column.kind == "integer":
        if column.bins is None:
            size = int(upper) - int(lower) + 1
            return np.full(size, 1 / size)
        low, high = column.integer_bin_ranges()
        return (high - low + 1) / (int(upper) - int(lower) + 1)
    edges = np.asarray(column.bins, dtype=float)
    return np.diff(edges) / (upper - lower)


def cell_shares(domain: Domain) -> np.ndarray:
    """``v_k = μ(B_k)/μ(X)`` for every cell (flat, C order): the product of the columns' shares."""
    return reduce(np.multiply.outer, [column_shares(c) for c in domain.columns]).ravel()


def smallest_share(domain: Domain) -> float:
    """``v_min``: the smallest cell's share of the box, the product of each column's smallest share."""
    return math.prod(float(column_shares(c).min()) for c in domain.columns)


def _bins_used(domain: Domain) -> dict[str, list[float]]:
    return {c.name: list(c.bins) for c in domain.columns if c.bins is not None}


def _records(codes: dict[str, np.ndarray], domain: Domain | None, rand: Randomness) -> dict[str, np.ndarray] | pd.DataFrame:
    """Cells as the caller decodes them (its own bins), or records decoded here against the bins
    actually used (``bins=K``), which the caller does not know."""
    return codes if domain is None else decode(codes, domain, rand.numpy)


# -- perturbed histogram -------------------------------------------------------------------------------------


class PerturbedHistogram(Synthesizer):
    r"""Perturbed histogram (Wasserman & Zhou 2010; Bowen & Liu eq. 4); ε-DP, m sets of ε/m.

    Release (one set)
    -----------------
    1. Count the records in every cell: ``n_k`` (eq. 3).
    2. ``ñ_k = n_k + e_k`` with exact discrete Laplace noise, ``P(e_k = z) ∝ exp(-|z| ε_set/Δ)``
       (a :class:`~dipsy.privacy.measurement.DiscreteLaplace` measurement of the bin counts); counts
       are integers, so integer noise loses nothing and escapes the floating-point attack (Mironov 2012).
    3. Negative counts to 0 (Barak et al. 2007): ``p̃_k = max(ñ_k, 0)/Σ_j max(ñ_j, 0)``, so the
       density is ``f̃(x) = Σ_k p̃_k 1{x ∈ B_k}/μ(B_k)`` (eq. 4); uniform over the cells if every
       noisy count is 0.
    4. ``n`` records: cells from ``Multinomial(n; p̃)``, each decoded uniformly inside its bins.

    ``m`` sets (``--sets``; Bowen & Liu release 10) each repeat steps 2–4 with their own
    measurements (their own noise) and ``ε_set = ε/m``; steps 3–4 are post-processing of the set's
    noisy counts, in :meth:`PerturbedHistogramModel.sample`. f̃ is random, so the spread between
    sets carries the noise's uncertainty into the combining rules (Bowen & Liu §3.1.2).

    Privacy
    -------
    Definition ε-DP. The cell counts have L1 sensitivity ``Δ = 1`` under add/remove one record
    (Bowen & Liu's choice, the default here: one count moves by one) and ``Δ = 2`` under
    substitution (one count down, another up). Discrete Laplace noise of scale ``Δ/ε`` on an
    integer vector of L1 sensitivity ``Δ`` is ε-DP (Ghosh, Roughgarden & Sundararajan 2009; the
    noise pmfs at ``z`` and ``z + d`` differ by ``exp(|d| ε/Δ)`` and the ``|d|`` add up to at most
    ``Δ``); steps 3–4 are post-processing. Sets use independent noise, so m sets of ``ε/m`` are
    ε-DP by sequential composition.

    What is public: the domain (with its bins). Under substitution ``n`` is public too. Under
    add/remove ``n`` is not (the plan never receives it), and each set measures it as a noisy total
    (sensitivity 1) with discrete Laplace noise of scale ``1/ε_n``, ``ε_n = total_share · ε_set``
    (default share 0.1), the table getting the rest — sequential composition inside the set, as the
    Laplace sanitizer does. A set whose noisy total comes out ``<= 0`` has no records (its
    measured size is nothing; post-processing, so nothing fails and nothing more is spent).

    How it differs from the Laplace sanitizer
    -----------------------------------------
    The noise (a :class:`~dipsy.privacy.measurement.DiscreteLaplace` measurement per set),
    thresholding and multinomial draw are the sanitizer's. The differences:
    m sets, each with fresh noise and ``ε/m`` (the sanitizer releases one); cells are the bins of
    numeric columns, decoded uniformly inside them (option ``bins=K`` re-bins); add/remove is the
    default neighbouring (the sanitizer's is substitution); and records only (a noisy table is the
    sanitizer's ``--release table``).
    """

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "perturbed-histogram"
    summary = "Exact discrete Laplace noise on the counts of the bins, negatives to 0, records uniform inside bins (Wasserman & Zhou 2010); ε-DP, m sets of ε/m"
    definition = "pure-DP"
    relations = (ADD_REMOVE, SUBSTITUTE)
    options = (
        Option(
            "bins",
            whole("bins", 1, MAX_CODES),
            "K equal-width bins over the public bounds of every numeric column, instead of the domain's",
        ),
        Option("total_share", total_share_option, "share of each set's ε for its noisy total n under add/remove (default 0.1)"),
    )

    def plan(self, n: int | None, domain: Domain) -> Plan:
        self.require_rows(n)
        cells = cells_of(domain, self.settings.get("bins"), self.sets)
        eps_set = to_fraction(self.budget.epsilon) / self.sets
        add_remove = self.relation == ADD_REMOVE
        sensitivity = 1 if add_remove else 2
        eps_table, eps_total = eps_set, None
        if add_remove:
            share = to_fraction(self.settings.get("total_share", 0.1))
            eps_total, eps_table = eps_set * share, eps_set * (1 - share)
        noise = DiscreteLaplace.for_epsilon(eps_table, sensitivity)
        query = table_of(cells, domain)
        measurements = []
        for k in range(1, self.sets + 1):
            measurements.append(
                Measurement(
                    f"{self.name}: set {k} of {self.sets}, noisy bin counts, discrete Laplace scale "
                    f"{noise.scale} (sensitivity {sensitivity})",
                    query,
                    noise,
                    self.relation,
                    self.set_index(k - 1),
                )
            )
            if eps_total is not None:
                total = DiscreteLaplace.for_epsilon(eps_total)
                measurements.append(
                    Measurement(
                        f"{self.name}: set {k} of {self.sets}, noisy total n, discrete Laplace scale {total.scale}",
                        Total(),
                        total,
                        self.relation,
                        self.set_index(k - 1),
                    )
                )
        mechanism = (
            f"perturbed histogram (Wasserman & Zhou 2010; Bowen & Liu 2016 eq. 4): exact discrete Laplace noise of scale "
            f"{sensitivity}/epsilon_set on every cell count of the released columns' bins, negatives to 0, "
            "records drawn by cell and uniformly inside it" + ("; n measured per set as a noisy total" if add_remove else "")
        )
        described = {
            **noise.describe(),
            "distribution": noise.describe()["distribution"] + ", fresh for every set",
            "post_processing": "negative counts set to 0, then n records from Multinomial(n; normalised counts), uniform inside their bins",
        }
        params: dict[str, Any] = {
            "sensitivity": sensitivity,
            "noise": described,
            "cells": cells.cells(),
            "bins": _bins_used(cells),
        }
        if not add_remove:
            params["n"] = n
        return Plan(tuple(measurements), self.relation, self.public(n), mechanism, self.composition(), params)

    def fit(self, session: Session, plan: Plan) -> PerturbedHistogramModel:
        outputs = [session.measure(m) for m in plan.measurements]
        query = plan.measurements[0].query_as(Table)
        cells = query.domain or session.domain
        if self.relation == ADD_REMOVE:  # (table, total) per set; a noisy total below 0 releases no records
            tables, totals = outputs[0::2], tuple(max(int(t[0]), 0) for t in outputs[1::2])
        else:
            tables, totals = outputs, (plan.parameters["n"],) * self.sets
        return PerturbedHistogramModel(cells.names, cells.shape(), tuple(tables), totals, query.domain)


@dataclass(frozen=True, eq=False)
class PerturbedHistogramModel(CountModel):
    """Each set's noisy bin counts and its n (public, or its own noisy total); records decoded
    against the bins actually used (``decode_domain``, when ``bins=K`` re-binned)."""

    totals: tuple[int, ...]
    decode_domain: Domain | None = None

    def counts(self, k: int, rand: Randomness) -> np.ndarray:
        table = np.maximum(self.outputs[k], 0)
        total = table.sum()
        p = table / total if total > 0 else np.full(table.size, 1 / table.size)
        return rand.numpy.multinomial(self.totals[k], p)

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray] | pd.DataFrame:
        return _joined(list(self.chunks(k, rand)))

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray] | pd.DataFrame]:
        # Each chunk decoded here against the bins used (the release path decodes codes against
        # the domain's own bins, which bins=K replaced: a numeric column without bins has none).
        return (_records(part, self.decode_domain, rand) for part in super().chunks(k, rand, rows))


# -- smoothed histogram ---------------------------------------------------------------------------------------


def least_delta(n: int, epsilon: float, v_min: float) -> float:
    r"""The least mixing weight δ that makes ``n`` draws from the smoothed histogram ε-DP.

    ``δ* = 1 / (1 + n v_min (e^{ε/n} - 1))``, derived in :class:`SmoothedHistogram`; with ``K`` equal
    cells (``v_min = 1/K``) it is ``K/(K + n(e^{ε/n} - 1))``, a reconstruction of Bowen & Liu's eq. 6
    (the equation's text is lost from the source, S-003; METHODS.md §2.1(e) restates it from Wasserman
    & Zhou's condition and marks it [R]; the derivation in :class:`SmoothedHistogram` stands on its
    own). The float result is
    nudged up (by ulps) until :func:`smoothed_epsilon` ``<= ε`` holds in floating point too.

    >>> round(least_delta(100, 1.0, 1 / 10), 6)   # K = 10: 10/(10 + 100(e^0.01 - 1)) (eq. 6, reconstructed)
    0.908676
    """
    delta = 1 / (1 + n * v_min * math.expm1(epsilon / n))
    while delta < 1 and smoothed_epsilon(n, delta, v_min) > epsilon:
        delta = math.nextafter(delta, 1.0)
    return delta


def smoothed_epsilon(n: int, delta: float, v_min: float) -> float:
    r"""The privacy map of ``n`` draws from the smoothed histogram at weight ``δ``:
    ``ε(δ) = n log(1 + (1 - δ)/(n δ v_min))``, derived (and shown attained) in :class:`SmoothedHistogram`.

    >>> smoothed_epsilon(5, 1.0, 0.1)
    0.0
    >>> round(smoothed_epsilon(100, least_delta(100, 1.0, 0.1), 0.1), 9)
    1.0
    """
    return n * math.log1p((1 - delta) / (n * delta * v_min))


@dataclass(frozen=True)
class SmoothedDraw(Mechanism):
    r"""``n`` draws from the smoothed histogram over ``cells``: the smoothed histogram's measurement.

    The answer is the exact cell counts ``n_k`` (they never leave the measurement); the release is
    the drawn cells' counts ``c ~ Multinomial(n; p)``, ``p_k = (1 - δ) n_k/n + δ v_k`` (eq. 5,
    :meth:`masses`). The privacy map is :func:`smoothed_epsilon` at ``δ``; as
    :class:`~dipsy.privacy.measurement.PosteriorDraw` does, the constructor refuses a ``δ`` whose map
    exceeds the ``epsilon`` it states, so a plan cannot state less than its draw costs.
    :meth:`weakened` shrinks ``δ`` by ``factor`` (the audit's broken variant, which keeps the
    stated ε).
    """

    epsilon: float
    delta: float
    n: int
    cells: Domain
    exact: ClassVar[bool] = False  # NumPy's floating-point multinomial

    def __post_init__(self) -> None:
        if not 0 < self.delta <= 1 or self.bound(self.delta) > self.epsilon * (1 + 1e-9):
            raise ValueError(
                f"smoothed histogram: delta = {self.delta:g} gives ε = {self.bound(self.delta):g}, "
                f"more than the {self.epsilon:g} stated"
            )

    @property
    def v_min(self) -> float:
        return smallest_share(self.cells)

    def bound(self, delta: float) -> float:
        """The exact worst-case log ratio of the release at weight ``delta``."""
        return smoothed_epsilon(self.n, delta, self.v_min)

    @property
    def cost(self) -> PureDP:
        return PureDP(self.epsilon)

    def masses(self, counts: np.ndarray) -> np.ndarray:
        """The smoothed histogram's cell masses ``p_k = (1 - δ) n_k/n + δ v_k`` (eq. 5, cell by cell)."""
        counts = np.asarray(counts, dtype=np.int64)
        p = (1 - self.delta) * counts / max(int(counts.sum()), 1) + self.delta * cell_shares(self.cells)
        return p / p.sum()

    def randomise(self, answer: Any, rand: Randomness) -> np.ndarray:
        counts = np.asarray(answer, dtype=np.int64)
        if int(counts.sum()) != self.n:  # n is public under substitution: the map holds for the planned n only
            raise ValueError(f"the smoothed histogram was planned for n = {self.n} rows; the data have another number")
        return rand.numpy.multinomial(self.n, self.masses(counts))

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "cells of n draws from (1 - delta) * histogram + delta * uniform on the box: "
            "Multinomial(n; (1 - delta) n_k / n + delta v_k), v_k cell k's share of the box",
            "prior": "the uniform density on the box of the public bounds, mixed in with weight delta",
            "delta": self.delta,
            "n": self.n,
            "v_min": self.v_min,
            "privacy map": "epsilon = n log(1 + (1 - delta) / (n delta v_min)), derived in dipsy.methods.histograms",
            "draws": "NumPy floating-point multinomial",
        }

    def weakened(self, factor: float) -> SmoothedDraw:
        # bypasses the check on purpose: the broken variant states a cost it does not have
        broken = object.__new__(SmoothedDraw)
        for f in ("epsilon", "n", "cells"):
            object.__setattr__(broken, f, getattr(self, f))
        object.__setattr__(broken, "delta", min(1.0, self.delta * factor))
        return broken

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss:
        """Exact: the counts of ``n`` independent draws from :meth:`masses` are sufficient for them
        (the likelihood ratio of the draws is a function of the counts), so their loss is that of
        ``n`` independent :func:`~dipsy.privacy.loss.categorical` draws: ``n max_k |log p_k/p'_k|`` in ε."""
        return PrivacyLoss((categorical(self.masses(a), self.masses(b), self.n),))


def _delta(value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not 0 < x <= 1:
        raise DipsyError(f"option delta must lie in (0, 1], got {value!r}", "give a weight such as delta=0.5, or leave it out")
    return x


class SmoothedHistogram(Synthesizer):
    r"""Smoothed histogram (Wasserman & Zhou 2010, on a general box as in Bowen & Liu eqs. 5–6); ε-DP, one set.

    Release
    -------
    The histogram (eq. 3) mixed with the uniform density on the box ``X`` of the public bounds,

        f*(x) = (1 - δ) f^(x) + δ / μ(X)                                            (eq. 5)

    and ``k = n`` independent draws from it. On cell ``B_k``, ``f*`` is uniform with mass
    ``p_k = (1 - δ) n_k/n + δ v_k``, so the draws are made exactly as cells from
    ``Multinomial(n; p)`` — that draw is the release's one measurement (:class:`SmoothedDraw`) —
    each then decoded uniformly inside its bins (post-processing). One set: given ε, ``δ`` and
    hence ``f*`` are fixed, so further sets would add no uncertainty (Bowen & Liu §3.1.2).

    Privacy (a derivation for unequal bins; the reconstructed eq. 6 is the equal-bin case)
    --------------------------------------------------------------------------------------
    Definition ε-DP; substitution neighbours, ``n`` public (Wasserman & Zhou's setting). Let ``D'``
    move one record from cell ``a`` to cell ``b ≠ a``: ``n'_a = n_a - 1``, ``n'_b = n_b + 1``. The
    density of the released sample ``Z = (Z_1 … Z_n)`` is ``Π_i f*(Z_i) = Π_k (p_k/μ(B_k))^{c_k}``
    with ``c_k = #{i: Z_i ∈ B_k}``, so

        f*_D(Z) / f*_D'(Z) = (p_a/p'_a)^{c_a} · (p_b/p'_b)^{c_b},

    every other cell cancelling. ``p_b/p'_b < 1``, and

        p_a/p'_a = 1 + ((1-δ)/n) / ((1-δ)(n_a - 1)/n + δ v_a) <= 1 + (1-δ)/(n δ v_a)
                 <= R := 1 + (1-δ)/(n δ v_min),

    ``v_min`` the smallest cell's share of the box. Hence the ratio is at most ``R^{c_a} <= R^n``,
    and the same bound holds for ``D'/D`` (the relation is symmetric): ``n`` draws are ε-DP when
    ``n log R <= ε`` (:func:`smoothed_epsilon`, :class:`SmoothedDraw`'s privacy map), i.e.

        δ >= δ* = 1 / (1 + n v_min (e^{ε/n} - 1)).

    The bound is attained: with ``n_a = 1`` in the smallest cell, ``D'`` moving that record away
    (``p'_a = δ v_a``) and every draw in ``B_a``, the ratio is exactly ``R^n``; so below ``δ*`` the
    release is not ε-DP, and ``δ*`` is the least weight (the default; option ``delta`` may raise it,
    never lower it; :class:`SmoothedDraw` refuses a weight whose map exceeds ε). With ``K`` equal cells ``v_min = 1/K`` and ``δ* = K/(K + n(e^{ε/n} - 1))``
    — Bowen & Liu's eq. 6 as reconstructed (its printed form is lost from the source, S-003; METHODS.md
    §2.1(e) [R]), which this derivation confirms for equal cells; on equal cells the method is then the DP-prior synthesizer with ``a = 1/(e^{ε/n} - 1)``
    (``δ = K a/(n + K a)``). Unequal bins pay for their smallest cell: a narrow bin makes ``v_min``
    small and ``δ*`` close to 1. As ``n`` grows, ``n(e^{ε/n} - 1) → ε`` and ``δ* → 1/(1 + ε v_min)``:
    the release tends to the uniform, which is why Bowen & Liu found it worse for larger ``n``.
    ``tests/test_histograms.py`` checks the bound by enumeration on small unequal grids.

    The cell draw uses NumPy's floating-point multinomial, which approximates ``Multinomial(n; p)``
    (the caveat of the Dirichlet-multinomial module applies).
    """

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "smoothed-histogram"
    summary = "Histogram mixed with the uniform on the public box, δ the least weight for ε-DP, n draws (Wasserman & Zhou 2010); ε-DP, one set, n public"
    definition = "pure-DP"
    multiple_sets = False
    options = (
        Option(
            "bins",
            whole("bins", 1, MAX_CODES),
            "K equal-width bins over the public bounds of every numeric column, instead of the domain's",
        ),
        Option("delta", _delta, "weight of the uniform; default and least value 1/(1 + n v_min (e^(ε/n) - 1))"),
    )

    def plan(self, n: int | None, domain: Domain) -> Plan:
        self.require_rows(n)
        if n is None:
            raise DipsyError(
                f"{self.name} treats n as public and was planned without it", "plan it under substitution, with n given"
            )
        cells = cells_of(domain, self.settings.get("bins"))
        v_min = smallest_share(cells)
        least = least_delta(n, self.budget.epsilon, v_min)
        delta = self.at_least("delta", least, "1/(1 + n v_min (e^(ε/n) - 1))")
        mechanism = (
            "smoothed histogram (Wasserman & Zhou 2010; Bowen & Liu 2016 eqs. 5-6): n draws from (1 - delta) * histogram + "
            "delta * uniform on the box of the public bounds, delta >= 1/(1 + n v_min (exp(epsilon/n) - 1)) with v_min the "
            "smallest cell's share of the box (derived in dipsy.methods.histograms)"
        )
        draw = SmoothedDraw(self.budget.epsilon, delta, n, cells)
        m = Measurement(
            f"{self.name}: n draws from the smoothed histogram, delta = {delta:.6g}", table_of(cells, domain), draw, self.relation
        )
        params = {"delta": delta, "least_delta": least, "v_min": v_min, "n": n, "cells": cells.cells(), "bins": _bins_used(cells)}
        return Plan((m,), self.relation, self.public(n), mechanism, self.composition(), params)

    def fit(self, session: Session, plan: Plan) -> SmoothedHistogramModel:
        m = plan.measurements[0]
        query = m.query_as(Table)
        cells = query.domain or session.domain
        return SmoothedHistogramModel(cells.names, cells.shape(), (session.measure(m),), query.domain)


@dataclass(frozen=True, eq=False)
class SmoothedHistogramModel(CountModel):
    """The drawn cells of the smoothed histogram (the measurement's output); records decoded
    against the bins actually used."""

    decode_domain: Domain | None = None

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray] | pd.DataFrame:
        return _joined(list(self.chunks(k, rand)))

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray] | pd.DataFrame]:
        return (_records(part, self.decode_domain, rand) for part in super().chunks(k, rand, rows))


def _joined(parts: list[dict[str, np.ndarray] | pd.DataFrame]) -> dict[str, np.ndarray] | pd.DataFrame:
    """A set from its chunks: codes per column, or records."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, pd.DataFrame) for p in parts):
        return pd.concat(parts, ignore_index=True)
    dicts = [p for p in parts if isinstance(p, dict)]
    return {c: np.concatenate([p[c] for p in dicts]) for c in dicts[0]}


__all__ = [
    "PerturbedHistogram",
    "SmoothedHistogram",
    "SmoothedDraw",
    "least_delta",
    "smoothed_epsilon",
    "equal_bins",
    "cells_of",
    "cell_shares",
    "smallest_share",
    "table_of",
    "MAX_CELLS",
    "MAX_STORED",
]
