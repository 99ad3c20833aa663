r"""Exponential mechanism over empirical CDFs (Wasserman & Zhou 2010; Bowen & Liu, S-003 eq. 7).

``METHODS.md`` §2.1 (f). Bowen & Liu describe it and judge it computationally impractical — the
candidate set grows combinatorially with ``n`` — and do not simulate it; dipsy offers it for small
``n`` and coarse grids, enumerating the candidates exactly and refusing beyond a stated size.

Release (one set)
-----------------
For ONE numeric (or integer) column with public bounds ``[lower, upper]``:

1. A public grid ``t_0 = lower < t_1 < … < t_{G-1} = upper``: the column's bin edges, or option
   ``grid=G`` equally spaced points (whole numbers for an integer column).
2. The public candidate set: every empirical CDF of ``n`` points on the grid — every multiset of
   size ``n`` over the ``G`` grid points, ``C(n + G - 1, G - 1)`` of them (compositions of ``n``
   into ``G`` parts). A candidate is held as its cumulative counts ``c_i = n G_c(t_i)``, a
   non-decreasing path from ``c_0 >= 0`` to ``c_{G-1} = n``.
3. The utility of candidate ``c`` is minus the Kolmogorov–Smirnov distance between the original
   ECDF ``F^`` evaluated on the grid and the candidate's,
   ``u(D, c) = -max_i |F^(t_i) - G_c(t_i)| = -j(D, c)/n`` with ``j = max_i |a_i - c_i|`` an integer,
   ``a_i = #{x <= t_i}``.
4. Draw ``c`` with ``Pr(c) ∝ exp(ε u(D, c) / (2 Δ_u))`` (eq. 7), ``Δ_u = 1/n``: that is
   ``Pr(c) ∝ exp(-ε j(D, c)/2)``.
5. Release the candidate as ``n`` records: ``c_i - c_{i-1}`` records with value ``t_i``, shuffled.
   **Every synthetic value is a grid point** — the release is the chosen ECDF, a step function on
   the grid, not values spread inside bins.

``m`` sets are ``m`` independent draws with ``ε/m`` each, each its own measurement; the chosen ECDF
is random, so sets show its uncertainty (Bowen & Liu §3.1.2).

Steps 3–4 are the measurement (:class:`ExponentialChoice`): its query is the counts of the grid
cells ``{t_0}, (t_0, t_1], …`` (:func:`ecdf_cells`; their running sums are ``a_i``), and it releases
the chosen candidate's cumulative counts. Step 5 is post-processing of those
(:meth:`ExponentialECDFModel.sample`); the candidates depend only on the public ``n`` and grid.

Privacy
-------
Definition ε-DP; substitution neighbours, ``n`` public (the candidates have ``n`` points). Changing
one record moves ``a_i = #{x <= t_i}`` by at most one at every grid point, so ``|j(D, c) - j(D', c)|
<= 1`` for every candidate: ``Δ_u = 1/n``, attained (move a record across a grid point of a
candidate equal to the data's ECDF). The exponential mechanism with sensitivity ``Δ_u`` is ε-DP
(McSherry & Talwar 2007): the numerator of ``Pr(c)`` changes by at most ``e^{ε/2}`` and the
normaliser by at most ``e^{ε/2}``. ``tests/test_histograms.py`` checks the sensitivity and the
privacy loss by enumeration.

Exact sampling
--------------
Because ``ε u/(2Δ_u) = -ε j/2`` with ``j`` an integer and ``ε`` read as an exact rational
(:func:`~dipsy.privacy.samplers.to_fraction`), the draw is exact, not floating-point: propose a
candidate ``r`` uniformly (exact integers from :meth:`Randomness.below`) and accept it with
probability ``exp(-ε (j_r - j_min)/2)`` (CKS 2020 Algorithm 1, :func:`bernoulli_exp`); an accepted
proposal has ``Pr(r) ∝ exp(-ε j_r/2)`` exactly. Expected proposals: at most the number of
candidates, which the enumeration already paid for. Caveat: the running time depends on the data
(through the acceptance rate), as for any rejection sampler; dipsy does not defend against timing
side channels.

Size limit
----------
The candidates are enumerated in memory, so the method refuses (with the count and what to lower)
when there would be more than :data:`MAX_CANDIDATES` = 2·10⁶ candidates or more than
:data:`MAX_ENTRIES` = 2·10⁷ stored cumulative counts (candidates × (G - 1)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Column, Domain
from ..errors import DipsyError
from ..privacy import PureDP
from ..privacy.loss import PrivacyLoss, categorical
from ..privacy.measurement import Measurement, Mechanism, Table
from ..privacy.rng import Randomness
from ..privacy.samplers import to_fraction
from ..privacy.selection import exponential_choice
from ..privacy.session import Session
from .base import Model, Option, Plan, Synthesizer, whole

#: Most candidate ECDFs the method enumerates.
MAX_CANDIDATES = 2_000_000
#: Most cumulative counts held in memory (candidates × (grid points - 1)).
MAX_ENTRIES = 20_000_000
#: The most grid points: even one record (n = 1) has G candidates of G − 1 counts each, so a grid
#: with G (G − 1) past :data:`MAX_ENTRIES` is refused for every n (checked as the option is read,
#: before the grid itself is made: 10⁹ points would take 8 GB).
MAX_GRID = (1 + math.isqrt(1 + 4 * MAX_ENTRIES)) // 2


def number_of_candidates(n: int, points: int) -> int:
    """Multisets of ``n`` points on ``points`` grid points: ``C(n + G - 1, G - 1)``.

    >>> number_of_candidates(3, 3)
    10
    """
    return math.comb(n + points - 1, points - 1)


def grid_points(column: Column, points: int | None) -> np.ndarray:
    """The public grid: ``points`` equally spaced values over the bounds, or the bin edges.

    >>> grid_points(Column("x", "numeric", lower=0, upper=1), 3).tolist()
    [0.0, 0.5, 1.0]
    """
    where = f"column {column.name!r}"
    if points is None:
        if column.bins is None:
            raise DipsyError(f"{where} has no bins to take the grid from", "give the grid size, e.g. --option grid=5")
        grid = np.asarray(column.bins, dtype=float)
    else:
        lower, upper = _bounds(column)
        grid = np.linspace(float(lower), float(upper), points)
    if column.kind == "integer":
        if points is not None:
            grid = np.unique(np.round(grid))
            if grid.size < points:
                lower, upper = _bounds(column)
                raise DipsyError(
                    f"{where} holds only {int(upper - lower) + 1} whole numbers, fewer than grid={points}",
                    f"use grid={grid.size} or less",
                )
        elif np.any(grid != np.round(grid)):
            raise DipsyError(
                f"{where} is integer but its bin edges are not all whole numbers", "give the grid size, e.g. --option grid=5"
            )
    return grid


def _bounds(column: Column) -> tuple[float, float]:
    """A numeric or integer column's public bounds, as declared (the domain requires both)."""
    assert column.lower is not None and column.upper is not None, "Column checks every non-categorical column's bounds"
    return column.lower, column.upper


def ecdf_cells(column: Column, grid: np.ndarray) -> Column:
    """The column with one bin per grid point ``t_i``: ``{t_0}`` and ``(t_{i-1}, t_i]``.

    The codec's bins are ``[e_k, e_{k+1})``, so edges just above the grid points (the next float)
    make the cumulative bin counts exactly ``#{x <= t_i}``, the ECDF on the grid.

    >>> c = ecdf_cells(Column("x", "numeric", lower=0, upper=1), np.array([0.0, 0.5, 1.0]))
    >>> c.bins[2] > 0.5, c.bins[2] == float(np.nextafter(0.5, 1))
    (True, True)
    """
    inner = [float(np.nextafter(t, np.inf)) for t in grid[:-1]]
    lower, upper = _bounds(column)
    return replace(column, bins=(float(lower), *inner, float(upper)))


def candidate_paths(n: int, points: int) -> np.ndarray:
    """Every candidate as its cumulative counts at the first ``G - 1`` grid points.

    All non-decreasing sequences ``0 <= c_0 <= … <= c_{G-2} <= n`` in lexicographic order (the count
    at the last grid point is always ``n``), filled one column at a time in ``O(candidates × (G - 1))``
    with no Python loop over candidates.

    Let ``P_m`` be the sequences of length ``m`` in lexicographic order; there are ``C(n + m, m)``.
    In ``P_m`` the first value ``v`` comes ``C(n - v + m - 1, m - 1)`` times (the sequences of length
    ``m - 1`` over ``[v, n]``), and the rest of those rows are the sequences of ``P_{m-1}`` whose
    first value is ``>= v``: its *last* ``C(n - v + m - 1, m - 1)`` rows. So ``P_m[:, 1:]`` is
    ``P_{m-1}`` gathered at an index map, and column ``j`` of ``P_{G-1}`` is the first column of
    ``P_{G-1-j}`` gathered through ``j`` such maps.

    >>> candidate_paths(2, 3).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [2, 2]]
    """
    length = points - 1
    dtype = np.int16 if n < 2**15 else np.int32
    out = np.empty((math.comb(n + length, length), length), dtype=dtype)
    values = np.arange(n + 1)
    rows = np.arange(len(out))
    for j in range(length):
        m = length - j
        # how often each first value v comes in P_m: the sequences of length m - 1 over [v, n]
        times = np.array([math.comb(n - v + m - 1, m - 1) for v in range(n + 1)], dtype=np.int64)
        out[:, j] = np.repeat(values, times)[rows]
        if m > 1:
            # P_m[:, 1:] = P_{m-1}[index]: for first value v, the last times[v] rows of P_{m-1}
            index = np.arange(times.sum()) - np.repeat(np.cumsum(times) - times, times) + np.repeat(times[0] - times, times)
            rows = index[rows]
    return out


def ks_levels(paths: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """``j = n · KS`` of every candidate against the data's cumulative counts ``a_i = #{x <= t_i}``.

    >>> ks_levels(candidate_paths(2, 3), np.array([1, 1, 2])).tolist()
    [1, 1, 1, 0, 1, 1]
    """
    # |c - a| <= n fits the paths' dtype; the last grid point (both equal n) adds nothing.
    return np.abs(paths - cumulative[:-1].astype(paths.dtype)).max(axis=1).astype(np.int64)


@dataclass(frozen=True)
class ExponentialChoice(Mechanism):
    r"""The exponential mechanism over the ECDFs of ``n`` points on ``points`` grid points (eq. 7).

    The answer is the data's counts on the grid's cells; the release is the chosen candidate's
    cumulative counts, drawn exactly (:func:`exponential_choice`) with ``Pr(c) ∝ exp(−γ j(D, c))``,
    ``j = n · KS`` of sensitivity 1, so the privacy map is ε = 2γ (McSherry & Talwar 2007; the
    module's proof). :meth:`weakened` divides γ by ``factor``: 0.5 doubles the real loss while the
    stated cost stays (the audit's broken variant).

    The candidates depend only on the public ``n`` and grid: one mechanism serves every set's
    measurement, and enumerates them once (``cache``: public values, no part of the value).

    >>> c = ExponentialChoice(3, 2, Fraction(1, 4))
    >>> c.cost, c.weakened(0.5).cost, c.weakened(0.5).gamma
    (PureDP(epsilon=0.5), PureDP(epsilon=1.0), Fraction(1, 2))
    """

    n: int
    points: int
    gamma: Fraction

    @classmethod
    def for_epsilon(cls, n: int, points: int, epsilon: Any) -> ExponentialChoice:
        """γ = ε/2 for an ε-DP choice (sensitivity 1 of n · KS), exactly."""
        return cls(n, points, to_fraction(epsilon) / 2)

    cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def cost(self) -> PureDP:
        return PureDP(float(2 * self.gamma))

    def candidates(self) -> np.ndarray:
        """Every candidate's cumulative counts at the first ``G - 1`` grid points (public; enumerated once)."""
        if "paths" not in self.cache:
            self.cache["paths"] = candidate_paths(self.n, self.points)
        return self.cache["paths"]

    def randomise(self, answer: Any, rand: Randomness) -> np.ndarray:
        cumulative = np.cumsum(np.asarray(answer, dtype=np.int64))
        if int(cumulative[-1]) != self.n:  # n is public under substitution: the candidates have the planned n points
            raise ValueError(f"the exponential ECDF was planned for n = {self.n} rows; the data have another number")
        paths = self.candidates()
        return paths[exponential_choice(ks_levels(paths, cumulative), self.gamma, 1, rand)[0]].astype(np.int64)

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "exponential mechanism: Pr(c) proportional to exp(-gamma * n * KS(data, c))",
            "gamma": str(self.gamma),
            "candidates": number_of_candidates(self.n, self.points),
            "sensitivity": "1 (of n · KS)",
            "privacy map": "epsilon = 2 * gamma * sensitivity (McSherry & Talwar 2007)",
            "sampling": "exact: uniform proposals kept with probability exp(-gamma (j - j_min)) (CKS 2020 Algorithm 1)",
        }

    def weakened(self, factor: float) -> ExponentialChoice:
        return replace(self, gamma=self.gamma / to_fraction(factor))

    def probabilities(self, answer: Any) -> np.ndarray:
        """The exact law of the choice: ``Pr(c) ∝ exp(−γ j(D, c))`` over :meth:`candidates`, the
        levels :meth:`randomise` draws with."""
        levels = ks_levels(self.candidates(), np.cumsum(np.asarray(answer, dtype=np.int64)))
        w = np.exp(-float(self.gamma) * (levels - levels.min()))
        return w / w.sum()

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss:
        """Exact: one :func:`~dipsy.privacy.loss.categorical` factor over the candidates.

        >>> c = ExponentialChoice(1, 2, Fraction(1))        # n = 1 on two grid points: 2 candidates
        >>> c.privacy_loss([1, 0], [0, 1]).epsilon          # the KS levels swap: γ, within the map's 2γ
        1.0
        """
        return PrivacyLoss((categorical(self.probabilities(a), self.probabilities(b)),))


class ExponentialECDF(Synthesizer):
    """Exponential mechanism over the ECDFs of ``n`` points on a public grid (eq. 7); ε-DP, n public.

    >>> from dipsy.privacy import PureDP
    >>> d = Domain((Column("x", "numeric", lower=0, upper=1, bins=(0, 0.5, 1)),))
    >>> ExponentialECDF(PureDP(1.0)).plan(4, d).parameters["candidates"]
    15
    """

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "exponential-ecdf"
    summary = "Exponential mechanism over all ECDFs of n points on a public grid, KS utility (Wasserman & Zhou 2010); one column, small n; ε-DP, n public"
    definition = "pure-DP"
    options = (
        Option(
            "grid",
            whole("grid", 2, MAX_GRID, 11),
            "G equally spaced grid points over the bounds, instead of the column's bin edges",
        ),
    )

    def plan(self, n: int | None, domain: Domain) -> Plan:
        if len(domain) != 1 or domain.columns[0].kind not in ("numeric", "integer"):
            raise DipsyError(
                f"{self.name} synthesizes one numeric or integer column, got {', '.join(domain.names)}",
                "choose one such column with --columns",
            )
        domain.columns[0].refuse_missing(
            f"{self.name} (an ECDF of numbers on a grid between the bounds)",
            f"{self.name} does not yet synthesize missing states: give the column bins and use perturbed-histogram, "
            "or drop missing: and pass --on-invalid drop",
        )
        self.require_rows(n)
        if n is None:
            raise DipsyError(
                f"{self.name} treats n as public and was planned without it", "plan it under substitution, with n given"
            )
        column = domain.columns[0]
        grid = grid_points(column, self.settings.get("grid"))
        points = grid.size
        candidates = number_of_candidates(n, points)
        if candidates > MAX_CANDIDATES or candidates * (points - 1) > MAX_ENTRIES:
            raise DipsyError(
                f"{self.name} would enumerate {candidates:,} candidate ECDFs (every multiset of n = {n} points on "
                f"{points} grid points), more than its limit of {MAX_CANDIDATES:,} candidates and {MAX_ENTRIES:,} stored counts",
                "lower the number of grid points (--option grid=G, or coarser bins), or use perturbed-histogram for n this large",
            )
        eps_set = to_fraction(self.budget.epsilon) / self.sets
        mechanism = (
            f"exponential mechanism (McSherry & Talwar 2007; Wasserman & Zhou 2010; Bowen & Liu 2016 eq. 7) over all "
            f"{candidates} ECDFs of n points on a public grid of {points} points, utility minus the Kolmogorov-Smirnov distance "
            "to the original ECDF on the grid, sensitivity 1/n; records are the chosen ECDF's grid points"
        )
        public = (f"n = {n} (the number of rows)", "the domain (bounds of the released column)", f"the grid of {points} points")
        choice = ExponentialChoice.for_epsilon(n, points, eps_set)
        query = Table((column.name,), Domain((ecdf_cells(column, grid),), domain.name, domain.description))
        draws = tuple(
            Measurement(label, query, choice, self.relation, self.set_index(k))
            for k, label in enumerate(self.per_set_labels(f"exponential mechanism over {candidates} ECDFs"))
        )
        params = {"grid": grid.tolist(), "candidates": candidates, "sensitivity": f"1/{n}", "n": n}
        return Plan(draws, self.relation, public, mechanism, self.composition(), params)

    def fit(self, session: Session, plan: Plan) -> ExponentialECDFModel:
        column = session.domain.columns[0]
        return ExponentialECDFModel(
            column,
            np.asarray(plan.parameters["grid"], dtype=float),
            plan.parameters["n"],
            tuple(session.measure(m) for m in plan.measurements),
        )


@dataclass(frozen=True, eq=False)
class ExponentialECDFModel(Model):
    """The chosen ECDFs (cumulative counts on the grid), one per set: what the measurements released."""

    column: Column
    grid: np.ndarray
    n: int
    outputs: tuple[np.ndarray, ...]

    @property
    def sets(self) -> int:
        return len(self.outputs)

    def sample(self, k: int, rand: Randomness) -> pd.DataFrame:
        chosen = self.outputs[k]
        counts = np.diff(np.concatenate(([0], chosen, [self.n])))  # the last grid point holds all n
        values = np.repeat(self.grid, counts)
        rand.numpy.shuffle(values)
        if self.column.kind == "integer":
            values = values.astype(np.int64)
        return pd.DataFrame({self.column.name: values})
