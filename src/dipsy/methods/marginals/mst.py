r"""MST (McKenna, Miklau & Sheldon, "Winning the NIST contest: a scalable and general approach to
differentially private synthetic data", Journal of Privacy and Confidentiality 11(3), 2021).

The run spends a ρ-zCDP budget in three equal parts (the algorithm as METHODS.md §4.6 recalls it
from the paper; every constant checked against the authors' ``mechanisms/mst.py`` in
ryan112358/private-pgm, quoted below by its names). For d ≥ 3 attributes, with θ the most rows
one individual owns:

1. **One-way marginals** (fixed in the plan): every attribute's counts with discrete Gaussian noise
   of ``σ₁² = θ² · 3d / (2ρ)`` — ρ/3 split equally over the d one-ways (the reference's
   ``sigma = sqrt(3/(2ρ))`` with weights ``1/√d``, i.e. ``σ₁ = sqrt(3d/(2ρ))``).
2. **Domain compression** (post-processing, :func:`compress`): the values whose noisy count is
   below ``3σ₁`` are merged into one value, whose noisy count is their sum (the reference's
   ``compress_domain``). The two-way queries below then read the merged tables
   (:class:`~.privsyn.MergedTable`).
3. **Selection of a spanning tree** (adaptive): Kruskal's algorithm in which each of the d − 1
   edges is chosen by the exponential mechanism among the pairs that join two components, each
   choice ``ρ/(3(d − 1))``-zCDP (``ε = sqrt(8ρ/(3(d−1)))`` with ``Pr ∝ exp(ε q / 2Δ)``: the
   reference's ``exponential_mechanism(..., monotonic=False)``). The score of pair (i, j) is the
   L1 distance between its true (merged) two-way counts and the two-way the one-way estimate
   implies, :func:`pair_scores`; the estimate is fixed before the first round, so every pair's
   score is the same in every round, as in the reference (which computes them once).
4. **Two-way marginals** of the d − 1 chosen edges (adaptive), over the merged values, each with
   discrete Gaussian noise of ``σ₂² = θ² · 3(d − 1)/(2ρ)`` — ρ/3 split equally.

Then, post-processing only: the noisy one- and two-ways are made consistent and non-negative
(:func:`~.consistency.make_consistent`, inverse-variance weights), and records are drawn i.i.d.
from the tree distribution they define (:class:`~.tree.TreeDistribution`: the closed form of the
graphical model mbi would fit to a tree), a merged value drawn back as one of the values it merged
in proportion to their noisy one-way counts clipped at 0 (:func:`~.privsyn.expand`; the reference
draws uniformly: see the departures), n the consistent noisy total. The domain's edit rules
(public) hold their forbidden cells at 0 in every consistent marginal over their columns
(:func:`~.marginal.held_at_zero`; over merged values, a cell only when all it merged is forbidden),
so a draw never breaks a rule on an edge of the tree whose values no merge mixed.

**Sensitivity of the score** (step 3). Given the earlier noisy outputs, the estimate ``x̂_ij`` is a
constant (post-processing of them), so ``q_ij(D) = ‖M_ij(D) − x̂_ij‖₁`` with ``M_ij`` the merged
two-way count table. Adding or removing an individual of at most θ rows moves ``M_ij`` by at most
θ in L1 (each row falls in exactly one cell), so by the triangle inequality
``|q_ij(D) − q_ij(D')| ≤ ‖M_ij(D) − M_ij(D')‖₁ ≤ θ``: Δ = θ (Δ = 1 for one record, the
reference's ``sensitivity=1.0``).

**Proof that the release is ρ-zCDP.** Each one-way table has L2 sensitivity θ, so its discrete
Gaussian is ``θ²/(2σ₁²)``-zCDP (Canonne, Kamath & Steinke 2020, Thm 4), at most ρ/(3d) with σ₁²
rounded up; each edge choice is an ε-DP exponential mechanism (McSherry & Talwar 2007), hence
ε-bounded-range and ``ε²/8``-zCDP (Cesar & Rogers 2021, Lemma 3.4), at most ρ/(3(d−1)) with ε
rounded down (:class:`~dipsy.privacy.selection.ExponentialSelection`); each merged two-way table
has L2 sensitivity θ, so costs at most ρ/(3(d−1)). Which pairs are candidates, their estimate,
the merge maps and which tables are measured are functions of earlier noisy outputs and public
inputs only, so the measurements compose adaptively: their ρ's add (Bun & Steinke 2016, Lemma
2.3), to at most ``ρ/3 + (d−1)·ρ/(3(d−1)) + (d−1)·ρ/(3(d−1)) = ρ``; the session's privacy filter
(Rogers et al. 2016) admits the adaptive ones only within their declared ``2ρ/3``. Everything
after is post-processing (Bun & Steinke 2016, Lemma 1.8). The statement is the sum of what ran.

**Declared analyses** (issue #31; :mod:`.declared`). When the domain declares analyses
(:mod:`dipsy.domain.analyses`), each set first measures, in the plan, the two-way marginal of each
analysis's response with each column its terms name (:func:`~dipsy.domain.analyses.declared_pairs`),
and the whole table of an analysis naming two or more columns besides its response
(:func:`~.declared.declared_tables`: measured and published for its noise-aware intervals, not used
in the tree), over the original values, with discrete Gaussian noise at ``ρ_i`` — the set's ``s·ρ/m`` split
∝ cells^(2/3) (:func:`~.declared.declared_split`; s the option ``analysis_share``, 0.25 unless set) —
and MST's own three parts above take ``(1 − s)·ρ/m``. Those pairs are forced into the tree first, in
the order declared, each unless it would close a cycle with those before it (:func:`forced_edges`:
recorded as ``declared_left_out``; measured and listed all the same). The exponential mechanism then
chooses the ``d − 1 − F`` edges still needed (F forced) among the pairs joining two components, each
choice at ``(1 − s)ρ/(3m(d − 1 − F))`` and each chosen two-way at the same; when every edge is forced
nothing is chosen and the one-ways take all of ``(1 − s)ρ/m``. A forced edge's table in the tree is its
noisy declared marginal summed over the merged values (post-processing), weighed in consistency by its
own noise (a merged cell sums several noisy cells but is weighed as one, as for the one-ways).
*Privacy:* the pairs, their ρ_i, which are forced and which left out, and F are functions of the
domain and the option alone — public inputs — so they are fixed before any read like the one-ways,
and the adaptive part's size depends on them only; the sum is ``s·ρ/m + (1 − s)ρ/m·(1/3 + 2/3) = ρ/m``
per set (``s·ρ/m + (1 − s)ρ/m`` when nothing is chosen), each discrete Gaussian's σ² rounded up so its
cost is at most its share, and the proof above holds with these shares. Without declared analyses
(or with ``analysis_share`` 0) nothing is declared or forced and every share, noise and draw is as
above, bit for bit.

**m sets** (``--sets m``; :mod:`.sets`). Each set is its own complete run of steps 1–4 at ``ρ/m``
with its own noise, selection and tree; the plan holds every set's one-ways and declares each
set's adaptive part (``2ρ/(3m)``) as its own spend, which the ledger reserves before any read.
Every measurement is tagged with its set. Unlike privsyn's chosen marginals, a set's adaptive
measurements are charged one by one: their mechanisms — d − 1 exponential mechanisms of one ε,
d − 1 discrete Gaussians of one σ₂² — do not depend on what is chosen, so every set spends exactly
the same, and the statement's per-set line is each set's own cost. The m runs compose to ρ
(Lemma 2.3 again); each set is ρ/m-zCDP.

**Departures from the reference**, all post-processing or an equal-or-smaller spend:

- exact noise: the discrete Gaussian (σ² rounded up to 1/1024) and an exact exponential mechanism
  on a grid of Δ/1000 (ε rounded down), charged as the paper charges the continuous ones;
- estimation: the reference fits a graphical model by mirror descent (10,000 iterations) and uses
  a 2,500-iteration fit on the one-ways for the scores; here the one-way estimate is the one-ways
  made consistent and non-negative (a common total, the inverse-variance average of the noisy
  totals, and each one-way projected onto the simplex of that total — what the fit on one-ways
  alone converges to, up to the reference's total estimate and its down-weighting of a merged
  cell), and the final model is the tree distribution of the consistent marginals (closed form).
  Consistency weighs every cell of a marginal by that marginal's noise variance; a merged
  one-way cell sums k noisy counts (variance kσ₁²) but is weighed as one — it moves only that
  cell's share of the averages;
- sampling: i.i.d. records along the tree (exact conditionals), not mbi's rounding sampler; then
  a local search (:mod:`.refine`, option ``search``) moves single values wherever that lowers the
  records' L1 distance to the tree's consistent two-ways, which removes most of the i.i.d. draw's
  sampling error on them. By default 30 sweeps on a release of at most ``CHUNK_ROWS`` (10⁶)
  records and none above (there the sampling error, ∝ 1/√N, is small, and the search costs tens
  of seconds per 10⁶ records); on Adult (seeds 0–1, the evaluation data) it took ε = 1 from
  0.0107 / 0.0539 / 0.1133 to 0.0086 / 0.0521 / 0.1119 (1/2/3-way TVD);
- decompression: the reference's ``reverse_data`` spreads a merged value uniformly over the
  values it merged; here in proportion to their noisy one-way counts clipped at 0 (uniformly when
  all are ≤ 0), as privsyn does. Those counts are below 3σ₁ and noisy, but already paid for, and a
  merged group can hold values of very different sizes: on Adult at ε = 0.1 age's merged group
  spans ages with none to about 3σ₁ ≈ 360 records. Measured on Adult (means of seeds 0, 1; 1/2/3-way
  TVD, ``benchmarks/peers.py``'s scorer, the data the method is evaluated on): uniform 0.060 /
  0.143 / 0.230 at ε = 0.1 and 0.0112 / 0.0560 / 0.1162 at ε = 1, weighted 0.054 / 0.132 / 0.216
  and 0.0106 / 0.0549 / 0.1148; at ε = 10 the two agree;
- d = 2: the only spanning tree is the one pair, a public fact, so no selection runs and ρ is
  split in halves (one-ways, the pair); d = 1: the one-way alone, at ρ.

**Empty or tiny data.** n is the consistent noisy total, rounded, at least 1 (or the ``rows``
option): the relation is add/remove, so n is not public and never read. When the consistent
total is below half a record no measurement says anything: the release is ``rows`` records (default one), each
column drawn from its noisy one-way counts clipped at 0 (uniformly when all are ≤ 0).

Neighbouring: add or remove one individual, who owns at most θ records (θ = 1: one record;
METHODS.md §0.1). Public: the domain (with its declared analyses) and θ. Released beside the records (``release.json``
parameters, public as functions of the noisy outputs): the tree's edges and the merged values.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...domain import Domain
from ...errors import DipsyError
from ...privacy import ZCDP, Spend
from ...privacy.measurement import DiscreteGaussian, Measurement, Statistic, Table
from ...privacy.relation import ADD_REMOVE, Relation, individual
from ...privacy.rng import Randomness
from ...privacy.selection import ExponentialSelection
from ...privacy.session import Session
from ..base import CHUNK_ROWS, MAX_ROWS, Model, Option, Plan, Synthesizer, concatenated, theta_option, whole
from .consistency import make_consistent
from .declared import ANALYSIS_SHARE, analysis_share, analysis_share_option, counted, declared_label, declared_split
from .marginal import Marginal, Zeros, held_at_zero, independent_records, rule_zeros
from .privsyn import MergedTable, expand, merge_rare
from .refine import SWEEPS, progress_of, refine_records, search_option, sweeps_after_draws
from .sets import SetsModel, SetsPlan, set_slices
from .tree import TreeDistribution

logger = logging.getLogger(__name__)

#: Noisy counts below this many σ₁ are merged (the reference's ``y >= 3 * M.stddev`` keeps the rest).
COMPRESS_SDS = 3


def shares(d: int) -> tuple[float, float, float]:
    """The budget shares (one-ways, edge choices, two-ways) for ``d`` attributes.

    >>> shares(14), shares(2), shares(1)
    ((0.3333333333333333, 0.3333333333333333, 0.3333333333333333), (0.5, 0.0, 0.5), (1.0, 0.0, 0.0))
    """
    if d >= 3:
        return (1 / 3, 1 / 3, 1 / 3)
    return (0.5, 0.0, 0.5) if d == 2 else (1.0, 0.0, 0.0)


def own_shares(d: int, rounds: int) -> tuple[float, float, float]:
    """MST's own shares (one-ways, edge choices, chosen two-ways) when ``rounds`` of the d − 1
    edges are left to choose (the rest are declared pairs forced into the tree): :func:`shares`
    when none is forced; the one-ways alone when every edge is forced; else thirds.

    >>> own_shares(5, 4) == shares(5), own_shares(5, 2), own_shares(5, 0), own_shares(2, 0)
    (True, (0.3333333333333333, 0.3333333333333333, 0.3333333333333333), (1.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    """
    if rounds == d - 1:
        return shares(d)
    return (1 / 3, 1 / 3, 1 / 3) if rounds > 0 else (1.0, 0.0, 0.0)


def forced_edges(
    names: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[str, str], ...]]:
    """The declared pairs forced into the tree, in Kruskal's order (the order declared), each as
    its columns' indices ascending; and the pairs left out because they would close a cycle with
    those before them. A function of the (public) domain alone.

    >>> forced_edges(("y", "a", "b", "c"), [("y", "a"), ("y", "b"), ("a", "b"), ("b", "c")])
    (((0, 1), (0, 2), (2, 3)), (('a', 'b'),))
    """
    index = {name: i for i, name in enumerate(names)}
    component = list(range(len(names)))

    def find(a: int) -> int:
        while component[a] != a:
            a = component[a]
        return a

    forced, left_out = [], []
    for x, y in pairs:
        a, b = index[x], index[y]
        if find(a) == find(b):
            left_out.append((x, y))
            continue
        component[find(a)] = find(b)
        forced.append((min(a, b), max(a, b)))
    return tuple(forced), tuple(left_out)


@dataclass(frozen=True)
class Declared:
    """One set's declared analyses (public: the domain and the ``analysis_share`` option alone).

    ``share`` is s, the share of each set's budget their two-way marginals take; ``split`` each
    pair with its ρ (s·ρ/m split ∝ cells^(2/3)); ``forced`` the pairs forced into the tree and
    ``left_out`` those that would close a cycle (:func:`forced_edges`); ``rounds`` the edges the
    exponential mechanism still chooses (d − 1 − |forced|). Without analyses (or with s = 0):
    nothing declared, nothing forced, MST as the paper runs it.
    """

    share: float
    split: tuple[tuple[tuple[str, ...], float], ...]
    forced: tuple[tuple[int, int], ...]
    left_out: tuple[tuple[str, str], ...]
    rounds: int


def merged_counts(noisy: np.ndarray, shape: tuple[int, int], map_a: np.ndarray, map_b: np.ndarray) -> np.ndarray:
    """A noisy two-way table (flat, C order, of ``shape``) summed over merged values: cell (i, j)
    of the result sums the cells whose values ``map_a``, ``map_b`` merge into i and j.
    Post-processing.

    >>> merged_counts(np.array([1, 2, 3, 4, 5, 6]), (2, 3), np.array([0, 1]), np.array([0, 1, 1])).tolist()
    [[1.0, 5.0], [4.0, 11.0]]
    """
    map_a, map_b = np.asarray(map_a, dtype=np.int64), np.asarray(map_b, dtype=np.int64)
    out = np.zeros((int(map_a.max()) + 1, int(map_b.max()) + 1))
    np.add.at(out, np.ix_(map_a, map_b), np.asarray(noisy, dtype=float).reshape(shape))
    return out


def compress(noisy: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """MST's domain compression: the values whose noisy count is below ``threshold`` become one
    value, the last, whose noisy count is their sum (the reference's ``compress_domain``).

    Returns the map from original codes to compressed codes and the compressed noisy counts.
    Kept values keep their order. Nothing below the threshold: the identity.

    >>> compress(np.array([50.0, 2.0, 40.0, -1.5]), 10.0)
    (array([0, 2, 1, 2]), array([50. , 40. ,  0.5]))
    """
    return merge_rare(np.asarray(noisy, dtype=float), threshold, floor=False)


def consistent(marginals: Sequence[Marginal]) -> list[Marginal] | None:
    """:func:`~.consistency.make_consistent` of ``marginals``, or None when their common total is
    below half a record (nothing measured is positive on balance). Also None when a count is not
    finite: make_consistent divides by a clipped marginal's sum, which is 0 when the total is a
    rounding error above 0 and a one-cell marginal is negative (e.g. one-ways 6, −8, 2)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = make_consistent(list(marginals))
    if not all(np.isfinite(m.counts).all() for m in out) or not out[0].total >= 0.5:
        return None
    return out


def independent_estimate(one_way: Sequence[Marginal]) -> tuple[np.ndarray, ...]:
    """The one-way counts of the estimate from the noisy one-ways alone: consistent (a common
    total) and non-negative (:func:`consistent`); all zero when their total is below half a
    record. Post-processing."""
    out = consistent(one_way)
    return tuple(np.zeros(np.shape(m.counts)) for m in one_way) if out is None else tuple(m.counts for m in out)


def pair_scores(
    engine: Any,
    columns: tuple[tuple[str, str], ...],
    maps: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...],
    estimate: tuple[np.ndarray, ...],
    attributes: tuple[tuple[int, int], ...],
) -> np.ndarray:
    r"""MST's edge scores: ``q_ij = ‖M_ij(D) − x̂_i x̂_jᵀ / N‖₁`` for each candidate pair.

    ``M_ij(D)`` is the pair's two-way count table over merged values (read from ``engine``), and
    ``x̂_i x̂_jᵀ / N`` the two-way of the independent model with the estimated one-ways ``x̂`` of
    common total ``N`` (zero when ``N ≤ 0``) — the reference's ``est.project([a, b])`` of a model
    fitted to the one-ways. Confidential: only the selection measurement's
    :class:`~dipsy.privacy.measurement.Statistic` calls it, through a session, after the charge.
    Its sensitivity is θ per score (module docstring).
    """
    out = []
    for (a, b), names, pair_maps in zip(attributes, columns, maps):
        table = MergedTable(names, pair_maps).answer(engine).astype(float)
        total = float(estimate[a].sum())
        expected = np.outer(estimate[a], estimate[b]) / total if total > 0 else np.zeros(table.shape)
        out.append(float(np.abs(table - expected).sum()))
    return np.asarray(out, dtype=float)


def scores_once(
    engine: Any, every: Any, pairs: tuple[tuple[int, int], ...], memo: dict, candidates: tuple[tuple[int, int], ...]
) -> np.ndarray:
    """The candidates' scores, every pair's computed once (``every(engine)``, :func:`pair_scores`).

    The reference computes every pair's score once, before the first round, from one fixed
    estimate; here the first round's measurement — whose candidates are all the pairs — reads
    them, and the later rounds' measurements take their candidates' scores from ``memo``, which
    holds exact values and is read by these statistics only, inside their charged measurements
    (the session caches exact tables the same way), and emptied when the selection ends. The
    released choices are the same as if each round read its tables again; on DuckDB this saves
    the d − 2 later rounds' reads (about 4 s of 5 on Adult).
    """
    if not memo:
        memo.update(zip(pairs, every(engine)))
    return np.array([memo[p] for p in candidates], dtype=float)


class MST(Synthesizer):
    """MST, ρ-zCDP; see the module docstring for the algorithm and its guarantee."""

    budget: ZCDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "mst"
    summary = (
        "MST (NIST 2018 winner): noisy 1-way marginals, a maximum spanning tree of pairs chosen by the exponential "
        "mechanism, its noisy 2-way marginals, records along the tree; ρ-zCDP (give --epsilon and --delta, or --rho); "
        "m sets of ρ/m, each its own run"
    )
    definition = "zCDP"
    relations = (ADD_REMOVE,)
    options = (
        theta_option("every count and score"),
        Option("rows", whole("rows", 1, MAX_ROWS, 1000), "synthetic rows (a public choice); default the noisy total"),
        search_option(
            f"sweeps of local search that move the drawn records towards the tree's consistent two-way marginals "
            f"(default {SWEEPS} for a release of at most {CHUNK_ROWS:,} records, 0 above; 0: the i.i.d. draws as they are)",
        ),
        Option(
            "analysis_share",
            analysis_share_option,
            "share of each set's budget for the two-way marginals of the domain's declared analyses, forced into the "
            f"tree (default {ANALYSIS_SHARE:g} when the domain declares analyses, else 0)",
        ),
    )

    def declared(self, domain: Domain) -> Declared:
        """The declared analyses' measurements and forced edges of one set (public: see :class:`Declared`)."""
        d = len(domain.names)
        share = analysis_share(self.settings, domain) if d > 1 else 0.0
        if share <= 0:
            return Declared(0.0, (), (), (), max(d - 1, 0))  # MST as the paper runs it
        split = tuple(declared_split(domain, share * self.budget.rho / self.sets))
        forced, left_out = forced_edges(domain.names, [pair for pair, _ in split if len(pair) == 2])
        return Declared(share, split, forced, left_out, d - 1 - len(forced))

    def relation_for(self, relation: Relation) -> Relation:
        return individual(self.settings.get("theta", 1))

    def _mechanisms(
        self, d: int, declared: Declared | None = None
    ) -> tuple[DiscreteGaussian, ExponentialSelection | None, DiscreteGaussian | None]:
        """One set's one-way noise, edge choice and two-way noise (each the same for every column and
        chosen edge): MST's own shares of ``(1 − s)·ρ/m``, the choices and two-ways split over the
        ``rounds`` edges left to choose (``1 − s`` is exactly 1.0 without declared analyses, the default)."""
        declared = declared or Declared(0.0, (), (), (), max(d - 1, 0))
        theta, per, rounds = self.relation.theta, self.budget.rho / self.sets, declared.rounds
        s1, s2, s3 = own_shares(d, rounds)
        keep = 1 - declared.share
        one = DiscreteGaussian.for_budget(ZCDP(keep * s1 * per / d), theta)
        choose = ExponentialSelection.for_rho(keep * s2 * per / rounds, theta) if s2 else None
        two = DiscreteGaussian.for_budget(ZCDP(keep * s3 * per / rounds), theta) if s3 else None
        return one, choose, two

    def _declared_mechanisms(self, declared: Declared) -> list[tuple[tuple[str, ...], DiscreteGaussian]]:
        """Each declared table (a pair or an analysis's whole table) with its discrete Gaussian, at its ρ_i of the set's s·ρ/m."""
        return [(pair, DiscreteGaussian.for_budget(ZCDP(r), self.relation.theta)) for pair, r in declared.split]

    def plan(self, n: int | None, domain: Domain) -> Plan:
        names = domain.names
        domain.shape(names)  # every column needs cells: numeric columns need bins
        d, m, theta, rho = len(names), self.sets, self.relation.theta, self.budget.rho
        declared = self.declared(domain)
        rounds = declared.rounds
        one, choose, two = self._mechanisms(d, declared)
        pairs = self._declared_mechanisms(declared)
        measurements: list[Measurement] = []
        for k in range(m):  # set-major, each set's one-ways then its declared pairs (fit relies on the order)
            measurements += [
                Measurement(
                    self.set_label(f"one-way marginal {name}, discrete Gaussian σ² = {one.sigma2}", k),
                    Table((name,)),
                    one,
                    self.relation,
                    self.set_index(k),
                )
                for name in names
            ]
            measurements += [
                Measurement(
                    self.set_label(f"{declared_label(columns)}, discrete Gaussian σ² = {g.sigma2}", k),
                    Table(columns),
                    g,
                    self.relation,
                    self.set_index(k),
                    published=True,
                )
                for columns, g in pairs
            ]
        s1, s2, s3 = own_shares(d, rounds)
        keep = 1 - declared.share  # exactly 1.0 without declared analyses
        adaptive = keep * (s2 + s3) * rho if rounds > 0 else 0.0
        if not pairs:
            mechanism = (
                f"MST (McKenna, Miklau & Sheldon 2021): discrete Gaussian one-way marginals ({s1:.3g}ρ)"
                + (f", a maximum spanning tree of pairs chosen by {d - 1} exponential mechanisms ({s2:.3g}ρ)" if s2 else "")
                + (f", the tree's {d - 1} two-way marginals over merged values ({s3:.3g}ρ)" if s3 else "")
                + "; consistency and records drawn along the tree are post-processing"
            )
        else:
            shown = ", ".join(" × ".join(columns) for columns, _ in pairs)
            edges = f"{rounds} edge" + "s" * (rounds > 1)
            left = (
                "; left out, as each would close a cycle: " + ", ".join(f"{y} × {x}" for y, x in declared.left_out)
                if declared.left_out
                else ""
            )
            mechanism = (
                f"MST (McKenna, Miklau & Sheldon 2021) with declared analyses: the tables the domain's analyses need "
                f"({counted(pairs)}: {shown}), discrete Gaussian ({declared.share:.3g}ρ, split ∝ cells^(2/3)), published as "
                f"measured, the pairs forced into the tree first ({len(declared.forced)} of them{left}); discrete Gaussian "
                f"one-way marginals "
                f"({keep * s1:.3g}ρ)"
                + (
                    f", the tree's other {edges} chosen by {rounds} exponential mechanism{'s' * (rounds > 1)} among the "
                    f"pairs joining two components ({keep * s2:.3g}ρ)"
                    if s2
                    else ""
                )
                + (f", their two-way marginals over merged values ({keep * s3:.3g}ρ)" if s3 else "")
                + "; consistency and records drawn along the tree are post-processing"
            )
        own = "the one-way marginals and the tree's choices and marginals" if rounds > 0 else "the one-way marginals"
        own = f"the declared analyses' two-way marginals, {own}" if pairs else own
        composition = (
            f"zCDP composition of {own} (adaptive: a privacy filter bounds them by their declared share)"
            if rounds > 0
            else f"zCDP composition of {own}"
        )
        if m > 1:
            mechanism += f"; {m} independent sets, each from its own complete run of these measurements at ρ/{m}"
            composition = f"zCDP sequential composition over {m} sets, each its own complete run at ρ/{m}: " + composition
        params: dict[str, Any] = {
            "theta": theta,
            "sigma2_one_way": str(one.sigma2),
            "search": self.settings.get("search", "default"),
        }
        if choose is not None:
            params["epsilon_edge_choice"] = float(choose.epsilon)
        if two is not None:
            params["sigma2_two_way"] = str(two.sigma2)
        if pairs:
            params["analysis_share"] = declared.share
            params["declared_pairs"] = [list(pair) for pair, _ in pairs if len(pair) == 2]
            params["sigma2_declared"] = [str(g.sigma2) for pair, g in pairs if len(pair) == 2]
            tables = [(list(t), str(g.sigma2)) for t, g in pairs if len(t) > 2]
            if tables:
                params["declared_tables"] = [t for t, _ in tables]
                params["sigma2_declared_tables"] = [g for _, g in tables]
            params["declared_left_out"] = [list(pair) for pair in declared.left_out]
        if m > 1:
            params["rho_per_set"] = rho / m
        public = (*self.public(None), f"θ = {theta}, the most rows one individual owns")
        if pairs:
            public += ("the declared analyses (the domain's): which two-way marginals are measured and forced into the tree",)
        what = (
            f"the {rounds} tree edges chosen by the exponential mechanism and " if s2 else "the "
        ) + "two-way marginals, discrete Gaussian"
        if rounds == 0:
            return Plan(tuple(measurements), self.relation, public, mechanism, composition, params)
        if m == 1:
            return Plan(
                tuple(measurements),
                self.relation,
                public,
                mechanism,
                composition,
                params,
                adaptive=ZCDP(adaptive),
                adaptive_label=f"{self.name}: {what}",
            )
        return SetsPlan(
            tuple(measurements),
            self.relation,
            public,
            mechanism,
            composition,
            params,
            adaptive=ZCDP(adaptive),
            adaptive_label=f"{self.name}: {what} of each of the {m} sets",
            adaptive_sets=tuple(Spend(label, ZCDP(adaptive / m)) for label in self.per_set_labels(what)),
        )

    def fit(self, session: Session, plan: Plan) -> MSTModel | SetsModel:
        """Run each set's measurements in turn (set k from its own outputs only)."""
        if self.sets == 1:
            return self._fit_set(session, plan.measurements, 0)
        return SetsModel(
            tuple(
                self._fit_set(session, plan.measurements[part], k)
                for k, part in enumerate(set_slices(len(plan.measurements), self.sets))
            )
        )

    def _fit_set(self, session: Session, planned: Sequence[Measurement], k: int) -> MSTModel:
        names = session.domain.names
        d = len(names)
        declared = self.declared(session.domain)
        _, choose, two = self._mechanisms(d, declared)
        one_way, pairs = planned[:d], planned[d:]
        if len(pairs) != len(declared.split):
            raise DipsyError(
                f"set {k + 1} has {len(pairs)} declared measurements for {len(declared.split)} pairs", "report this bug"
            )

        # 1-2. one-way marginals (and the declared pairs' two-ways), then the 3σ₁ compression (reference: compress_domain)
        noisy_one = tuple(np.asarray(session.measure(m), dtype=np.int64) for m in one_way)
        noisy_pairs = [np.asarray(session.measure(m), dtype=np.int64) for m in pairs]
        first = one_way[0].mechanism_as(DiscreteGaussian)
        sd = first.sd
        maps, compressed = zip(*(compress(y, COMPRESS_SDS * sd) for y in noisy_one))
        weight = first.cost.rho  # every one-way has the same noise
        one = tuple(Marginal((a,), compressed[a], weight) for a in range(d))
        merged_maps = tuple(tuple(int(v) for v in x) for x in maps)

        # the declared pairs forced into the tree: their noisy two-ways summed over merged values (post-processing)
        index = {name: a for a, name in enumerate(names)}
        forced = {}
        for m, noisy in zip(pairs, noisy_pairs):
            if len(m.query_as(Table).columns) != 2:  # an analysis's whole table: measured and published, not in the tree
                continue
            y, x = m.query_as(Table).columns
            a, b = index[y], index[x]
            table = merged_counts(noisy, (len(maps[a]), len(maps[b])), maps[a], maps[b])
            if (min(a, b), max(a, b)) in declared.forced:
                forced[(min(a, b), max(a, b))] = Marginal(
                    (min(a, b), max(a, b)), table if a < b else table.T, m.mechanism_as(DiscreteGaussian).cost.rho
                )

        # 3. Kruskal with one exponential mechanism per edge, scores from the one-way estimate
        edges = self._select(session, names, merged_maps, one, choose, k, declared.forced) if d > 1 else []
        logger.info("mst tree: %s", [(names[a], names[b]) for a, b in edges])

        # 4. the chosen edges' two-way marginals over merged values
        measured = [forced[e] for e in declared.forced]
        for a, b in edges[len(declared.forced) :]:
            assert two is not None, "shares(d) gives the two-way marginals a share whenever there are edges (d > 1)"
            query = MergedTable((names[a], names[b]), (merged_maps[a], merged_maps[b]))
            m = Measurement(
                self.set_label(f"two-way marginal {names[a]} × {names[b]} on the tree, discrete Gaussian σ² = {two.sigma2}", k),
                query,
                two,
                self.relation,
                self.set_index(k),
            )
            measured.append(Marginal((a, b), np.asarray(session.measure(m), dtype=float), two.cost.rho))
        maps = tuple(np.asarray(x) for x in maps)
        zeros = rule_zeros(session.domain.rule_cells, names, maps)
        return MSTModel(
            names,
            noisy_one,
            maps,
            one,
            tuple(measured),
            self.settings.get("rows"),
            zeros,
            declared.left_out,
            self.settings.get("search"),
        )

    def _select(
        self,
        session: Session,
        names: Sequence[str],
        maps: tuple[tuple[int, ...], ...],
        one: tuple[Marginal, ...],
        choose: ExponentialSelection | None,
        k: int,
        forced: tuple[tuple[int, int], ...] = (),
    ) -> list[tuple[int, int]]:
        """The d − 1 edges: the ``forced`` ones (the declared pairs, public), then Kruskal's rounds,
        each an exponential mechanism over the pairs joining two components (reference:
        ``select``); with d = 2 and nothing forced the one pair, chosen without a read."""
        d = len(names)
        if len(forced) == d - 1:
            return list(forced)
        if choose is None:
            return [(0, 1)]
        estimate = independent_estimate(one)
        component = list(range(d))

        def find(a: int) -> int:
            while component[a] != a:
                component[a] = component[component[a]]
                a = component[a]
            return a

        for a, b in forced:
            component[find(a)] = find(b)
        rounds = d - 1 - len(forced)

        pairs = tuple((a, b) for a in range(d) for b in range(a + 1, d))
        every = partial(
            pair_scores,
            columns=tuple((names[a], names[b]) for a, b in pairs),
            maps=tuple((maps[a], maps[b]) for a, b in pairs),
            estimate=estimate,
            attributes=pairs,
        )
        memo: dict = {}  # exact scores: read by the measurements' statistics only, dropped below
        edges = list(forced)
        for r in range(rounds):
            candidates = tuple(p for p in pairs if find(p[0]) != find(p[1]))
            scores = Statistic(
                f"the L1 distances of {len(candidates)} candidate pairs' two-way tables (rare values merged) "
                "from the independent model of the noisy one-way marginals",
                partial(scores_once, every=every, pairs=pairs, memo=memo, candidates=candidates),
            )
            m = Measurement(
                self.set_label(
                    f"tree edge {r + 1} of {rounds}, exponential mechanism over {len(candidates)} pairs, "
                    f"ε = {float(choose.epsilon):.4g}",
                    k,
                ),
                scores,
                choose,
                self.relation,
                self.set_index(k),
            )
            a, b = candidates[session.measure(m)]
            component[find(a)] = find(b)
            edges.append((a, b))
        memo.clear()
        return edges


@dataclass(frozen=True, eq=False)
class MSTModel(Model):
    """What one set's measurements released; :meth:`sample` is post-processing.

    ``noisy_one_way`` are the noisy one-way counts over the original values, ``maps`` the
    compression maps, ``one_way`` the compressed noisy one-ways and ``two_way`` the tree's noisy
    two-ways (merged values), each a :class:`~.marginal.Marginal` whose ``rho`` is its noise's.
    """

    names: tuple[str, ...]
    noisy_one_way: tuple[np.ndarray, ...]
    maps: tuple[np.ndarray, ...]
    one_way: tuple[Marginal, ...]
    two_way: tuple[Marginal, ...]
    rows: int | None = None
    #: The edit rules' forbidden cells over merged values, held at 0 in the tree's marginals.
    zeros: Zeros = ()
    #: The declared pairs measured but left out of the tree (each would close a cycle; public).
    declared_left_out: tuple[tuple[str, str], ...] = ()
    #: Sweeps of local search after each chunk's draw (:mod:`.refine`) as the option gave them; None:
    #: 30 on a release of at most ``CHUNK_ROWS`` records, 0 above.
    search: int | None = None

    sets = 1

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """The tree's edges by column names (public: chosen by the exponential mechanism)."""
        return tuple((self.names[m.attributes[0]], self.names[m.attributes[1]]) for m in self.two_way)

    def choices(self) -> dict:
        merged = {}
        for name, code_map in zip(self.names, self.maps):
            size = int(code_map.max()) + 1
            if size < len(code_map):  # a value below 3σ₁ alone in its group is only moved last: nothing merged
                merged[name] = {
                    "values": len(code_map),
                    "compressed": size,
                    "merged_codes": np.flatnonzero(code_map == size - 1).tolist(),
                }
        return {"tree_edges": [list(e) for e in self.edges], "compressed_domains": merged}

    def distribution(self) -> tuple[TreeDistribution, float, list[Marginal]] | None:
        """The tree distribution of the consistent marginals, their common total and the consistent
        two-ways (None when that total is below half a record: then nothing measured is positive
        on balance)."""
        self.report("mst: consistency")
        fitted = consistent(list(self.one_way) + list(self.two_way))
        if fitted is None:
            return None
        fitted = held_at_zero(fitted, self.zeros)  # the edit rules' forbidden cells (public): post-processing
        d = len(self.names)
        sizes = [len(m.counts) for m in self.one_way]
        tree = TreeDistribution.from_marginals(sizes, fitted[d:], root_counts=fitted[0].counts)
        return tree, fitted[0].total, list(fitted[d:])

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray]:
        return concatenated(self.chunks(k, rand))

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray]]:
        """The records in chunks of ``rows``, each drawn when read (i.i.d. along the tree, then the
        local search towards the tree's two-ways scaled to the chunk; a streamed set never holds
        more than a chunk)."""
        rng = rand.numpy
        fitted = self.distribution()
        if fitted is None:
            yield self._independent(rng)
            return
        tree, total, edges = fitted
        n = self.rows or max(int(round(total)), 1)
        sweeps = self.sweeps(n) if edges else 0
        sizes = [len(m.counts) for m in self.one_way]
        for start in range(0, n, rows):
            self.report(f"mst: {n:,} records along the tree", start, n)
            codes = tree.sample(min(rows, n - start), rng)
            if sweeps:
                codes = refine_records(
                    codes,
                    edges,
                    sizes,
                    sweeps,
                    rng,
                    progress=progress_of(self.report, "mst", sweeps),
                )
            yield {name: expand(codes[:, a], self.maps[a], self.noisy_one_way[a], rng) for a, name in enumerate(self.names)}

    def sweeps(self, n: int) -> int:
        """The local search's sweeps per chunk for a release of ``n`` records: the option's, else
        30 up to ``CHUNK_ROWS`` records and 0 above."""
        return sweeps_after_draws(self.search, n)

    def _independent(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``rows`` records (default 1), each column from its noisy one-way counts clipped at 0,
        uniformly when all are ≤ 0 (the module's fallback for tiny data)."""
        n = self.rows or 1
        logger.info("mst: the consistent noisy total is below 1/2; %d record(s) from the clipped one-way counts", n)
        return dict(zip(self.names, independent_records(self.noisy_one_way, n, rng)))


__all__ = [
    "MST",
    "MSTModel",
    "Declared",
    "compress",
    "forced_edges",
    "merged_counts",
    "own_shares",
    "consistent",
    "independent_estimate",
    "pair_scores",
    "scores_once",
    "shares",
]
