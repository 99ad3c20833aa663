r"""PrivSyn (Zhang et al., USENIX Security 2021), Algorithm 3: noisy marginals, consistency, GUM.

The run spends a ρ-zCDP budget in three parts, with shares ``(s₁, s₂, s₃)`` of ρ (option
``shares``; default ``0.3, 0.1, 0.6``, the paper's §6.1 is ``0.1, 0.1, 0.8``). The first two are
fixed by :meth:`PrivSyn.plan` before any data are read; the third is adaptive, declared as its
total ``ρ₃`` only:

1. every one-way marginal with discrete Gaussian noise, ``ρ₁ = s₁ρ`` split over the attributes by
   eq. 1, ``ρ₁ₐ ∝ c_a^{2/3}`` (the paper splits ρ₁ equally; eq. 1 is its own error-minimising split,
   applied here to step 1 too). A count vector has L2 sensitivity θ, so ``σ₁ₐ² = θ²/(2ρ₁ₐ)``;
2. the dependency score InDif of all ``m = d(d−1)/2`` pairs (§4.1), of the columns' own values,
   ``ρ₂ = s₂ρ``: a :class:`~dipsy.privacy.measurement.Statistic` computed by
   :func:`~.selection.score_units`. Each score moves by less than 4θ when an individual is added
   or removed (proof in :func:`~.selection.indif`); scores are measured in units of 1/64, so the
   integer vector ``round(64·InDif)`` has L2 sensitivity at most ``(256θ + 1)√m``
   (:func:`~.selection.score_sensitivity`), and gets discrete Gaussian noise calibrated to it;
3. the marginals chosen from the noisy scores (Algorithms 1–2), over the values left after the
   rare-value merge, ``ρ₃ = s₃ρ`` split by eq. 1, ``ρ_i ∝ c_i^{2/3}``, each with discrete
   Gaussian noise of ``σ_i² = θ²/(2ρ_i)`` (Thm 6; a table of merged values is still a count
   table, of L2 sensitivity θ). When no pair is worth measuring, ρ₃ measures the (merged)
   one-way marginals a second time.

**Declared analyses** (the domain's ``analyses:``, :mod:`.declared`). With analyses declared, a
share ``s`` of each set's ρ (option ``analysis_share``, default 0.25) first goes to the two-way
marginal of each analysis's response with each column its terms name, and to the whole table of
an analysis that names two or more columns besides its response (:func:`.declared.declared_tables`),
split by eq. 1 and measured over the columns' own values with discrete Gaussian noise
(σ² = θ²/(2ρ_i)); the three shares above then split ``(1 − s)ρ``. These tables are a function of
the public domain alone, so they are fixed measurements of the plan, stated and charged like the
one-way marginals, and published as measured (their noise-aware intervals, :mod:`dipsy.noise_aware`:
post-processing). Their noisy counts are summed into the merged values (post-processing), weighted
in consistency by the mean variance of a merged cell, and every pair within them is left out of
step 3's selection. The proof below holds with
``s₁, s₂, s₃`` read as shares of ``(1 − s)ρ`` and one more fixed part of ``sρ``: the parts still add
up to ρ.

Which marginals step 3 measures, and over which merged values, is a function of the noisy
outputs of steps 1–2 and public inputs only; the session's privacy filter admits each of its
measurements only while the composed total stays within the declared ``ρ₁ + ρ₂ + ρ₃`` (Rogers et
al. 2016; zCDP composes adaptively, Bun & Steinke 2016, Lemma 2.3). Each σ² is rounded up to a
1/1024 grid (:class:`~dipsy.privacy.measurement.DiscreteGaussian`), so what a measurement
spends is at most its share: the run is ρ-zCDP, and its statement is the sum of what ran.

Everything after the measurements — rare-value merging by the 3σ rule (§6.2; an ordered column's
rare values in runs of adjacent values when they are much of it, :func:`merge_rare`, a dipsy
addition that reads only the noisy one-way counts and the domain's kinds), selection, clique
merging, consistency (§4.3), the number of records from the noisy totals (the relation is
add/remove, so n is not public and never read; §6.1), the domain's edit rules held at 0 in the
consistent marginals over their columns (:func:`~.marginal.held_at_zero`: the rules are public),
GUM (§5), the local search after it (:mod:`.refine`, a dipsy addition: single-value moves that lower
the records' L1 distance to the same targets) and the expansion of merged values — reads only noisy
values and costs nothing more; so does :func:`decorrelate`, a dipsy
addition that undoes associations GUM's duplication invents between attributes no marginal links.
Only the noisy outputs and public parameters are kept (:class:`PrivSynModel`); what was selected
(:attr:`PrivSynModel.selected`) is public, a function of the noisy scores.

**m sets** (``--sets m``). Each set is its own complete run of steps 1–3 at ``ρ/m``: its own
one-way marginals (``s₁ρ/m`` split by eq. 1), its own dependency scores (``s₂ρ/m``), its own
selection from *its own* noisy outputs, and its own chosen marginals (``s₃ρ/m``), then its own
consistency and GUM. All of it is declared before any read: the fixed measurements of every set
in the plan, and each set's chosen part as a spend of ``s₃ρ/m`` (:class:`~.sets.SetsPlan`), which
the ledger reserves. Fit charges a set's chosen marginals as one measurement of exactly
``s₃ρ/m`` whose parts — the marginals and their σ² — are listed in the statement
(:class:`~.sets.Composed`, which refuses parts that compose to more).

*Proof that the release is ρ-zCDP and each set ρ/m-zCDP.* Within set k, the one-way marginals
cost at most ``s₁ρ/m`` in all (σ² rounded up), the scores at most ``s₂ρ/m``, and the chosen
marginals — a function of set k's earlier noisy outputs and public inputs only — at most
``s₃ρ/m``; zCDP composes adaptively by adding ρ (Bun & Steinke 2016, Lemma 2.3), so set k's
measurements are ``ρ/m``-zCDP, and set k, a function of them only, is too (post-processing,
ibid. Lemma 1.8). The m runs use independent noise and are measurements of the same data, so
together they compose, again adaptively, to ``m · ρ/m = ρ`` (the same Lemma 2.3), and the m
tables, a post-processing of all of them, are ρ-zCDP. Every set spends the same: its fixed
measurements are the same mechanisms as every other set's, and its chosen part is charged its
declared share, not what the rounding left of it. So the statement's total (the sum of what
ran) is at most ρ, and its per-set line, the total over m, is each set's own guarantee. The sets
are independent given the data, as Reiter's (2003) partial-synthesis rule assumes.

**Empty or tiny data.** The number of records is the consistent noisy total, rounded, at least 1
(or the ``rows`` option). When the noisy totals are so low that the consistent total is ≤ 0 (an
empty file, or a handful of rows at small ρ), no marginal says anything: the release is then
``rows`` records (default **one**), each column drawn independently from its noisy one-way counts
clipped at 0 — uniformly over the column's values when all of them are ≤ 0. Nothing about n is
used, so an empty file and a one-row file release the same kind of output with no error.

Neighbouring: add or remove one individual, who owns at most θ records (θ = 1: one record;
METHODS.md §0.1). Public: the domain and θ.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...domain import MAX_CODES, Domain
from ...errors import DipsyError
from ...privacy import ZCDP, Spend
from ...privacy.budget import of_kind
from ...privacy.measurement import DiscreteGaussian, Measurement, Query, Statistic, Table
from ...privacy.relation import ADD_REMOVE, Relation, individual
from ...privacy.rng import Randomness
from ...privacy.session import Session
from ..base import MAX_ROWS, Model, Option, Plan, Synthesizer, theta_option, whole
from .consistency import make_consistent
from .declared import ANALYSIS_SHARE, analysis_share, analysis_share_option, counted, declared_label, declared_split
from .gum import MAX_ITERATIONS, initial_records, update_records
from .marginal import Marginal, Zeros, held_at_zero, independent_records, rule_zeros
from .refine import SWEEPS, progress_of, refine_records, search_option
from .selection import allocate, combine, greedy_select, score_sensitivity, score_units
from .sets import SetsModel, SetsPlan, measure_parts, set_slices

logger = logging.getLogger(__name__)

#: Budget shares of the three measurements. PrivSyn §6.1 uses 0.1, 0.1, 0.8; on Adult (the
#: benchmark's data, so this is a choice made on the evaluation data, reported as such) a larger
#: one-way share halves the error of high-cardinality columns at small ε — see benchmarks/peers.py.
SHARES = (0.3, 0.1, 0.6)
#: Largest merged marginal (Algorithm 2's γ, in cells). The paper's 5000 merges chosen pairs into
#: cliques of thousands of cells, which noise and non-negativity flatten at tens of records per
#: cell: on Adult (4 seeds; the evaluation data again) γ = 250, which keeps chosen pairs nearly
#: as they are, lowers 2-/3-way TVD from 0.038/0.086 to 0.035/0.082 at ε = 1 and is no worse at
#: ε = 0.1 and 10; the coverage benchmark traced its biased slopes to the same merged cliques.
GAMMA = 250
#: The largest γ: a merged marginal is a table measured with noise and held, with GUM's counts of it,
#: in memory; at a million cells (200 times the paper's 5000, as many as a column of the domain may
#: have) its noise already swamps the records spread over it.
MAX_GAMMA = MAX_CODES
#: An ordered column's rare values are merged in runs of adjacent values (:func:`merge_rare`) once
#: they hold more than this share of its positive noisy count; below it, one merged value as in
#: the paper. On Adult at ε = 1 and 10 no column's rare values reach a tenth, and runs there (at
#: any share) cost 0.001 in 2-way TVD; at ε = 0.1 age, fnlwgt and hours-per-week are mostly rare.
RUN_SHARE = 0.1


def _flag(name: str) -> Callable[[Any], int]:
    """The parser of a 0/1 option ``name``."""

    def parse(value: Any) -> int:
        if str(value).strip() not in ("0", "1"):
            raise DipsyError(f"option {name} must be 0 or 1, got {value!r}", f"e.g. {name}=0")
        return int(str(value).strip())

    return parse


def _shares(value: Any) -> tuple[float, float, float]:
    try:
        parts = tuple(float(x) for x in (value.split(",") if isinstance(value, str) else value))
    except (TypeError, ValueError):
        parts = ()
    if len(parts) != 3 or min(parts) <= 0 or not math.isclose(sum(parts), 1.0, rel_tol=1e-9):
        raise DipsyError(
            f"option shares must be three positive numbers adding up to 1, got {value!r}",
            "e.g. shares=0.1,0.1,0.8 (one-way, dependency scores, chosen marginals)",
        )
    return parts


#: InDif scores are measured in units of 1/SCORE_UNITS (an integer grid for the exact sampler).
SCORE_UNITS = 64


@dataclass(frozen=True)
class MergedTable(Query):
    """The dense count table of ``columns`` over merged values: ``maps[i][v]`` is the merged code
    of column i's value v (PrivSyn §6.2). Every row still falls in exactly one cell, so an
    individual of at most θ rows moves the table by at most θ in L2, as any count table.

    >>> MergedTable(("a", "b"), ((0, 1, 1), (0, 1))).describe()
    'the counts of the a × b table, rare values merged'
    """

    columns: tuple[str, ...]
    maps: tuple[tuple[int, ...], ...]

    def answer(self, engine: Any) -> np.ndarray:
        table = engine.contingency(self.columns, form="dense")
        counts = np.asarray(table.counts, dtype=np.int64).reshape(table.shape)
        out = np.zeros(tuple(max(m) + 1 for m in self.maps), dtype=np.int64)
        np.add.at(out, np.ix_(*[np.asarray(m, dtype=np.int64) for m in self.maps]), counts)
        return out

    def describe(self) -> str:
        return f"the counts of the {' × '.join(self.columns)} table, rare values merged"


@dataclass(frozen=True)
class Settings:
    """The run's public choices (options), kept by the model for post-processing."""

    iterations: int
    gamma: int
    shuffle: bool
    rows: int | None
    #: Sweeps of local search after GUM (:mod:`.refine`); 0 keeps GUM's records.
    search: int = 0


class PrivSyn(Synthesizer):
    """Marginal-based synthesis, ρ-zCDP; see the module docstring for the guarantee."""

    budget: ZCDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "privsyn"
    summary = (
        "PrivSyn: noisy 1-way marginals, dependency-driven choice of 2-way and larger marginals, "
        "consistency, records by GUM; ρ-zCDP (give --epsilon and --delta, or --rho); m sets of ρ/m, each its own run"
    )
    definition = "zCDP"
    relations = (ADD_REMOVE,)
    options = (
        theta_option(),
        Option("iterations", whole("iterations", 0, MAX_ITERATIONS, 50), "GUM update rounds (default 50)"),
        Option(
            "gamma",
            whole("gamma", 1, MAX_GAMMA, 5000),
            "largest number of cells of a merged marginal (default 250; the paper's 5000)",
        ),
        Option("rows", whole("rows", 1, MAX_ROWS, 1000), "synthetic rows (a public choice); default the noisy total"),
        Option(
            "shares",
            _shares,
            "budget shares of one-way marginals, dependency scores and chosen marginals (default 0.3,0.1,0.6; the paper's 0.1,0.1,0.8)",
        ),
        Option(
            "shuffle",
            _flag("shuffle"),
            "1 (default): shuffle each attribute within groups of its measured neighbours after GUM; 0: not",
        ),
        Option(
            "runs",
            _flag("runs"),
            "1 (default): an ordered column's rare values merge in runs of adjacent values when they are over a tenth "
            "of it; 0: into one value, as in the paper",
        ),
        search_option(
            f"sweeps of local search after GUM, each one proposed move per value (default {SWEEPS}; 0: GUM's records as they are)"
        ),
        Option(
            "analysis_share",
            analysis_share_option,
            "share of each set's ρ for the two-way marginals of the domain's declared analyses, measured before "
            f"selection (default {ANALYSIS_SHARE:g} when the domain declares analyses; the shares above split the rest)",
        ),
    )

    def relation_for(self, relation: Relation) -> Relation:
        return individual(self.settings.get("theta", 1))

    def plan(self, n: int | None, domain: Domain) -> Plan:
        names = domain.names
        sizes = domain.shape(names)  # every column needs cells: numeric columns need bins
        theta = self.relation.theta
        rho = self.budget.rho
        m = self.sets
        per = rho / m  # each set's share (sequential composition over the sets; see the module docstring)
        pairs = list(itertools.combinations(names, 2))
        shares = self.settings.get("shares", SHARES) if pairs else (1.0, 0.0, 0.0)
        # the declared analyses' pairs first, at s of each set's ρ; the three parts share the rest
        s_declared = analysis_share(self.settings, domain)
        declared = declared_split(domain, s_declared * per) if s_declared > 0 else []
        rest = per * (1.0 - s_declared)  # exactly per without declared analyses
        one_way = [DiscreteGaussian.for_budget(ZCDP(float(r)), theta) for r in allocate(sizes, shares[0] * rest)]
        declared_noise = [(pair, DiscreteGaussian.for_budget(ZCDP(r), theta)) for pair, r in declared]
        if pairs:
            score_noise = DiscreteGaussian.for_budget(ZCDP(shares[1] * rest), score_sensitivity(len(pairs), SCORE_UNITS, theta))
            scores = Statistic(
                f"the InDif dependency scores of the {len(pairs)} pairs of columns, in units of 1/{SCORE_UNITS}",
                partial(score_units, pairs=tuple(pairs), units=SCORE_UNITS),
            )
        measurements = []
        for k in range(m):  # set-major: set k's one-way marginals, then its scores (fit relies on the order)
            measurements += [
                Measurement(
                    self.set_label(f"one-way marginal {name}, discrete Gaussian σ² = {noise.sigma2}", k),
                    Table((name,)),
                    noise,
                    self.relation,
                    self.set_index(k),
                )
                for name, noise in zip(names, one_way)
            ]
            if pairs:
                measurements.append(
                    Measurement(
                        self.set_label(
                            f"{len(pairs)} dependency scores (InDif), discrete Gaussian sd {score_noise.sd / SCORE_UNITS:.4g}", k
                        ),
                        scores,
                        score_noise,
                        self.relation,
                        self.set_index(k),
                    )
                )
            measurements += [
                Measurement(
                    self.set_label(f"{declared_label(columns)}, discrete Gaussian σ² = {noise.sigma2}", k),
                    Table(columns),
                    noise,
                    self.relation,
                    self.set_index(k),
                    published=True,
                )
                for columns, noise in declared_noise
            ]
        mechanism = (
            f"PrivSyn (Zhang et al. 2021, Alg. 3): discrete Gaussian one-way marginals ({shares[0]:g}ρ), noisy pairwise "
            f"dependency scores ({shares[1]:g}ρ), chosen marginals ({shares[2]:g}ρ); consistency and GUM record synthesis are "
            "post-processing"
        )
        if declared:
            mechanism += (
                f"; first, the tables of the domain's declared analyses ({counted(declared)}, {s_declared:g}ρ split ∝ "
                f"cells^(2/3), discrete Gaussian, published as measured), the three shares above then splitting the other "
                f"{1 - s_declared:g}ρ; the declared pairs are left out of the selection"
            )
        composition = (
            (
                "zCDP composition of the one-way marginals, the dependency scores and the marginals chosen from them "
                "(adaptive: a privacy filter bounds the chosen marginals by their declared share)"
            )
            if pairs
            else "zCDP composition of the one-way marginals"
        )
        if m > 1:
            mechanism += f"; {m} independent sets, each from its own complete run of these measurements at ρ/{m}"
            composition = (
                f"zCDP sequential composition over {m} sets, each its own complete run at ρ/{m}: "
                + composition
                + (
                    f"; each set's chosen marginals are charged as one measurement at exactly its declared "
                    f"{shares[2] * (1.0 - s_declared):g}ρ/{m}, so every set spends the same ρ/{m}"
                    if pairs
                    else ""
                )
            )
        params = {
            "theta": theta,
            "iterations": self.settings.get("iterations", 50),
            "gamma": self.settings.get("gamma", GAMMA),
            "shuffle": bool(self.settings.get("shuffle", 1)),
            "runs": bool(self.settings.get("runs", 1)),
            "search": self.settings.get("search", SWEEPS),
            "one_way_sigma2": {name: str(noise.sigma2) for name, noise in zip(names, one_way)},
        }
        if m > 1:
            params["rho_per_set"] = per
        if declared:  # only with declared analyses: a release without them has the same parameters as before
            params["analysis_share"] = s_declared
            params["declared_pairs"] = [list(pair) for pair, _ in declared if len(pair) == 2]
            tables = [list(t) for t, _ in declared if len(t) > 2]
            if tables:
                params["declared_tables"] = tables
        public = (*self.public(None), f"θ = {theta}, the most rows one individual owns")
        chosen_label = f"{self.name}: the chosen marginals, discrete Gaussian, ρ split ∝ cells^(2/3)"
        if m == 1 or not pairs:
            return Plan(
                tuple(measurements),
                self.relation,
                public,
                mechanism,
                composition,
                params,
                adaptive=ZCDP(shares[2] * rho * (1.0 - s_declared)) if pairs else None,
                adaptive_label=chosen_label,
            )
        return SetsPlan(
            tuple(measurements),
            self.relation,
            public,
            mechanism,
            composition,
            params,
            adaptive=ZCDP(shares[2] * rho * (1.0 - s_declared)),
            adaptive_label=f"{self.name}: the chosen marginals of each of the {m} sets, discrete Gaussian, "
            f"{shares[2]:g}ρ/{m} per set split ∝ cells^(2/3)",
            adaptive_sets=tuple(
                Spend(label, ZCDP(shares[2] * rest))
                for label in self.per_set_labels("the chosen marginals, discrete Gaussian, ρ split ∝ cells^(2/3)")
            ),
        )

    def fit(self, session: Session, plan: Plan) -> PrivSynModel | SetsModel:
        """Run each set's measurements in turn; one set gives a :class:`PrivSynModel`, m sets a
        :class:`~.sets.SetsModel` of m of them, each from its own measurements only."""
        if self.sets == 1:
            return self._fit_set(session, plan.measurements, None if plan.adaptive is None else of_kind(plan.adaptive, ZCDP), 0)
        adaptive = getattr(plan, "adaptive_sets", ()) or (None,) * self.sets
        return SetsModel(
            tuple(
                self._fit_set(session, plan.measurements[part], None if spend is None else spend.budget, k)
                for k, (part, spend) in enumerate(zip(set_slices(len(plan.measurements), self.sets), adaptive))
            )
        )

    def _fit_set(self, session: Session, planned: tuple[Measurement, ...], rho3: ZCDP | None, k: int) -> PrivSynModel:
        """One set (0-based ``k``) from its planned measurements (its one-way marginals, then its
        scores) and ``rho3``, its declared share for the chosen marginals (None: no pair)."""
        names = session.domain.names
        d, theta = len(names), self.relation.theta
        one_way = planned[:d]

        # 1. one-way marginals, then the 3σ rule for rare values (§6.2)
        noisy_one = tuple(np.asarray(session.measure(m), dtype=np.int64) for m in one_way)
        ordered = [c.ordered_codes if self.settings.get("runs", 1) else 0 for c in session.domain.columns]
        maps, merged = zip(
            *(
                merge_rare(noisy.astype(float), 3 * m.mechanism_as(DiscreteGaussian).sd, ordered=k)
                for noisy, m, k in zip(noisy_one, one_way, ordered)
            )
        )
        sizes = [len(x) for x in merged]

        # 2. noisy dependency scores; the declared analyses' pairs (planned, after the scores), over
        # merged values; selection (Alg. 1) among the other pairs, and merging (Alg. 2)
        chosen: list[tuple[int, ...]] = []
        declared: list[Marginal] = []
        if rho3 is not None:
            scores = np.asarray(session.measure(planned[d]), dtype=float) / SCORE_UNITS
            declared = [_merged_table(session, m, names, maps) for m in planned[d + 1 :]]
            taken = {p for m in declared for p in itertools.combinations(m.attributes, 2)}
            pairs = [p for p in itertools.combinations(range(d), 2) if p not in taken]
            if taken:  # the scores come for every pair, in combinations' order
                scores = scores[[i for i, p in enumerate(itertools.combinations(range(d), 2)) if p not in taken]]
            cells = np.array([sizes[a] * sizes[b] for a, b in pairs], dtype=float)
            picked = greedy_select(scores, cells, rho3.rho, theta)
            chosen = combine([pairs[i] for i in picked], sizes, self.settings.get("gamma", GAMMA))
            if not chosen:  # nothing worth a pair: spend ρ₃ on the one-way marginals again
                chosen = [(a,) for a in range(d)]
        logger.info("privsyn measures %d marginals: %s", len(chosen), [tuple(names[a] for a in c) for c in chosen])

        # 3. the chosen marginals, ρ₃ split by eq. 1 (adaptive: within the declared ρ₃); with m
        # sets, one measurement per set charged exactly its share (see .sets: why)
        parts = []
        if chosen:
            assert rho3 is not None, "marginals are chosen only with a ρ₃ to measure them"
            for attrs, rho_i in zip(chosen, allocate([math.prod(sizes[a] for a in c) for c in chosen], rho3.rho)):
                noise = DiscreteGaussian.for_budget(ZCDP(float(rho_i)), theta)
                query = MergedTable(tuple(names[a] for a in attrs), tuple(tuple(int(v) for v in maps[a]) for a in attrs))
                again = " (again)" if len(attrs) == 1 else ""
                parts.append(
                    Measurement(
                        self.set_label(
                            f"chosen marginal {' × '.join(query.columns)}{again}, discrete Gaussian σ² = {noise.sigma2}", k
                        ),
                        query,
                        noise,
                        self.relation,
                    )
                )
        charge = (
            None
            if self.sets == 1 or rho3 is None
            else (  # no ρ₃: no parts, nothing to charge
                self.set_label(
                    f"the chosen marginals {', '.join(' × '.join(p.query_as(MergedTable).columns) for p in parts)}, discrete Gaussian, "
                    "ρ split ∝ cells^(2/3)",
                    k,
                ),
                rho3,
            )
        )
        outputs = measure_parts(session, parts, charge, self.set_index(k))
        measured = [
            Marginal(attrs, np.asarray(out, dtype=float), p.mechanism_as(DiscreteGaussian).cost.rho)
            for attrs, p, out in zip(chosen, parts, outputs)
        ]
        settings = Settings(
            self.settings.get("iterations", 50),
            self.settings.get("gamma", GAMMA),
            bool(self.settings.get("shuffle", 1)),
            self.settings.get("rows"),
            self.settings.get("search", SWEEPS),
        )
        return PrivSynModel(
            names,
            noisy_one,
            tuple(m.mechanism_as(DiscreteGaussian).cost.rho for m in one_way),
            tuple(maps),
            tuple(merged),
            tuple(measured),
            settings,
            rule_zeros(session.domain.rule_cells, names, maps),
            tuple(declared),
        )


@dataclass(frozen=True, eq=False)
class PrivSynModel(Model):
    """What the measurements released, and public choices; :meth:`sample` is post-processing.

    ``noisy_one_way`` are the noisy one-way counts (original values), ``one_way_rho`` what each
    cost, ``maps``/``merged`` the rare-value merge (§6.2) and the merged noisy counts, ``chosen``
    the noisy chosen marginals (merged values). All are functions of noisy outputs only.
    """

    names: tuple[str, ...]
    noisy_one_way: tuple[np.ndarray, ...]
    one_way_rho: tuple[float, ...]
    maps: tuple[np.ndarray, ...]
    merged: tuple[np.ndarray, ...]
    chosen: tuple[Marginal, ...]
    settings: Settings
    #: The edit rules' forbidden cells over merged values, held at 0 in GUM's targets.
    zeros: Zeros = ()
    #: The declared analyses' noisy two-way marginals over merged values (planned, not chosen).
    declared: tuple[Marginal, ...] = ()

    sets = 1

    @property
    def selected(self) -> tuple[tuple[str, ...], ...]:
        """The marginals measured in step 3, by column names (public: chosen from noisy scores)."""
        return tuple(tuple(self.names[a] for a in m.attributes) for m in self.chosen)

    def choices(self) -> dict:
        return {"selected_marginals": [list(m) for m in self.selected]}

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray]:
        names, rng = self.names, rand.numpy
        d = len(names)
        sizes = [len(x) for x in self.merged]
        one_way = [Marginal((a,), self.merged[a], self.one_way_rho[a]) for a in range(d)]

        # consistency (§4.3), n from the noisy totals (§6.1), GUM (§5)
        self.report("privsyn: consistency")
        # the edit rules' forbidden cells held at 0 in the targets (public rules: post-processing)
        consistent = held_at_zero(make_consistent(one_way + list(self.chosen) + list(self.declared)), self.zeros)
        total = consistent[0].total
        if not total > 0:  # nothing measured is positive on balance: the documented fallback
            return self._independent(rng)
        n = self.settings.rows or max(int(round(total)), 1)
        records = initial_records(consistent[:d], sizes, n, rng)
        rounds = self.settings.iterations
        records, history = update_records(
            records,
            gum_targets(consistent, d),
            sizes,
            rounds,
            rng=rng,
            progress=lambda t, error: self.report(f"privsyn: GUM, L1 error {error:.3f}", t + 1, rounds),
        )
        if history:
            logger.info("privsyn GUM: L1 error %.4f -> %.4f over %d rounds", history[0], history[-1], len(history))
        sweeps = self.settings.search
        if sweeps:
            records = refine_records(
                records,
                gum_targets(consistent, d),
                sizes,
                sweeps,
                rng,
                progress=progress_of(self.report, "privsyn", sweeps),
            )
        if self.settings.shuffle:
            records = decorrelate(records, [t.attributes for t in consistent], sizes, rng)
        return {names[a]: expand(records[:, a], self.maps[a], self.noisy_one_way[a], rng) for a in range(len(names))}

    def _independent(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``rows`` records (default 1), each column drawn independently from its noisy one-way
        counts clipped at 0, uniformly when all are ≤ 0 (the module's fallback for tiny data)."""
        n = self.settings.rows or 1
        logger.info("privsyn: the consistent noisy total is <= 0; %d record(s) from the clipped one-way counts", n)
        return dict(zip(self.names, independent_records(self.noisy_one_way, n, rng)))


def gum_targets(consistent: list[Marginal], d: int) -> list[Marginal]:
    """What GUM updates towards: the chosen marginals (``consistent[d:]``), and the one-way
    marginal (``consistent[a]``, a < d) of every attribute no chosen marginal holds.

    GUM copies whole records to fix the marginals it is given, so an attribute in none of them
    drifts with the copies: on Adult at ε = 1, fnlwgt (which no pair is chosen for) ended with a
    one-way TVD of 0.06 against 0.009 for its consistent noisy counts, and every pair holding it
    paid for that. Its own one-way target holds it in place.

    >>> one = [Marginal((a,), np.array([5.0, 5.0])) for a in range(3)]
    >>> [t.attributes for t in gum_targets(one + [Marginal((0, 1), np.full((2, 2), 2.5))], 3)]
    [(0, 1), (2,)]
    >>> [t.attributes for t in gum_targets(one, 3)]
    [(0,), (1,), (2,)]
    """
    chosen = list(consistent[d:])
    covered = {a for m in chosen for a in m.attributes}
    return chosen + [consistent[a] for a in range(d) if a not in covered]


def decorrelate(
    records: np.ndarray, attribute_sets: list[tuple[int, ...]], sizes: list[int], rng: np.random.Generator
) -> np.ndarray:
    """Shuffle each attribute among the records that agree on all its measured neighbours.

    GUM duplicates whole records, so attributes that no measured marginal links drift into
    associations nobody measured (on Adult, age and fnlwgt end three times as dependent as in
    the data). For attribute a with neighbours N(a) — every attribute sharing a measured marginal
    with it — permuting a's values at random within groups of equal N(a) leaves the joint of
    (a, N(a)) unchanged, hence every measured marginal, and makes a independent of the rest
    given N(a): the Markov property of the graphical model the marginals define. Post-processing
    of synthetic records; a dipsy addition, not in the PrivSyn paper (option ``shuffle=0`` omits it).

    >>> r = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> out = decorrelate(r.copy(), [(0,), (1,)], [2, 2], np.random.default_rng(0))
    >>> sorted(out[:, 0].tolist()), sorted(out[:, 1].tolist())
    ([0, 0, 1, 1], [0, 0, 1, 1])
    """
    n, d = records.shape
    for a in range(d):
        neighbours = sorted(set().union(*[s for s in attribute_sets if a in s]) - {a})
        key = np.zeros(n, dtype=np.int64)
        for b in neighbours:
            if key.max(initial=0) >= (1 << 62) // sizes[b]:  # keep the mixed-radix key inside int64
                key = np.unique(key, return_inverse=True)[1].astype(np.int64)
            key = key * sizes[b] + records[:, b]
        grouped = np.argsort(key, kind="stable")
        shuffled = np.lexsort((rng.random((n,)), key))
        records[shuffled, a] = records[grouped, a]
    return records


def _merged_table(session: Session, m: Measurement, names: tuple[str, ...], maps: Sequence[np.ndarray]) -> Marginal:
    """A declared measurement's noisy table (a pair, or an analysis's whole table), measured over the
    columns' own values and summed into the merged values of the rare-value merge (post-processing
    of the noisy counts). A merged cell sums r noisy cells, r times a cell's variance: it is weighted
    in consistency with the ρ whose variance is the mean over its cells, ρ · merged cells / cells."""
    attrs = [names.index(c) for c in m.query_as(Table).columns]
    noisy = np.asarray(session.measure(m), dtype=float).reshape([len(maps[a]) for a in attrs])
    order = np.argsort(attrs)  # a Marginal's attributes ascend
    attrs, noisy = [attrs[i] for i in order], np.transpose(noisy, order)
    merged = np.zeros([int(maps[a].max()) + 1 for a in attrs])
    np.add.at(merged, np.ix_(*[maps[a] for a in attrs]), noisy)
    rho = m.mechanism_as(DiscreteGaussian).cost.rho * merged.size / noisy.size
    return Marginal(tuple(attrs), merged, rho)


def merge_rare(noisy: np.ndarray, threshold: float, floor: bool = True, ordered: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """PrivSyn §6.2: values whose noisy count is below ``threshold`` (3σ) become one new value.

    Returns the map from original codes to merged codes and the merged noisy counts. Kept values
    keep their order; the merged value comes last and counts the rare values' total when that
    reaches the threshold, else 0 (then only the noise of a larger marginal holding the column,
    averaged in by consistency, can give it a few records); ``floor=False`` keeps the rare values'
    total as it is (MST's compression). Nothing rare: the identity.

    ``ordered``: the first ``ordered`` codes are values in order (an ordinal, integer or numeric
    column, :attr:`~dipsy.domain.columns.Column.ordered_codes`). When its rare values hold more than
    :data:`RUN_SHARE` of the column's positive noisy count, one merged value would erase most of the
    column (at ε = 0.1 on Adult all but a few of age's 85 values are rare), so each run of adjacent
    rare values is cut instead, left to right, into groups whose positive noisy counts reach
    ``threshold``, what is left of a run joining its last group; a group is a merged value in its
    place in the order and counts its values' total, as it is (a run too small for one group keeps
    its own small count rather than 0: its values hold real records, which one merged value would
    have pooled with the others). Rare codes after the ordered ones (missing states) still make the
    one merged value, last. A dipsy addition; with ``ordered=0``, the paper's rule.

    >>> merge_rare(np.array([50.0, 2.0, 40.0, 1.5]), 10.0)
    (array([0, 2, 1, 2]), array([50., 40.,  0.]))
    >>> merge_rare(np.array([50.0, 6.0, 5.0, 4.0, 30.0, 3.0]), 10.0, ordered=6)
    (array([0, 1, 1, 1, 2, 3]), array([50., 15., 30.,  3.]))
    """
    rare = noisy < threshold
    if not rare.any():
        return np.arange(len(noisy)), noisy
    positive = np.maximum(noisy, 0)
    head = ordered if positive[:ordered][rare[:ordered]].sum() > RUN_SHARE * positive.sum() else 0
    groups = _runs(noisy[:head], threshold)  # the ordered codes' kept values and runs (none without runs)
    kept = np.flatnonzero(~rare[head:]) + head
    bucket = np.flatnonzero(rare[head:]) + head
    code_map = np.empty(len(noisy), dtype=np.int64)
    for code, members in enumerate(groups):
        code_map[members] = code
    code_map[kept] = len(groups) + np.arange(kept.size)
    counts = np.concatenate([[float(noisy[members].sum()) for members in groups], noisy[kept]])
    if bucket.size:
        code_map[bucket] = len(groups) + kept.size
        total = float(noisy[bucket].sum())
        counts = np.append(counts, total if total >= threshold or not floor else 0.0)
    return code_map, counts


def _runs(noisy: np.ndarray, threshold: float) -> list[list[int]]:
    """The codes of ordered values in groups: each kept value alone, each run of adjacent rare
    values cut left to right where its positive noisy counts reach ``threshold`` (the remainder
    joins the run's last group)."""
    groups: list[list[int]] = []
    v = 0
    while v < len(noisy):
        if noisy[v] >= threshold:
            groups.append([v])
            v += 1
            continue
        start, group, acc = len(groups), [], 0.0
        while v < len(noisy) and noisy[v] < threshold:
            group.append(v)
            acc += max(float(noisy[v]), 0.0)
            v += 1
            if acc >= threshold:
                groups.append(group)
                group, acc = [], 0.0
        if group and len(groups) > start:
            groups[-1].extend(group)
        elif group:
            groups.append(group)
    return groups


def expand(codes: np.ndarray, code_map: np.ndarray, noisy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Back to original codes: a merged value becomes one of its values, drawn with probabilities
    proportional to their (non-negative) noisy counts, uniform if all are 0. Records and values are
    grouped by merged code once (stable sorts), so many runs cost no pass over the records each."""
    inverse = np.full(code_map.max() + 1, -1)
    singles = np.bincount(code_map, minlength=len(inverse)) == 1
    inverse[code_map[singles[code_map]]] = np.flatnonzero(singles[code_map])
    codes = codes.astype(np.int64)
    out = inverse[codes]
    merged = np.flatnonzero(~singles)  # each merged value, in code order
    if not merged.size:
        return out
    at = np.flatnonzero(out < 0)
    at = at[np.argsort(codes[at], kind="stable")]  # records by merged code, each in record order
    values = np.argsort(code_map, kind="stable")  # values by code, each in value order
    rows_from, rows_to = (np.searchsorted(codes[at], merged, side) for side in ("left", "right"))
    values_from, values_to = (np.searchsorted(code_map[values], merged, side) for side in ("left", "right"))
    weights_all = np.maximum(np.asarray(noisy, dtype=float), 0)
    for i in range(len(merged)):
        rows = at[rows_from[i] : rows_to[i]]
        if not rows.size:
            continue
        members = values[values_from[i] : values_to[i]]
        weights = weights_all[members]
        p = weights / weights.sum() if weights.sum() > 0 else np.full(len(members), 1 / len(members))
        out[rows] = rng.choice(members, size=rows.size, p=p)
    return out
