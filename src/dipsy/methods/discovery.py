r"""Charged DP discovery of a domain's category lists and bins, for what the steward cannot know.

A domain is public input (DESIGN rule 1): categories and bounds come from public knowledge, or
from *a DP measurement that is charged to the budget*. This module is that measurement, opt-in
(``dipsy domain discover``, :func:`dipsy.discover_domain`). It fills

- the ``categories`` of categorical/ordinal columns whose list is ``TODO``, by **DP partition
  selection** (:class:`PartitionSelection` on :class:`ValueCountsQuery`): (ε, δ)-DP;
- the ``bins`` of integer/numeric columns with declared ``lower``/``upper``, by **DP quantiles**: one
  noisy histogram on a public grid of G cells (the existing :class:`~dipsy.privacy.measurement.Table`
  and :class:`~dipsy.privacy.measurement.DiscreteLaplace`), then k − 1 edges at equal noisy mass
  (:func:`quantile_edges`, post-processing): ε-DP.

Privacy of the categories: :class:`PartitionSelection`'s docstring (the proof, both cases). It
needs each record to count for one value of the column or none, which holds because the engine
reads a record's value from its own raw value only (:func:`dipsy.engine.base.merge_raw_counts`).

Privacy of the bins: the grid is public (from the declared bounds, G and ``--log``), so the
histogram of one column on it has L1 sensitivity Δ = 1 under add/remove (one record moves one cell
by one), Δ = 2 under substitution (two cells) and θ for an individual of θ rows; discrete Laplace
noise of scale Δ/ε_j is then ε_j-DP (:class:`~dipsy.privacy.measurement.DiscreteLaplace`; Ghosh,
Roughgarden & Sundararajan 2009). Clipping at the bounds and dropping invalid rows map each record
on its own (stable transformations, McSherry 2009), and the edges are computed from the noisy
counts alone: post-processing (Dwork & Roth 2014, Prop. 2.1).

The columns compose (basic composition, Dwork & Roth 2014, Thm 3.16): column j spends (ε_j, δ_j),
by default ε_j = ε/J over the J columns discovered and δ_j = δ/J_c over the J_c category columns
(bins need no δ). Everything is planned from public inputs (:func:`plan_discovery`), reserved in
the ledger before any read, and read only inside charged measurements of a
:class:`~dipsy.privacy.session.Session` (:func:`dipsy.discovery_run.run_discovery`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain.columns import Column
from ..domain.domain import TODO, Domain
from ..domain.limits import MAX_CODES
from ..errors import DipsyError, DomainError
from ..privacy.budget import EPSILON_RANGE, ApproxDP, Budget, PureDP, of_kind, positive
from ..privacy.composition import total_as
from ..privacy.measurement import DiscreteLaplace, Measurement, Mechanism, Query, Table
from ..privacy.relation import ADD_REMOVE, Relation, group_factor, group_privacy, parse
from ..privacy.rng import Randomness
from ..privacy.samplers import discrete_laplace, to_fraction

#: The largest δ a discovery may spend. δ must be far below 1/n (each value held by one record is
#: released with probability up to δ); n is not public under add/remove, so a fixed ceiling is enforced.
MAX_DELTA = 1e-3
#: The default number of grid cells of a bins discovery.
GRID = 256
#: Relative margin by which a δ computed in floating point is rounded up (the float evaluation of
#: ``e^{-k/s}/(1+e^{-1/s})`` is off by far less: a few ulp times ``1 + k/s``).
FLOAT_MARGIN = 1e-12
METHOD = "domain-discovery"


# -- partition selection --------------------------------------------------------------------------


def tail(scale: Fraction, k: int) -> float:
    r"""``P(Z >= k)`` for the discrete Laplace ``Z`` of ``scale`` s and integer ``k >= 1``, rounded up.

    With ``q = e^{-1/s}``, ``P(Z = z) = (1 − q)/(1 + q) · q^{|z|}``
    (:func:`~dipsy.privacy.samplers.discrete_laplace_pmf`), so for ``k >= 1``
    ``P(Z >= k) = (1 − q)/(1 + q) · Σ_{z >= k} q^z = (1 − q)/(1 + q) · q^k/(1 − q) = q^k/(1 + q)``
    (a geometric series; ``tests/test_discovery.py`` checks it against the pmf).

    >>> round(tail(Fraction(1), 1), 6)  # e^-1 / (1 + e^-1)
    0.268941
    """
    if k < 1:
        raise ValueError("the closed form holds for k >= 1")
    s = Fraction(scale)
    return math.exp(-float(Fraction(k) / s)) / (1 + math.exp(-float(1 / s))) * (1 + FLOAT_MARGIN)


def threshold(scale: Fraction, delta: float) -> int:
    r"""The least integer τ >= 1 with ``P(Z >= τ) <= δ``: a value held by one record (count 1) is
    then released (``1 + Z > τ``) with probability at most δ.

    ``τ = ⌈s · ln(1/(δ(1 + q)))⌉`` from the closed form of :func:`tail`, corrected by one step
    either way against the float evaluation.

    >>> threshold(Fraction(1), 0.25), threshold(Fraction(2), 1e-6)
    (2, 27)
    """
    s = Fraction(scale)
    q = math.exp(-float(1 / s))
    k = max(1, math.ceil(float(s) * (math.log(1 / delta) - math.log1p(q))))
    while tail(s, k) > delta:
        k += 1
    while k > 1 and tail(s, k - 1) <= delta:
        k -= 1
    return k


def add_remove_steps(relation: Relation) -> int:
    """How many add/remove steps cover one ``relation`` step (1 under add/remove, 2 under
    substitution, θ for an individual of θ rows); an error for a local relation, which no number covers.

    >>> add_remove_steps(parse("substitute"))
    2
    """
    steps = group_factor(ADD_REMOVE, relation)
    if steps is None:
        raise DipsyError(
            f"a discovery cannot be private under the {relation.kind} relation (a local guarantee)",
            "use --neighbouring add-remove or substitute",
        )
    return steps


@dataclass(frozen=True)
class ValueCountsQuery(Query):
    """How many records hold each distinct raw value of ``column`` (:meth:`dipsy.engine.base.Engine.value_counts`):
    read raw, not through the domain's encoding; each record counts for exactly one value, or none
    (a missing value)."""

    column: str

    def answer(self, engine: Any) -> Any:
        return engine.value_counts(self.column)

    def describe(self) -> str:
        return f"the number of records holding each distinct value of {self.column}"


@dataclass(frozen=True)
class PartitionSelection(Mechanism):
    r"""DP partition selection: add exact discrete Laplace noise ``Z_v`` of scale ``s`` to the count
    ``c_v >= 1`` of each value ``v`` that occurs, and release the sorted set ``{v : c_v + Z_v > τ}``
    (the values only, never their counts); a value that does not occur is never released.

    Korolova, Kenthapadi, Mishra & Ntoulas 2009 (releasing search queries: noisy counts against a
    threshold); Gopi, Gulhane, Kulkarni, Shen, Shokouhi & Yekhanin 2020 ("Differentially private
    set union"); Desfontaines, Voss, Gipson & Mandayam 2022 ("Differentially private partition
    selection", whose optimal mechanism this Laplace-and-threshold one approaches for large counts).

    **Privacy** (``steps = 1``: add/remove one record, each record holding one value of the column or
    none). Let ``x' = x + {r}``, ``r`` holding ``u``; the counts agree except ``c'_u = c_u + 1``. The
    values are noised independently, so the output is the union of the independent releases of
    each value.

    - ``u`` occurs in both (``c_u >= 1``): ``u``'s release is a post-processing of ``c_u + Z_u``, the
      discrete Laplace mechanism on a count of sensitivity 1, which is ``(1/s)``-DP (Ghosh,
      Roughgarden & Sundararajan 2009; Dwork & Roth 2014, Prop. 2.1 for post-processing); the
      other values' releases are the same in both; so ``P[M(x) ∈ S] <= e^ε P[M(x') ∈ S]`` and back,
      ``ε = 1/s``, for every set ``S`` of outputs.
    - ``u`` occurs only in ``x'`` (``c_u = 0``, ``c'_u = 1``): ``M(x') = M(x) ∪ {u}`` on the event
      ``E = {1 + Z_u > τ}`` and ``M(x') ~ M(x)`` off it (``Z_u`` is independent of the rest), with
      ``P(E) = P(Z >= τ) = e^{-τ/s}/(1 + e^{-1/s}) =: δ_τ`` (:func:`tail`). Hence
      ``P[M(x') ∈ S] = P(¬E) P[M(x) ∈ S] + P(E) P[M(x) ∪ {u} ∈ S] <= P[M(x) ∈ S] + δ_τ``, and, as
      ``P(¬E) P[M(x) ∈ S] = P[M(x') ∈ S, ¬E] <= P[M(x') ∈ S]``,
      ``P[M(x) ∈ S] = P(¬E) P[M(x) ∈ S] + P(E) P[M(x) ∈ S] <= P[M(x') ∈ S] + δ_τ``: (0, δ_τ)-close both ways.

    Both cases, in both directions, give (ε, δ)-DP (Dwork & Roth 2014, Def. 2.4) with ``ε = 1/s``
    and ``δ = δ_τ <= δ`` by the choice of τ (:func:`threshold`). A relation of ``steps = k``
    add/remove steps (substitution of one record is a removal and an addition, ``k = 2``; an
    individual of θ rows, ``k = θ``) gets the group-privacy conversion of
    :func:`dipsy.privacy.relation.convert`, ``(kε, k e^{(k−1)ε} δ_τ)`` (Vadhan 2017, Lemma 2.2):
    the measurement is built for the relation of the ledger's data set, and :meth:`for_budget`
    aims each step at ``(ε/k, δ/(k e^{(k−1)ε/k}))``.

    >>> m = PartitionSelection.for_budget(Fraction(1), 1e-6, ADD_REMOVE)
    >>> m.scale, m.threshold, m.cost.epsilon
    (Fraction(1, 1), 14, 1.0)
    """

    scale: Fraction
    threshold: int
    steps: int = 1

    @classmethod
    def for_budget(cls, epsilon: Any, delta: float, relation: Relation) -> PartitionSelection:
        """The mechanism spending at most (ε, δ) under ``relation`` (ε read exactly, as a Fraction)."""
        steps = add_remove_steps(relation)
        eps_step = to_fraction(epsilon, "epsilon") / steps
        delta_step = delta / (steps * math.exp((steps - 1) * float(eps_step)))
        scale = 1 / eps_step
        return cls(scale, threshold(scale, delta_step), steps)

    @property
    def cost(self) -> ApproxDP:
        """(1/s, δ_τ) for one add/remove step, converted to ``steps`` steps by group privacy."""
        one = ApproxDP(float(1 / self.scale), tail(self.scale, self.threshold))
        return of_kind(
            group_privacy(one, self.steps), ApproxDP
        )  # = relation.convert(one, ADD_REMOVE, the measurement's relation)

    def randomise(self, answer: Any, rand: Randomness) -> tuple:
        counts = np.asarray(answer.counts, dtype=np.int64)
        noisy = counts + discrete_laplace(self.scale, counts.shape, rand)
        return tuple(v for v, y in zip(answer.values, noisy) if y > self.threshold)

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "discrete Laplace: P(e = z) proportional to exp(-|z| / scale), added to the count of each "
            "value that occurs; released: the values whose noisy count exceeds the threshold (not the counts)",
            "scale": str(self.scale),
            "scale_value": float(self.scale),
            "threshold": self.threshold,
            "tail_at_threshold": tail(self.scale, self.threshold),
            "group_steps": self.steps,
        }

    def weakened(self, factor: float) -> PartitionSelection:
        return replace(self, scale=self.scale * to_fraction(factor))


# -- bins: a grid, a noisy histogram, edges at equal noisy mass ------------------------------------


def grid_edges(column: Column, cells: int = GRID, log: bool = False) -> tuple:
    """The public grid a bins discovery counts on: ``cells`` equal widths over [lower, upper], or
    log-spaced ones (``log``): geometric when lower > 0, else equal steps of ``log(1 + x − lower)``
    (a wage or income column with zeros). An integer column's grid has integer edges (rounded,
    repeats merged: at most upper − lower + 1 cells, each holding a whole number).

    >>> grid_edges(Column("x", "integer", lower=0, upper=10), 4)
    (0, 2, 5, 8, 10)
    >>> grid_edges(Column("y", "numeric", lower=1, upper=100), 2, log=True)
    (1.0, 10.0, 100.0)
    >>> grid_edges(Column("w", "numeric", lower=0, upper=9999), 4, log=True)
    (0.0, 9.0, 99.0, 999.0, 9999.0)
    """
    lo, hi = (float(b) for b in column.bounds)
    if not log:
        edges = np.linspace(lo, hi, cells + 1)
    elif lo > 0:
        edges = np.geomspace(lo, hi, cells + 1)
    else:  # log(1 + x − lower) in equal steps: the same shape for columns that hold zeros
        edges = lo + np.expm1(np.linspace(0.0, math.log1p(hi - lo), cells + 1))
    if column.kind == "integer":
        edges = np.round(edges)
    elif log:  # 4 significant digits: readable edges, still rising (a cell spans at least a factor 1.00003)
        edges = np.asarray([float(f"{e:.4g}") for e in edges])
    edges[0], edges[-1] = lo, hi
    edges = np.unique(edges)
    return tuple(int(e) for e in edges) if column.kind == "integer" else tuple(float(e) for e in edges)


def quantile_edges(noisy: np.ndarray, grid: tuple, k: int) -> tuple:
    r"""k bins at equal noisy mass on ``grid``: post-processing of the noisy histogram only.

    ``C_i`` is the noisy mass below grid edge ``i``: the cumulative sum of the *raw* noisy counts
    (unbiased: the noise has mean 0, so it cancels on average, where counts clipped at 0 would add
    about ``E[max(e, 0)]`` to every empty cell — on a 256-cell grid and a thousand records, a
    quarter of the mass, pulling every edge toward equal spacing on the grid), kept at or above 0
    and made non-decreasing (its running maximum). Inner edge ``j`` (``j = 1 … k−1``) is the grid
    edge whose ``C_i`` is nearest to ``j/k`` of the total (ties: the lower), in integers. Repeated
    edges merge (fewer bins); the outer edges are the bounds. With no noisy mass at all, the edges
    are equally spaced on the grid.

    >>> quantile_edges(np.array([5, -2, 5, 0, 5, 5]), (0, 1, 2, 3, 4, 5, 6), 2)
    (0, 4, 6)
    """
    # The grid's cells only: a column with declared missing states has them as codes after its
    # bins, counted with noise like the cells (public to leave out: post-processing) but no mass
    # between the bounds.
    y = np.asarray(noisy, dtype=np.int64)[: len(grid) - 1]
    cells = y.size
    mass = np.maximum.accumulate(np.maximum(np.concatenate([[0], np.cumsum(y)]), 0)) * k  # C_i · k
    total = int(mass[-1]) // k
    j = np.arange(1, k, dtype=np.int64)
    if total == 0:
        inner = np.rint(j * cells / k).astype(np.int64)
    else:
        target = total * j  # (j/k · total) · k
        above = np.clip(np.searchsorted(mass, target, side="left"), 1, cells)
        nearer_below = (target - mass[above - 1]) <= (mass[above] - target)
        inner = np.where(nearer_below, above - 1, above)
    inner = np.unique(np.clip(inner, 1, cells - 1)) if cells > 1 else np.zeros(0, np.int64)
    return (grid[0], *(grid[i] for i in inner), grid[-1])


# -- the plan: public inputs only -------------------------------------------------------------------


@dataclass(frozen=True)
class BinsRequest:
    """A bins discovery of ``column`` (its declaration, with the grid as bins): ``k`` bins, ``log`` spacing."""

    column: Column
    k: int
    log: bool

    @property
    def grid(self) -> tuple:
        if self.column.bins is None:  # plan_discovery builds every request with its grid as bins
            raise DipsyError(f"the bins discovery of {self.column.name!r} has no grid", "build it with plan_discovery")
        return self.column.bins


@dataclass(frozen=True)
class DiscoveryPlan:
    """Every measurement of a discovery, fixed from the skeleton and the request before any read.

    ``categories`` and ``bins`` are the measurements (one per column); ``raw`` is the domain the
    value counts are read through (placeholder declarations: :meth:`Engine.value_counts` reads the
    raw column and never uses them; None without categories), ``grid`` that of the histograms
    (the bins columns with their grids as bins; validated before the charge; None without bins).
    """

    spec: Mapping = field(compare=False, repr=False)
    relation: Relation
    categories: tuple[Measurement, ...]
    bins: tuple[Measurement, ...]
    requests: tuple[BinsRequest, ...]
    raw: Domain | None
    grid: Domain | None

    @property
    def measurements(self) -> tuple[Measurement, ...]:
        return self.categories + self.bins

    @property
    def total(self) -> Budget:
        """The declared total (basic composition; pure ε-DP when no category is discovered)."""
        zero = ApproxDP(0.0, 0.0) if self.categories else PureDP(0.0)
        return total_as(zero, [m.cost for m in self.measurements])


#: The placeholder category of a column whose values are counted raw (never matched against data).
PLACEHOLDER = "(discovered)"


def plan_discovery(
    spec: Mapping,
    epsilon: Any,
    delta: Any = None,
    *,
    categories: Iterable[str] | None = None,
    bins: Mapping[str, int] | None = None,
    log: Iterable[str] = (),
    grid: int = GRID,
    neighbouring: str | Relation = "add-remove",
) -> DiscoveryPlan:
    """Plan the discovery of a skeleton's (``spec``, as read from its YAML) TODO categories and bins.

    Parameters
    ----------
    spec
        The skeleton, as :func:`dipsy.domain.domain.read_spec` reads it (TODOs allowed).
    epsilon, delta
        The total (ε, δ), split equally: ε over every column discovered, δ over the category columns.
        δ is required when categories are discovered, and at most :data:`MAX_DELTA`.
    categories
        The columns whose categories to discover (default: every categorical/ordinal column whose
        categories are TODO).
    bins
        ``{column: k}``: discover k bins of an integer/numeric column with declared bounds.
    log
        Columns (among ``bins``) whose grid is log-spaced (geometric, or in log(1 + x − lower) when lower <= 0).
    grid
        Cells of each bins grid.
    neighbouring
        ``"add-remove"`` (default) or ``"substitute"``: the ledger data set's relation.
    """
    columns = _columns_of(spec)
    relation = parse(neighbouring) if isinstance(neighbouring, str) else neighbouring
    bins, log = dict(bins or {}), list(log)
    todo_categories = [
        n for n, s in columns.items() if _is_todo(s.get("categories")) and s.get("kind") in ("categorical", "ordinal")
    ]
    chosen = list(dict.fromkeys(todo_categories if categories is None else categories))
    for name in chosen:
        _refuse_unless(
            name,
            columns,
            "categories",
            name in todo_categories and "labels" not in columns[name],
            "is not a categorical or ordinal column whose categories are TODO (and that has no labels)",
        )
    for name, k in bins.items():
        spec_ = columns.get(name, {})
        _refuse_unless(
            name,
            columns,
            "bins",
            spec_.get("kind") in ("integer", "numeric") and (_is_todo(spec_.get("bins")) or "bins" not in spec_),
            "is not an integer or numeric column whose bins are TODO (or, integer, absent)",
        )
        if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= min(grid, MAX_CODES):
            raise DipsyError(
                f"--bins {name}={k!r}: the number of bins must be a whole number from 2 to the grid's {grid}",
                f"e.g. --bins {name}=10",
            )
    for name in log:
        if name not in bins:
            raise DipsyError(
                f"--log {name}: {name!r} is not among the --bins columns", f"add --bins {name}=K, or leave out --log {name}"
            )
    if not chosen and not bins:
        raise DipsyError(
            "there is nothing to discover: no categorical column has categories: TODO, and no --bins was given",
            "name the columns with --categories COL and --bins COL=K",
        )
    if isinstance(grid, bool) or not isinstance(grid, int) or not 2 <= grid <= MAX_CODES:
        raise DipsyError(f"--grid must be a whole number from 2 to {MAX_CODES:,}, got {grid!r}", f"e.g. --grid {GRID}")
    _refuse_leftover_todos(columns, set(chosen), set(bins))
    eps = to_fraction(positive("epsilon", epsilon, "--epsilon"), "epsilon")
    if not EPSILON_RANGE[0] <= eps <= EPSILON_RANGE[1]:
        raise DipsyError(
            f"epsilon must lie between {EPSILON_RANGE[0]:g} and {EPSILON_RANGE[1]:g}, got {float(eps):g}",
            "pass --epsilon within that range",
        )
    if chosen:
        if delta is None:
            raise DipsyError(
                "discovering categories is (ε, δ)-DP: it needs --delta (a value held by one record is released "
                "with probability up to δ)",
                "pass --delta with e.g. 1e-8, far below 1/n",
            )
        delta = positive("delta", delta, "--delta")
        if not delta <= MAX_DELTA:
            raise DipsyError(
                f"delta must lie in (0, {MAX_DELTA:g}], got {delta:g} (each value held by a single record is "
                "released with probability up to δ, so δ must be far below 1/n)",
                "pass --delta with e.g. 1e-8",
            )
    share = eps / (len(chosen) + len(bins))
    measured = []
    for name in chosen:
        noise = PartitionSelection.for_budget(share, delta / len(chosen), relation)
        measured.append(
            Measurement(
                f"{METHOD}: categories of {name} (DP partition selection, discrete Laplace scale "
                f"{noise.scale}, threshold {noise.threshold})",
                ValueCountsQuery(name),
                noise,
                relation,
            )
        )
    requests = []
    for name, k in bins.items():
        declared = Column.from_dict(name, {key: v for key, v in columns[name].items() if key != "bins"})
        requests.append(BinsRequest(replace(declared, bins=grid_edges(declared, grid, name in log)), k, name in log))
    histograms = []
    sensitivity = add_remove_steps(relation)  # 1 under add/remove; 2 under substitution (two cells move)
    for r in requests:
        laplace = DiscreteLaplace.for_epsilon(share, sensitivity)
        histograms.append(
            Measurement(
                f"{METHOD}: bins of {r.column.name} (noisy histogram on {len(r.grid) - 1} "
                f"{'log-spaced' if r.log else 'equal'} cells, discrete Laplace scale {laplace.scale})",
                Table((r.column.name,)),
                laplace,
                relation,
            )
        )
    raw = Domain(tuple(Column(n, "categorical", categories=(PLACEHOLDER,)) for n in chosen)) if chosen else None
    grid_domain = Domain(tuple(r.column for r in requests)) if requests else None
    return DiscoveryPlan(spec, relation, tuple(measured), tuple(histograms), tuple(requests), raw, grid_domain)


def _columns_of(spec: Mapping) -> dict[str, dict]:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
        raise DomainError("the skeleton has no 'columns:' mapping", "pass --domain with a file written by 'dipsy domain init'")
    unknown = set(spec) - {"name", "description", "columns"}
    if unknown:
        raise DomainError(
            f"the skeleton has field(s) {sorted(unknown)} (a domain discovered already?)",
            "discover from a skeleton with TODOs, written by 'dipsy domain init'",
        )
    out = {}
    for name, s in spec["columns"].items():
        if not isinstance(s, Mapping):
            raise DomainError(f"column {name!r} is not a mapping", "give it a kind and its categories or bounds")
        out[str(name)] = dict(s)
    return out


def _is_todo(value: Any) -> bool:
    return value == TODO or (isinstance(value, (list, tuple)) and list(value) == [TODO])


def _refuse_unless(name: str, columns: Mapping, what: str, ok: bool, why: str) -> None:
    if name not in columns:
        raise DomainError(f"--{what} names {name!r}, which the skeleton does not list", f"choose from {', '.join(columns)}")
    if not ok:
        raise DomainError(f"--{what} {name}: the column {why}", "discover only what the skeleton leaves TODO")


def _refuse_leftover_todos(columns: Mapping[str, dict], categories: set[str], bins: set[str]) -> None:
    """Refuse, before any read, a skeleton whose TODOs the discovery would not all fill."""
    left = []
    for name, s in columns.items():
        for key, value in s.items():
            todo = _is_todo(value) or (isinstance(value, (list, tuple)) and key not in ("categories", "labels") and TODO in value)
            if todo and not ((key == "categories" and name in categories) or (key == "bins" and name in bins)):
                left.append(f"{name} ({key})")
    if left:
        raise DomainError(
            f"the skeleton has TODOs that discovery does not fill: {'; '.join(left)}",
            "declare kinds and bounds from public knowledge (and delete the fields that do not apply to a "
            "column's kind); discovery fills only categories (--categories) and bins (--bins COL=K)",
        )
