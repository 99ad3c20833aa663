r"""AIM (McKenna, Mullins, Sheldon & Miklau, VLDB 2022): adaptive, iterative, workload-aware marginals.

The run spends a ρ-zCDP budget (give ``--epsilon`` and ``--delta``, or ``--rho``) over ``T`` nominal
rounds (option ``rounds``; default ``T = 16d`` for ``d`` columns, the paper's), following the
paper's Algorithm 1 and, for every constant, the authors' code (``mechanisms/aim.py`` of
private-pgm, whose function names are given below):

1. **Workload and candidates** (``compile_workload``). The workload ``W`` is every ``k``-way
   marginal (option ``workload``, ``k = 3`` by default, the paper's; ``k = min(k, d)``), each of
   weight ``c_s = 1`` (with declared analyses, their column sets too, heavier: below). The
   candidates are ``W``'s downward closure, and candidate ``r`` weighs ``w_r = Σ_{s ∈ W} c_s |r ∩ s|``.
2. **Initialisation** (``run``). ``σ₀ = sqrt(T / (2 · 0.9ρ))`` and ``ε₀ = sqrt(8 · 0.1ρ / T)``:
   every one-way marginal is measured with ``σ₀`` (cost ``0.9ρ/T`` each), and ``p̂₀`` is the
   graphical model fitted to them. These d measurements are fixed by :meth:`AIM.plan` from public
   inputs; the rest is declared as the adaptive total ``ρ − Σ one-way costs`` (the session's filter).
3. **Rounds** (``run``). Round t costs ``ρ_t = 1/(2σ_t²) + ε_t²/8``. When what remains is less
   than ``2ρ_t``, this round is the last and spends exactly what remains: ``σ`` from ``0.9`` of it,
   ``ε`` from the rest. Then:

   - the candidates are those whose addition keeps the model's junction tree within
     ``(ρ_used/ρ) · MAX_SIZE`` (option ``max_size_mb``, default 80 MB, the paper's; ``ρ_used``
     includes this round), or that lie in the downward closure of the cliques already measured
     (``filter_candidates``);
   - the exponential mechanism with ``ε_t`` picks ``r`` by the quality
     ``q_r = w_r (‖M_r(D) − M_r(p̂_{t−1})‖₁ − sqrt(2/π) σ_t n_r)``, ``n_r`` the cells of r, at
     sensitivity ``Δ = θ · max_r w_r`` (``worst_approximated``; proof below);
   - ``r`` is measured with the discrete Gaussian at ``σ_t`` and ``p̂_t`` re-estimated from all
     measurements, warm-started from ``p̂_{t−1}``;
   - annealing: if ``‖M_r(p̂_t) − M_r(p̂_{t−1})‖₁ ≤ sqrt(2/π) σ_t n_r``,
     then ``σ_{t+1} = σ_t/2`` and ``ε_{t+1} = 2ε_t`` (the round's cost four times larger).
4. **Generation**: a final estimation, then ``round(total)`` records (option ``rows``)
   drawn i.i.d. from the model along its junction tree (:mod:`.estimation`), then moved by a local
   search (:mod:`.refine`, option ``search``; 0 keeps the i.i.d. draws) towards the model's own
   marginals on the measured attribute sets: an i.i.d. draw of N records misses them by sampling
   error, which the search removes. By default it runs 30 sweeps on a release of at most
   ``CHUNK_ROWS`` (10⁶) records and none on a larger one, whose sampling error (∝ 1/√N) is small
   beside the model's while the search would cost about 90 s per 10⁶ records. A dipsy addition:
   on Adult (seeds 0–3) it took the 2-/3-way TVD from 0.0439/0.0926 to 0.0418/0.0906 at ε = 1 and
   from 0.0236/0.0600 to 0.0177/0.0542 at ε = 10. Post-processing: the search reads the model's
   tables only.

**Declared analyses** (option ``analysis_share``; :mod:`.declared`). When the domain, as released,
declares analyses (:attr:`~dipsy.domain.Domain.analyses`) with a response and a regressor to pair,
they shape the run in two ways, both fixed by :meth:`AIM.plan` from the domain alone:

- *Measured first.* A share ``s`` of ρ (default :data:`~.declared.ANALYSIS_SHARE` = 0.25) measures
  each declared pair's two-way marginal ``y × x`` (:func:`~dipsy.domain.analyses.declared_pairs`),
  and the whole table of an analysis naming two or more columns besides its response
  (:func:`~.declared.declared_tables`), each published as measured for its noise-aware intervals,
  with the discrete Gaussian at its ``ρ_i`` (``sρ`` split ∝ cells^(2/3),
  :func:`~.declared.declared_split`), right after the one-way marginals; ``p̂₀`` is fitted to both.
  AIM's own steps (one-way marginals and rounds, their σ₀, ε₀ and round costs) take
  ``(1 − s)ρ`` in place of ρ.
- *The workload's emphasis.* AIM is workload-aware: its workload is a set of weighted marginals
  ``W = {(s, c_s)}``, its candidates' weights ``w_r = Σ_{s ∈ W} c_s |r ∩ s|`` scale the quality
  scores of Alg. 1 (the authors' ``compile_workload`` takes ``(clique, weight)`` pairs; dipsy's
  default, like the paper's experiments, has ``c_s = 1`` for every k-way marginal). Each
  analysis's column set joins ``W`` (:func:`declared_workload`; its pairs instead when the set's
  table is over the model-size limit, so it could never be chosen) at the weight
  ``c = max(2, ⌈C(d, k) · s / ((1 − s) · A)⌉)`` for A declared sets (:func:`declared_weight`): the
  declared sets hold about the share ``s`` of the workload's total weight that their marginals
  hold of the budget, and each at least twice a default marginal. So the rounds favour the
  marginals the analyses need (their columns together, and every subset of them), while the
  exponential mechanism's sensitivity ``θ · max_r w_r`` grows with the largest weight, as the
  proof below requires. With ``s = 0`` (or no analyses) the run is AIM as before, bit for bit.

Estimation is Private-PGM (dipsy's NumPy mirror descent, behind :func:`.estimation.estimate`):
after every round up to ``iterations`` steps from the previous model's potentials and step size
(default 250 accelerated steps, where the code's ``max_iters`` runs 1000 plain ones), and up to
``final_iterations`` more before sampling (default 500 accelerated steps, where the code runs 1000
plain ones: from the last round's model, 500 reached a lower loss than the code's 1000 on the ACS
excerpt's final fit, 803.4 against 807.7, and on a 5.5-million-cell Adult model at ε = 10, 5,022
against 5,393; on Adult at ε = 1, seeds 0–3, the releases' mean 2-way / 3-way TVD was 0.0439 /
0.0927 with either, in half the final fit's time); a fit stops sooner once 50
steps in a row, twice, lower its loss by at most ``tolerance`` of it (default 0: never, as the
reference). Too few steps per round leave the model short of the new measurement, so the
annealing test (which compares the model before and after) fires early and the rounds run out
sooner: with mbi's plain steps on Adult at ε = 1, 300 steps gave 25 rounds and 2-way TVD 0.045,
1000 steps 35 rounds and 0.043, 100 steps 13 rounds and 0.057 (one seed each). 250 accelerated
steps from the warm start end within 1.2 % of the loss 1000 plain steps reach from it (500 end
below it; Adult, ε = 1, rounds 10, 21 and 30), and the releases are about as accurate: mean 2-way
/ 3-way TVD 0.0442 / 0.0929 over seeds 0–3 at these defaults, against 0.0440 / 0.0923 with 1000
steps per round (2-way over the seeds: 0.0439–0.0447 against 0.0433–0.0450).

dipsy's changes, all of them charged the same ρ or less: the noise is the discrete Gaussian (σ²
rounded up to a 1/1024 grid) instead of floating-point Gaussian noise, and the choice is the exact
exponential mechanism of :class:`~dipsy.privacy.selection.ExponentialSelection` (scores on a grid,
exact Bernoulli coins) instead of a softmax of floats; the one-way noise uses the σ₀ the paper
states; ``ε`` is rounded down to a rational. A measurement's sensitivity is θ (an individual of at
most θ rows; option ``theta``), which the paper's θ = 1 generalises. One change costs nothing: the
estimator's steps are accelerated (Nesterov's extrapolation with adaptive restart, :mod:`.descent`)
where the code's are plain mirror descent; it minimises the same loss, as post-processing, and
gets closer to its minimum in the same 1000 steps (hence the 250 per round above).

*Proof that the release is ρ-zCDP under add/remove of one individual of at most θ rows.*

- *Marginals.* An individual's θ rows each add one to one cell of a count table, so neighbouring
  tables differ by at most θ in L1 and hence in L2 (all rows in one cell is the worst case). The
  discrete Gaussian with ``σ² ≥ θ²/(2ρ_m)`` is then ``ρ_m``-zCDP (Canonne, Kamath & Steinke 2020,
  Thm 4; :class:`~dipsy.privacy.measurement.DiscreteGaussian`). This holds for the declared pairs' marginals as for the
  others; their ``ρ_i`` sum to at most ``sρ`` (σ² rounded up), the one-way marginals cost at most
  ``0.9(1 − s)ρ/T`` each, and the rounds get what the plan leaves of ρ (the adaptive total), so
  the plan declares exactly ρ. The pairs, their ``ρ_i`` and the declared workload sets and weight
  are functions of the domain's analyses and the options, public inputs, fixed before any read.
- *Selection.* In round t, ``p̂_{t−1}``, ``σ_t``, the candidate set and the weights (the declared
  sets' among them) are functions of earlier noisy outputs and public inputs only: fixed, given the
  past. For neighbours D, D',
  ``‖M_r(D) − M_r(D')‖₁ ≤ θ`` as above, so by the reverse triangle inequality
  ``|‖M_r(D) − e‖₁ − ‖M_r(D') − e‖₁| ≤ θ`` for any fixed ``e = M_r(p̂_{t−1})``; the bias term does not
  depend on the data. Hence ``|q_r(D) − q_r(D')| ≤ w_r θ ≤ θ max_r w_r = Δ`` for every candidate
  (the code's ``max_sensitivity``, for θ = 1). The exponential mechanism at sensitivity Δ is ε-DP (McSherry &
  Talwar 2007) and ε-bounded-range, hence ``ε²/8``-zCDP (Cesar & Rogers 2021, Lemma 3.4) — what
  :class:`~dipsy.privacy.selection.ExponentialSelection` charges.
- *Composition.* Each round's mechanisms and costs are chosen from earlier outputs (fully
  adaptive). The session admits each only while the composed total stays within the declared ρ —
  a privacy filter for zCDP (Rogers, Roth, Ullman & Vadhan 2016; Whitehouse, Ramdas, Rogers & Wu
  2023, Thm 1 for Rényi DP filters, hence zCDP) — so the composition of everything that ran is
  ρ-zCDP (Bun & Steinke 2016, Lemma 2.3). The last round is computed from what the session says
  remains, each part rounded down, so the total never passes ρ (a refused over-spend would abort
  the release, never release it).
- *Post-processing.* Estimation, the model and the records read only noisy outputs (Bun &
  Steinke 2016, Lemma 1.8). The choices written to release.json (the marginals measured, their σ²,
  the rounds and annealings) are such outputs. The domain's edit rules enter the final
  estimation as structural zeros (their forbidden cells held at 0, :func:`~.estimation.estimate`'s
  ``zeros``) where a measured marginal holds a rule's columns (:func:`held_rules`): the rules are
  public (the domain), so this too is a function of noisy outputs and public input, and it changes
  no cost.

The exact count tables the quality scores need are read inside the charged selection
measurements only, through the engine the session passes to the query; they are kept, keyed by
that engine, for the later rounds' scores (:class:`ExactTables`) and dropped at the end of
``fit``. The model holds only the fitted graphical model.

Neighbouring: add or remove one individual, who owns at most θ records (θ = 1: one record).
Public: the domain (its declared analyses among it), θ and the options.
"""

from __future__ import annotations

import itertools
import logging
import math
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any, cast

import numpy as np

from ...domain import Domain
from ...domain.analyses import declared_pairs
from ...domain.rules import RuleCells
from ...errors import DipsyError
from ...privacy import ZCDP
from ...privacy.budget import of_kind
from ...privacy.measurement import DiscreteGaussian, Measurement, Statistic, Table
from ...privacy.relation import ADD_REMOVE, Relation, individual
from ...privacy.rng import Randomness
from ...privacy.selection import ExponentialSelection, epsilon_for
from ...privacy.session import Session
from ..base import CHUNK_ROWS, MAX_ROWS, Model, Option, Plan, Synthesizer, concatenated, real, theta_option, whole
from .declared import analysis_share, analysis_share_option, declared_label, declared_split
from .estimation import CELL_BYTES, GraphicalModel, NoisyMarginal, estimate
from .junction import model_size
from .marginal import Marginal
from .refine import SWEEPS, progress_of, refine_records, search_option, sweeps_after_draws

logger = logging.getLogger(__name__)

#: The paper's model-size limit, in megabytes (``max_model_size=80`` in the code).
MAX_SIZE_MB = 80
#: Nominal rounds per column (Algorithm 1: T = 16d).
ROUNDS_PER_COLUMN = 16
#: The shares of a round's budget: measurement and selection (Algorithm 1: 0.9 and 0.1).
MEASURE_SHARE = 0.9
#: Mirror-descent iterations of each round's re-estimation (warm-started, accelerated: about as far
#: as the code's 1000 plain steps; module docstring) and of the final one (the code's 1000 plain
#: steps, which 500 accelerated ones pass: module docstring).
ITERATIONS = 250
FINAL_ITERATIONS = 500
#: An estimation stops early once its loss stops falling by more than this share per 50 steps; 0
#: runs every step, as the reference. On Adult at ε = 1 (seeds 0–3), 1e-6 gave a mean 2-way TVD of
#: 0.0445 against 0.0436 with every step, in about the same time: most fits still gain more than
#: 1e-6 of their loss per 50 steps at step 1000, and the annealing test reads the fit.
TOLERANCE = 0.0
#: The most mirror-descent iterations of one estimation: 100 times the default, long after it has
#: converged; each iteration passes over every table of the model, so 10⁹ would run for years.
MAX_ITERATIONS = 100_000
#: The most rounds T: the default 16 d is 224 for Adult's 14 columns and 1,600 for 100; each round
#: scores every candidate and re-fits the model, so 10⁴ rounds already take hours.
MAX_ROUNDS = 10_000
#: The largest model a run may ask for, in megabytes: 125 times the paper's 80. Mirror descent holds
#: the junction tree's tables several times over, so past 10 GB no workstation holds the model.
MAX_MODEL_MB = 10_000
#: The largest workload, in cells of its tables (int32 each): beyond it the exact tables the
#: quality scores need would not fit in memory comfortably.
MAX_WORKLOAD_CELLS = 1 << 27
#: sqrt(2/π): the expected |Z| of a standard normal (the quality's bias term).
HALF_NORMAL_MEAN = math.sqrt(2 / math.pi)
#: The least workload weight of a declared analysis's column set: twice a default marginal's (1).
DECLARED_MIN_WEIGHT = 2


def _workload(value: Any) -> int:
    if str(value).strip() not in ("1", "2", "3"):
        raise DipsyError(f"option workload must be 1, 2 or 3 (the order of the marginals), got {value!r}", "e.g. workload=3")
    return int(str(value).strip())


# -- the workload (``compile_workload``) -----------------------------------------------------------


def workload_weights(d: int, k: int, declared: Sequence[tuple[int, ...]] = (), weight: int = 0) -> dict[tuple[int, ...], int]:
    """The candidates (the downward closure of the workload) and their weights
    ``w_r = Σ_{s ∈ W} c_s |r ∩ s|``, smallest first. The workload ``W`` is every ``k``-way marginal
    of ``d`` columns at ``c_s = 1`` and each ``declared`` set (ascending column indices: a declared
    analysis's columns, :func:`declared_workload`) at ``c_s = weight``; a set in both counts twice.

    >>> workload_weights(3, 2)
    {(0,): 2, (1,): 2, (2,): 2, (0, 1): 4, (0, 2): 4, (1, 2): 4}
    >>> workload_weights(3, 2, [(0, 1)], 3)
    {(0,): 5, (1,): 5, (2,): 2, (0, 1): 10, (0, 2): 7, (1, 2): 7}
    """
    k = min(k, d)
    workload = [(s, 1) for s in itertools.combinations(range(d), k)] + [(tuple(s), weight) for s in declared]
    closure = sorted(
        {r for s, _ in workload for j in range(1, len(s) + 1) for r in itertools.combinations(s, j)},
        key=lambda r: (len(r), r),
    )
    return {r: sum(c * len(set(r) & set(s)) for s, c in workload) for r in closure}


def declared_workload(domain: Domain, limit_cells: float) -> tuple[tuple[int, ...], ...]:
    """The workload sets of the domain's declared analyses (ascending column indices, each once):
    each analysis's columns together when their table has at most ``limit_cells`` cells (the
    model-size limit: a larger marginal could never be chosen), else each of its pairs
    (:func:`~dipsy.domain.analyses.declared_pairs`). A function of the public domain alone.

    >>> import dataclasses
    >>> from dipsy.domain.analyses import Analysis
    >>> d = Domain.from_sizes({"a": 2, "y": 3, "b": 4})
    >>> d = dataclasses.replace(d, analyses=(Analysis("y ~ a + C(b)"),))
    >>> declared_workload(d, 24), declared_workload(d, 23)
    (((0, 1, 2),), ((0, 1), (1, 2)))
    """
    names = domain.names
    index = {n: i for i, n in enumerate(names)}
    sizes = domain.shape(names)
    out: list[tuple[int, ...]] = []
    for a in domain.analyses:
        whole = tuple(sorted(index[c] for c in a.columns))
        if len(whole) < 2:
            continue
        if math.prod(sizes[i] for i in whole) <= limit_cells:
            sets = [whole]
        else:
            sets = [tuple(sorted((index[y], index[x]))) for y, x in declared_pairs((a,))]
        out.extend(s for s in sets if s not in out)
    return tuple(out)


def declared_weight(d: int, k: int, share: float, count: int) -> int:
    """The workload weight ``c`` of each of ``count`` declared sets: the declared sets together take
    the share ``s`` of the workload's weight that their marginals take of the budget,
    ``c · count / (|W| + c · count) ≈ s`` with ``|W| = C(d, k)`` default marginals of weight 1, so
    ``c = ⌈|W| s / ((1 − s) count)⌉``, and at least :data:`DECLARED_MIN_WEIGHT`.

    >>> declared_weight(14, 3, 0.25, 1), declared_weight(4, 3, 0.25, 1), declared_weight(4, 3, 0.5, 1)
    (122, 2, 4)
    """
    default = math.comb(d, min(k, d))
    return max(DECLARED_MIN_WEIGHT, math.ceil(default * share / ((1 - share) * count)))


def own_rho(rho: float, share: float) -> float:
    """AIM's own budget (one-way marginals and rounds): ``(1 − s)ρ``, and ``ρ`` itself at ``s = 0``."""
    return rho if share == 0 else (1 - share) * rho


def downward_closure(cliques: Sequence[tuple[int, ...]]) -> set[tuple[int, ...]]:
    """Every non-empty subset (ascending tuple) of every clique."""
    return {r for c in cliques for j in range(1, len(c) + 1) for r in itertools.combinations(sorted(c), j)}


def filter_candidates(
    weights: dict[tuple[int, ...], int], measured: Sequence[tuple[int, ...]], sizes: Sequence[int], limit_cells: float
) -> list[tuple[int, ...]]:
    """The candidates AIM may choose this round (the code's ``filter_candidates``): those whose addition keeps
    the junction tree within ``limit_cells``, and those already in the downward closure of the
    measured cliques (free: they add nothing to the model).

    >>> filter_candidates({(0,): 1, (1,): 1, (0, 1): 2}, [(0,), (1,)], [10, 10], 99)
    [(0,), (1,)]
    """
    measured = sorted({tuple(sorted(c)) for c in measured})
    free = downward_closure(measured)
    out = []
    for r in weights:
        if r in free:
            out.append(r)
        elif math.prod(sizes[a] for a in r) <= limit_cells and model_size(sizes, measured + [r]) <= limit_cells:
            out.append(r)
    return out


def held_rules(rules: Sequence[RuleCells], measured: Sequence[NoisyMarginal]) -> list[RuleCells]:
    """The rules whose columns a measured marginal holds (a clique of the model already): their
    forbidden cells are structural zeros of :func:`~.estimation.estimate`.

    A rule whose columns no measured marginal holds is left to rejection (:mod:`dipsy.methods.enforce`):
    as a clique of its own it would grow the junction tree (on the ACS excerpt, its 16 rules made
    a 2-way model of 9,061 cells instead of 1,097, and the fit three times as slow).

    >>> from dipsy.domain.rules import Rule
    >>> from dipsy.domain.columns import Column
    >>> rule = Rule.from_dict({"name": "r", "forbidden": {"columns": ["a", "b"], "combinations": [[1, 1]]}})
    >>> cells = RuleCells(rule, rule.forbidden({c: Column(c, "integer", lower=0, upper=1) for c in "ab"}))
    >>> one = [NoisyMarginal(("a",), np.ones(2), 1.0), NoisyMarginal(("b",), np.ones(2), 1.0)]
    >>> len(held_rules([cells], one)), len(held_rules([cells], one + [NoisyMarginal(("b", "a"), np.ones((2, 2)), 1.0)]))
    (0, 1)
    """
    return [c for c in rules if any(set(c.columns) <= set(m.attrs) for m in measured)]


# -- the exact tables, read inside charged measurements only -----------------------------------------


class ExactTables:
    """The exact count tables of the candidates, read from an engine and kept for that engine only.

    :meth:`table` is called by the quality statistic (a query, run by the session after it has
    charged the selection), with the engine the session passes it. A table is read once per
    engine: a workload marginal from the engine, its subsets summed from it. The tables are keyed
    by the engine (weakly) so that nothing without the engine can reach them; :meth:`clear` drops
    them when ``fit`` ends.
    """

    def __init__(self, names: Sequence[str], sizes: Sequence[int], workload: Sequence[tuple[int, ...]]) -> None:
        self.names, self.sizes = tuple(names), tuple(sizes)
        self.workload = tuple(workload)
        self._by_engine: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()

    def table(self, engine: Any, r: tuple[int, ...]) -> np.ndarray:
        tables = self._by_engine.setdefault(engine, {})
        if r not in tables:
            holder = next((s for s in tables if set(r) < set(s)), None)
            if holder is None:
                holder = next((s for s in self.workload if set(r) <= set(s)), r)
                if holder not in tables:
                    counts = engine.contingency(tuple(self.names[a] for a in holder), form="dense").counts
                    counts = np.asarray(counts).reshape([self.sizes[a] for a in holder])
                    tables[holder] = counts.astype(np.int32 if counts.max(initial=0) < 2**31 else np.int64)
            if holder != r:
                tables[r] = tables[holder].sum(axis=tuple(i for i, a in enumerate(holder) if a not in r))
        return tables[r]

    def clear(self) -> None:
        self._by_engine = weakref.WeakKeyDictionary()


def qualities(
    engine: Any,
    exact: ExactTables,
    candidates: Sequence[tuple[int, ...]],
    estimates: Sequence[np.ndarray],
    weights: Sequence[float],
    bias: Sequence[float],
) -> np.ndarray:
    """The quality ``q_r = w_r (‖M_r(D) − M_r(p̂)‖₁ − b_r)`` of every candidate, ``b_r = sqrt(2/π) σ n_r``
    the expected L1 norm of the noise a measurement of r would add (read inside the selection)."""
    out = np.empty(len(candidates))
    for i, (r, est, w, b) in enumerate(zip(candidates, estimates, weights, bias)):
        out[i] = w * (float(np.abs(exact.table(engine, r) - est).sum()) - b)
    return out


# -- the method ------------------------------------------------------------------------------------


class AIM(Synthesizer):
    """AIM, ρ-zCDP; see the module docstring for the algorithm and the guarantee."""

    budget: ZCDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "aim"
    summary = (
        "AIM (McKenna et al. 2022): one-way marginals, then rounds that choose the worst-estimated workload marginal "
        "by the exponential mechanism and measure it, a graphical model (Private-PGM) fitted after each; records "
        "drawn from the model; ρ-zCDP (give --epsilon and --delta, or --rho)"
    )
    definition = "zCDP"
    relations = (ADD_REMOVE,)
    multiple_sets = False
    options = (
        theta_option(),
        Option("workload", _workload, "order of the workload's marginals: all 3-way (default), 2-way or 1-way"),
        Option(
            "rounds",
            whole("rounds", 1, MAX_ROUNDS, 224),
            "nominal rounds T (default 16 × the number of columns; at least the number of columns)",
        ),
        Option(
            "max_size_mb",
            real("max_size_mb", 0.0, MAX_MODEL_MB, open_low=True, example=MAX_SIZE_MB),
            f"largest model, in megabytes of its junction tree's tables (default {MAX_SIZE_MB})",
        ),
        Option(
            "iterations",
            whole("iterations", 1, MAX_ITERATIONS, ITERATIONS),
            f"mirror-descent iterations of each round's re-estimation (default {ITERATIONS})",
        ),
        Option(
            "final_iterations",
            whole("final_iterations", 1, MAX_ITERATIONS, FINAL_ITERATIONS),
            f"mirror-descent iterations of the final estimation (default {FINAL_ITERATIONS})",
        ),
        Option(
            "tolerance",
            real("tolerance", 0.0, 1.0, example=1e-6),
            "an estimation stops once 50 steps in a row, twice, lower its loss by at most this share (default 0: "
            "every iteration runs)",
        ),
        Option("rows", whole("rows", 1, MAX_ROWS, 1000), "synthetic rows (a public choice); default the model's noisy total"),
        search_option(
            f"sweeps of local search that move the drawn records towards the model's marginals on the measured sets "
            f"(default {SWEEPS} for a release of at most {CHUNK_ROWS:,} records, 0 above; 0: the i.i.d. draws as they are)",
        ),
        Option(
            "analysis_share",
            analysis_share_option,
            "share of ρ for the two-way marginals the domain's declared analyses need, measured first; their column "
            "sets also join the workload at a larger weight (default 0.25 when the domain declares analyses, else 0)",
        ),
    )

    def relation_for(self, relation: Relation) -> Relation:
        return individual(self.settings.get("theta", 1))

    def rounds(self, d: int) -> int:
        t = self.settings.get("rounds", ROUNDS_PER_COLUMN * d)
        if t < d:
            raise DipsyError(
                f"option rounds={t} is below the number of columns ({d}): the one-way marginals alone would cost "
                f"{MEASURE_SHARE * d / t:.2f}ρ",
                f"give rounds={d} or more, or leave it out (16 × {d})",
            )
        return t

    def plan(self, n: int | None, domain: Domain) -> Plan:
        names = domain.names
        sizes = domain.shape(names)  # every column needs cells: numeric columns need bins
        d, theta, rho = len(names), self.relation.theta, self.budget.rho
        T = self.rounds(d)
        k = min(self.settings.get("workload", 3), d)
        limit_mb = self.settings.get("max_size_mb", MAX_SIZE_MB)
        # the declared analyses (public: the domain): their share, pairs and workload sets
        share = analysis_share(self.settings, domain)
        split = declared_split(domain, share * rho) if share > 0 else []
        declared = declared_workload(domain, limit_mb * 2**20 / CELL_BYTES) if share > 0 else ()
        weight = declared_weight(d, k, share, len(declared)) if declared else 0
        cells = sum(math.prod(sizes[a] for a in s) for s in itertools.combinations(range(d), k))
        cells += sum(math.prod(sizes[a] for a in s) for s in declared)
        if cells > MAX_WORKLOAD_CELLS:
            raise DipsyError(
                f"the {k}-way workload over these {d} columns has {cells:,} cells, too many to score in memory",
                "use option workload=2, fewer columns (--columns), or coarser bins",
            )
        one_way = DiscreteGaussian.for_budget(ZCDP(MEASURE_SHARE * own_rho(rho, share) / T), theta)
        measurements = tuple(
            Measurement(
                f"{self.name}: one-way marginal {name}, discrete Gaussian σ² = {one_way.sigma2}",
                Table((name,)),
                one_way,
                self.relation,
            )
            for name in names
        )
        pair_noise = [DiscreteGaussian.for_budget(ZCDP(r), theta) for _, r in split]
        measurements += tuple(
            Measurement(
                f"{self.name}: {declared_label(columns)}, discrete Gaussian σ² = {noise.sigma2}",
                Table(columns),
                noise,
                self.relation,
                published=True,
            )
            for (columns, _), noise in zip(split, pair_noise)
        )
        adaptive = rho - sum(of_kind(m.cost, ZCDP).rho for m in measurements)
        params = {
            "theta": theta,
            "workload": k,
            "rounds": T,
            "max_size_mb": self.settings.get("max_size_mb", MAX_SIZE_MB),
            "iterations": self.settings.get("iterations", ITERATIONS),
            "final_iterations": self.settings.get("final_iterations", FINAL_ITERATIONS),
            "tolerance": self.settings.get("tolerance", TOLERANCE),
            "search": self.settings.get("search", "default"),
            "one_way_sigma2": str(one_way.sigma2),
        }
        if share > 0:
            params |= {
                "analysis_share": share,
                "declared_pairs": [list(p) for p, _ in split if len(p) == 2],
                **({"declared_tables": [list(p) for p, _ in split if len(p) > 2]} if any(len(p) > 2 for p, _ in split) else {}),
                "declared_workload": [[names[a] for a in s] for s in declared],
                "declared_weight": weight,
            }
        own = f"(1 − {share:g})ρ" if share > 0 else "ρ"
        mechanism = (
            f"AIM (McKenna, Mullins, Sheldon & Miklau 2022, Alg. 1): discrete Gaussian one-way marginals at "
            f"{MEASURE_SHARE:g}{own}/{T} each, then rounds of an exact exponential-mechanism choice among the {k}-way "
            f"workload's marginals ({1 - MEASURE_SHARE:.1g} of the round's ρ) and a discrete Gaussian measurement of the "
            f"chosen one ({MEASURE_SHARE:g}); graphical-model estimation (Private-PGM) and sampling are post-processing"
        )
        if share > 0:
            shown = ", ".join(" × ".join(columns) for columns, _ in split)
            mechanism += (
                f"; before the rounds, the tables of the domain's declared analyses ({shown}) with discrete "
                f"Gaussian noise at {share:g}ρ together, published as measured, split ∝ cells^(2/3), and the analyses' column sets in the "
                f"workload at weight {weight} (a default marginal's is 1)"
            )
        composition = (
            "zCDP composition of the one-way marginals and the rounds, each round's choice and measurement "
            "adaptive: a privacy filter bounds them by the declared remainder of ρ"
            if share == 0
            else "zCDP composition of the one-way marginals, the declared analyses' two-way marginals (fixed in advance "
            f"from the public domain, {share:g}ρ together) and the rounds, each round's choice and measurement "
            "adaptive: a privacy filter bounds them by the declared remainder of ρ"
        )
        public = (*self.public(None), f"θ = {theta}, the most rows one individual owns")
        return Plan(
            measurements,
            self.relation,
            public,
            mechanism,
            composition,
            params,
            adaptive=ZCDP(adaptive),
            adaptive_label=f"{self.name}: the rounds (exponential-mechanism choices and discrete Gaussian marginals)",
        )

    def fit(self, session: Session, plan: Plan) -> AIMModel:
        names = session.domain.names
        sizes = session.domain.shape(names)
        size_of = dict(zip(names, sizes))
        d, theta, rho = len(names), self.relation.theta, self.budget.rho
        T = plan.parameters["rounds"]
        k = plan.parameters["workload"]
        iterations, final_iterations = plan.parameters["iterations"], plan.parameters["final_iterations"]
        tol = plan.parameters.get("tolerance", TOLERANCE) or None
        limit_mb = plan.parameters["max_size_mb"]
        share = float(plan.parameters.get("analysis_share", 0.0))
        index = {name: a for a, name in enumerate(names)}
        declared = [tuple(index[c] for c in s) for s in plan.parameters.get("declared_workload", [])]
        weights = workload_weights(d, k, declared, int(plan.parameters.get("declared_weight", 0)))
        exact = ExactTables(names, sizes, list(itertools.combinations(range(d), k)) + declared)
        rules = session.domain.rule_cells  # public: structural zeros of the models fitted (held_rules)

        # initialisation: the one-way marginals at σ₀ (then the declared analyses' pairs), and p̂₀
        measured: list[NoisyMarginal] = []
        history: list[dict[str, Any]] = []
        cliques: list[tuple[int, ...]] = []
        for m in plan.measurements:
            columns = cast(Table, m.query).columns
            out = np.asarray(session.measure(m), dtype=float).reshape([size_of[c] for c in columns])
            first = m.mechanism_as(DiscreteGaussian)
            measured.append(NoisyMarginal(columns, out, first.sd))
            cliques.append(tuple(sorted(index[c] for c in columns)))
            entry: dict[str, Any] = {"round": 0, "marginal": list(columns), "sigma2": str(first.sigma2)}
            history.append(entry | ({"declared": True} if len(columns) > 1 else {}))
        session.report(f"{self.name}: estimating from the one-way marginals" + (" and the declared pairs" if share else ""))
        model = estimate(size_of, measured, iterations=iterations, tol=tol)

        own = own_rho(rho, share)  # the declared pairs took the rest
        rho_measure, rho_select = MEASURE_SHARE * own / T, (1 - MEASURE_SHARE) * own / T
        annealings: list[int] = []
        t = 0
        try:
            while True:
                t += 1
                remaining = of_kind(session.remaining(), ZCDP).rho
                last = remaining < 2 * (rho_measure + rho_select)  # the last round spends what remains
                if last:
                    noise = DiscreteGaussian.for_budget(ZCDP(MEASURE_SHARE * remaining), theta)
                    eps = epsilon_for(remaining - noise.cost.rho)
                else:
                    noise = DiscreteGaussian.for_budget(ZCDP(rho_measure), theta)
                    eps = epsilon_for(rho_select)
                used = of_kind(session.spent, ZCDP).rho + noise.cost.rho + float(eps * eps / 8)
                limit_cells = limit_mb * 2**20 / CELL_BYTES * min(used / rho, 1.0)
                candidates = filter_candidates(weights, cliques, sizes, limit_cells)
                r = self._select(session, model, exact, candidates, weights, noise, eps, t)
                columns = tuple(names[a] for a in r)
                m = Measurement(
                    f"{self.name}: round {t}, marginal {' × '.join(columns)}, discrete Gaussian σ² = {noise.sigma2}",
                    Table(columns),
                    noise,
                    self.relation,
                )
                y = np.asarray(session.measure(m), dtype=float).reshape([sizes[a] for a in r])
                measured.append(NoisyMarginal(columns, y, noise.sd))
                cliques.append(r)
                before = model.project(columns)
                left = of_kind(session.remaining(), ZCDP).rho
                session.report(f"{self.name}: round {t}: {' × '.join(columns)}, ρ left {left:.3g} of {rho:.3g}; estimating", t, T)
                model = estimate(size_of, measured, iterations=iterations, warm=model, tol=tol)
                change = float(np.abs(model.project(columns) - before).sum())
                history.append(
                    {
                        "round": t,
                        "marginal": list(columns),
                        "sigma2": str(noise.sigma2),
                        "epsilon": float(eps),
                        "candidates": len(candidates),
                    }
                )
                logger.info(
                    "aim round %d: %s (σ = %.1f, ε = %.4g, %d candidates), ρ spent %.6g of %.6g",
                    t,
                    columns,
                    noise.sd,
                    float(eps),
                    len(candidates),
                    of_kind(session.spent, ZCDP).rho,
                    rho,
                )
                if last:
                    break
                if change <= HALF_NORMAL_MEAN * noise.sd * math.prod(sizes[a] for a in r):  # annealing
                    rho_measure, rho_select = 4 * rho_measure, 4 * rho_select
                    annealings.append(t)
        finally:
            exact.clear()
        session.report(f"{self.name}: final estimation")
        # the rules as structural zeros of the model the records are drawn from, in the final fit only:
        # held in every round's fit they slowed the release (ACS excerpt without its income columns,
        # 2-way workload: 695 s against 373 s)
        held = held_rules(rules, measured)
        zeros = [(c.columns, c.forbidden) for c in held]
        model = estimate(size_of, measured, iterations=final_iterations, warm=model, zeros=zeros, tol=tol)
        return AIMModel(
            model,
            self.settings.get("rows"),
            tuple(history),
            tuple(annealings),
            t,
            tuple(c.name for c in held),
            self.settings.get("search"),
        )

    def _select(
        self,
        session: Session,
        model: GraphicalModel,
        exact: ExactTables,
        candidates: list[tuple[int, ...]],
        weights: dict[tuple[int, ...], int],
        noise: DiscreteGaussian,
        eps: Fraction,
        t: int,
    ) -> tuple[int, ...]:
        """The exponential mechanism over ``candidates`` by their quality, at Δ = θ max w_r."""
        names = model.names
        estimates = [model.project(tuple(names[a] for a in r)) for r in candidates]
        bias = [HALF_NORMAL_MEAN * noise.sd * est.size for est in estimates]
        w = [float(weights[r]) for r in candidates]
        sensitivity = self.relation.theta * max(weights[r] for r in candidates)
        query = Statistic(
            f"the qualities (AIM) of {len(candidates)} candidate marginals in round {t}",
            partial(qualities, exact=exact, candidates=tuple(candidates), estimates=estimates, weights=w, bias=bias),
        )
        choice = Measurement(
            f"{self.name}: round {t}, choice among {len(candidates)} marginals, exponential mechanism "
            f"ε = {float(eps):.6g}, sensitivity {sensitivity}",
            query,
            ExponentialSelection.for_epsilon(eps, sensitivity),
            self.relation,
        )
        try:
            return candidates[int(session.measure(choice))]
        finally:
            estimates.clear()  # the statement keeps the measurement, and so the query: not its tables


@dataclass(frozen=True, eq=False)
class AIMModel(Model):
    """The fitted graphical model (post-processing of the noisy measurements) and what AIM chose."""

    model: GraphicalModel
    rows: int | None
    history: tuple[dict[str, Any], ...]
    annealings: tuple[int, ...]
    rounds: int
    #: The edit rules whose forbidden cells the model holds at 0 (structural zeros of the estimation).
    zeros: tuple[str, ...] = ()
    #: Sweeps of local search after each chunk's i.i.d. draw (:mod:`.refine`) as the option gave them;
    #: None: the default (:attr:`sweeps`).
    search: int | None = None

    sets = 1

    def choices(self) -> dict[str, Any]:
        return {
            "measured_marginals": [dict(h) for h in self.history],
            "rounds_run": self.rounds,
            "annealed_after_rounds": list(self.annealings),
            "model_cells": self.model.size(),
            "structural_zeros": list(self.zeros),
            "estimated_total": self.model.total,
            "search_sweeps": self.sweeps,
        }

    @property
    def records(self) -> int:
        """The records a release draws: the ``rows`` option, else the model's noisy total."""
        return self.rows or max(int(round(self.model.total)), 1)

    @property
    def sweeps(self) -> int:
        """The local search's sweeps per chunk: the option's, else 30 up to ``CHUNK_ROWS`` records, 0 above."""
        return sweeps_after_draws(self.search, self.records)

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray]:
        return concatenated(self.chunks(k, rand))

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray]]:
        """The records in chunks of ``rows``, each drawn when read, so a streamed set never holds
        more than a chunk: i.i.d. from the model, then (:attr:`sweeps` sweeps) moved towards the
        model's marginals on the measured sets, scaled to the chunk's records."""
        n, sweeps = self.records, self.sweeps
        targets = self._targets() if sweeps else []
        for start in range(0, n, rows):
            self.report(f"aim: drawing {n:,} records", start, n)
            drawn = self.model.sample(min(rows, n - start), rand)
            yield self._searched(drawn, targets, sweeps, rand) if sweeps else drawn

    def _targets(self) -> list[Marginal]:
        """The model's marginals on the measured attribute sets (each chunk's search scales them)."""
        names = list(self.model.names)
        measured = sorted({tuple(sorted(names.index(c) for c in h["marginal"])) for h in self.history})
        return [Marginal(s, self.model.project([names[a] for a in s])) for s in measured]

    def _searched(
        self, drawn: dict[str, np.ndarray], targets: list[Marginal], sweeps: int, rand: Randomness
    ) -> dict[str, np.ndarray]:
        g = self.model
        names = list(g.names)
        records = np.stack([np.asarray(drawn[name]) for name in names], axis=1)
        records = refine_records(
            records,
            targets,
            g.sizes,
            sweeps,
            rand.numpy,
            progress=progress_of(self.report, "aim", sweeps),
        )
        return {name: records[:, i] for i, name in enumerate(names)}


__all__ = [
    "AIM",
    "AIMModel",
    "ExactTables",
    "declared_weight",
    "declared_workload",
    "epsilon_for",
    "filter_candidates",
    "qualities",
    "workload_weights",
]
