r"""GUM, the Gradually Update Method of PrivSyn: records that match a set of marginals.

Zhang, Wang, Li, Honorio, Backes, He, Chen & Zhang, "PrivSyn: Differentially Private Data
Synthesis", USENIX Security 2021, Sec. 5 (``METHODS.md`` §4.5, "GUM record update"; DPSyn's use of
it for the NIST 2020 challenge is §4.4). GUM is post-processing: it reads only the (already noisy,
already consistent) target marginals, never the confidential data, so it costs no privacy budget.

The one-line use, given 1-way targets ``one_way``, targets ``targets`` (both lists of
:class:`~.marginal.Marginal` over columns with ``sizes`` categories) and a ``numpy.random.Generator``:

>>> rng = np.random.default_rng(7)
>>> sizes = (2, 2)
>>> one_way = [Marginal((0,), np.array([30.0, 70.0])), Marginal((1,), np.array([30.0, 70.0]))]
>>> targets = one_way + [Marginal((0, 1), np.array([[30.0, 0.0], [0.0, 70.0]]))]
>>> x, history = update_records(initial_records(one_way, sizes, 100, rng), targets, sizes, rng=rng)
>>> x.shape, bool(np.all(x[:, 0] == x[:, 1])), history[0] > 0.2, history[-1]
((100, 2), True, True, 0.0)

Algorithm (Sec. 5.2–5.3; notation of the paper)
-----------------------------------------------
Start from ``N`` records whose columns follow the 1-way targets independently ("singleton"
initialisation, :func:`initial_records`). In each iteration ``t = 0 … T-1`` compute every target's
L1 error ``Σ |n_s - n_t|`` (proportions) on the current records and visit the targets from the
largest error to the smallest. For one target, with target proportions ``n_t`` and current
proportions ``n_s`` per cell, and update rate ``α = α_t``:

* under-counted cell (``0 < n_s < n_t``): add ``min(n_t - n_s, α n_s) · N`` records;
* empty cell (``n_s = 0 < n_t``): add ``α n_t N`` records (``min(α, 1) n_t N``, see *Deviations*);
* over-counted cell (``n_s > n_t``): remove ``min(n_s - n_t, β n_s) · N`` records, where ``β`` makes
  the total removed equal the total added, so ``N`` never changes.

Removal picks records at random inside each over-counted cell; their rows are reused for the
additions. An empty cell gets *replacements*: the target's attributes of a removed row are
overwritten with the cell's values (the row's other attributes stay). An under-counted cell gets a
share ``r`` of *duplications* — a random existing record of that cell is copied whole into a removed
row — and ``1 - r`` of replacements. Strategy S5 (the paper's best): ``r = 0.5`` on even iterations,
``r = 1`` on odd ones. The rate follows a step decay, ``α_t = α_0 k^⌊t/s⌋`` with ``α_0 = 1``,
``k = 0.84``, ``s = 20`` (U4, :class:`StepDecay`).

Everything is vectorised over records and cells: a target's cell of every record is one
``np.ravel_multi_index``, its counts one ``np.bincount``, and the random records of each cell come
from one stable sort of a random permutation by cell (the first ``k`` of a cell in that order are a
uniform random ``k``-subset of it). The loops are over iterations and targets only.

Deviations from the paper (and why)
-----------------------------------
* Amounts are rounded by the largest-remainder method (ties broken at random) instead of
  ``round`` per cell: each cell still gets its amount rounded down or up, but the added and removed
  totals are equal integers, so ``N`` is kept exactly without a repair step.
* ``β`` is solved exactly (the total removed is piecewise linear in ``β``; one sort of the cells'
  break points ``(n_s - n_t)/n_s``) rather than by bisection: the same ``β`` the bisection converges to.
* An empty cell gets ``min(α, 1) n_t N``, not ``α n_t N``: the two agree for every ``α ≤ 1`` (all of
  the U4 schedule); the cap keeps a rate ``α > 1`` from overshooting ``n_t``, which would leave too
  few over-counted records to remove.
* Duplication sources are drawn without replacement inside the cell (a cell can supply at most
  ``α n_s N ≤ n_s N`` copies when ``α ≤ 1``); with ``α > 1`` they wrap around.
* Targets whose totals differ are each normalised to proportions (with a warning); the paper
  assumes consistent targets, for which that changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .marginal import Marginal

__all__ = ["StepDecay", "initial_records", "update_records"]

log = logging.getLogger(__name__)

#: The most update rounds a method may ask GUM for: 20 times PrivSyn's 50 and DPSyn's 60. The step
#: decay has brought the rate below 10⁻³ by round 800, so later rounds change next to nothing, and
#: each round passes over every record once per target.
MAX_ITERATIONS = 1000


@dataclass(frozen=True)
class StepDecay:
    """Step-decay update rate ``α_t = alpha0 · factor^⌊t / step⌋`` (PrivSyn Sec. 5.3, schedule U4).

    The PrivSyn default is ``StepDecay(1.0, 0.84, 20)``.

    >>> rate = StepDecay(1.0, 0.84, 20)
    >>> rate(0), rate(19), rate(20), round(rate(45), 4)
    (1.0, 1.0, 0.84, 0.7056)
    """

    alpha0: float = 1.0
    factor: float = 0.84
    step: int = 20

    def __post_init__(self) -> None:
        if not (np.isfinite(self.alpha0) and self.alpha0 > 0):
            raise ValueError(f"alpha0 must be a positive number, got {self.alpha0!r}")
        if not (np.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"factor must be a positive number, got {self.factor!r}")
        if isinstance(self.step, bool) or not isinstance(self.step, (int, np.integer)) or self.step < 1:
            raise ValueError(f"step must be a whole number >= 1, got {self.step!r}")

    def __call__(self, t: int) -> float:
        return float(self.alpha0 * self.factor ** (t // self.step))


def duplication_share(t: int) -> float:
    """Strategy S5 (PrivSyn Sec. 5.3 and appendix): share ``r`` of duplications among additions to
    under-counted cells — 0.5 on even iterations, 1.0 on odd ones."""
    return 0.5 if t % 2 == 0 else 1.0


# -- checks ------------------------------------------------------------------------------------------


def _whole(value: object, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
    return int(value)


def _check_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    sizes = tuple(sizes)
    if not sizes:
        raise ValueError("sizes is empty: give the number of categories of every column")
    return tuple(_whole(s, f"sizes[{j}]", 1) for j, s in enumerate(sizes))


def _proportions(m: Marginal, sizes: tuple[int, ...], what: str) -> np.ndarray:
    """The target's counts as flat proportions (C order), after checking them against ``sizes``."""
    if not isinstance(m, Marginal):
        raise ValueError(f"{what} must be a Marginal, got {type(m).__name__}")
    bad = [a for a in m.attributes if not 0 <= a < len(sizes)]
    if bad:
        raise ValueError(f"{what} has attributes {bad} outside the {len(sizes)} columns of sizes")
    shape = tuple(sizes[a] for a in m.attributes)
    counts = np.asarray(m.counts, dtype=np.float64)
    if counts.shape != shape:
        raise ValueError(f"{what} over attributes {m.attributes} has counts of shape {counts.shape}, but sizes give {shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError(
            f"{what} over attributes {m.attributes} has negative or non-finite counts; post-process it to non-negative first"
        )
    total = counts.sum()
    if total <= 0:
        raise ValueError(f"{what} over attributes {m.attributes} has total {total}; it must be positive")
    return (counts / total).ravel()


def _check_records(records: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    records = np.asarray(records)
    if records.ndim != 2 or records.shape[1] != len(sizes):
        raise ValueError(f"records must be an n x {len(sizes)} array (one column per size), got shape {records.shape}")
    if records.shape[0] < 1:
        raise ValueError("records is empty: GUM needs at least one record")
    if not np.issubdtype(records.dtype, np.integer):
        raise ValueError(f"records must hold integer codes, got dtype {records.dtype}")
    low, high = records.min(axis=0), records.max(axis=0)
    for j, s in enumerate(sizes):
        if low[j] < 0 or high[j] >= s:
            raise ValueError(f"column {j} of records has codes in [{low[j]}, {high[j]}], outside [0, {s - 1}]")
    return records


# -- building blocks ---------------------------------------------------------------------------------


def _apportion(x: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Round non-negative reals ``x`` to integers summing to ``total`` (largest remainder).

    Each entry becomes ``floor(x)`` or ``ceil(x)``; the ``total - Σ floor(x)`` largest fractional
    parts are rounded up, ties broken at random. Needs ``Σ floor(x) <= total <= Σ ceil(x)``.
    """
    base = np.floor(x)
    frac = x - base
    out = base.astype(np.int64)
    extra = total - int(out.sum())
    if extra < 0 or extra > int(np.count_nonzero(frac > 0)):
        raise ValueError(f"cannot round amounts summing to {x.sum()} to the total {total}")  # internal guard
    if extra:
        order = np.lexsort((rng.random(x.size), -frac))
        out[order[:extra]] += 1
    return out


def _codes_dtype(sizes: Sequence[int]) -> np.dtype:
    return np.min_scalar_type(max(sizes) - 1)


@dataclass(frozen=True)
class _Target:
    """One target prepared for the update loop: its columns, shape, proportions and cell values."""

    attributes: tuple[int, ...]
    shape: tuple[int, ...]
    p: np.ndarray  # flat target proportions n_t
    values: np.ndarray  # cells x len(attributes): the codes of each flat cell

    def cells(self, records: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(tuple(records[:, a] for a in self.attributes), self.shape)

    def error(self, records: np.ndarray) -> float:
        counts = np.bincount(self.cells(records), minlength=self.p.size)
        return float(np.abs(counts / records.shape[0] - self.p).sum())


def _prepare(targets: Sequence[Marginal], sizes: tuple[int, ...], dtype: np.dtype) -> list[_Target]:
    targets = list(targets)
    if not targets:
        raise ValueError("targets is empty: give at least one marginal to match")
    totals = []
    prepared = []
    for i, m in enumerate(targets):
        p = _proportions(m, sizes, f"targets[{i}]")
        totals.append(float(np.asarray(m.counts, dtype=np.float64).sum()))
        shape = tuple(sizes[a] for a in m.attributes)
        values = np.stack(np.unravel_index(np.arange(p.size), shape), axis=1).astype(dtype)
        prepared.append(_Target(tuple(m.attributes), shape, p, values))
    if not np.allclose(totals, totals[0], rtol=1e-6, atol=0):
        log.warning("targets have different totals (%s to %s); each is normalised to proportions", min(totals), max(totals))
    return prepared


def _removal(count: np.ndarray, cap: np.ndarray, total: float) -> np.ndarray:
    """Amounts ``min(cap, β · count)`` per over-counted cell with ``β`` such that they sum to ``total``.

    ``Σ min(cap_k, β c_k)`` is piecewise linear and increasing in ``β``, with break points
    ``b_k = cap_k / c_k``; sorting them gives ``β`` exactly (what the paper's bisection approaches).
    """
    if total <= 0:
        return np.zeros_like(cap)
    b = cap / count
    order = np.argsort(b)
    b, c, k = b[order], count[order], cap[order]
    cum_cap = np.cumsum(k)
    rest = c.sum() - np.cumsum(c)  # counts of cells not yet at their cap
    at_break = cum_cap + b * rest  # total removed when β = b_j
    j = int(np.searchsorted(at_break, total, side="right"))
    if j >= b.size:
        return cap.copy()
    done_cap = cum_cap[j - 1] if j else 0.0
    free = rest[j - 1] if j else c.sum()
    beta = (total - done_cap) / free
    return np.minimum(cap, beta * count)


def _update_one(records: np.ndarray, target: _Target, alpha: float, r: float, rng: np.random.Generator) -> None:
    """One GUM step for one target (PrivSyn Sec. 5.2), in place on ``records``."""
    n = records.shape[0]
    cell = target.cells(records)
    count = np.bincount(cell, minlength=target.p.size)
    want = target.p * n  # n_t N, the target count of each cell
    under = (count > 0) & (count < want)
    empty = (count == 0) & (want > 0)
    over = count > want

    # additions: min(n_t - n_s, α n_s) N for under-counted, α n_t N for empty cells
    add_real = np.zeros(count.size)
    add_real[under] = np.minimum(want[under] - count[under], alpha * count[under])
    add_real[empty] = min(alpha, 1.0) * want[empty]
    # removals: min(n_s - n_t, β n_s) N for over-counted cells, same total as the additions
    cap = np.where(over, count - want, 0.0)  # n_s N - n_t N; exactly the count when n_t = 0
    total = min(int(np.rint(add_real.sum())), int(np.floor(cap.sum() + 1e-9)))
    if total <= 0:
        return
    add = _apportion(add_real, total, rng)
    remove = np.zeros(count.size, dtype=np.int64)
    remove[over] = _apportion(_removal(count[over].astype(np.float64), cap[over], float(total)), total, rng)

    # S5: a share r of an under-counted cell's additions are duplications, the rest replacements
    dup = np.where(under, np.rint(r * add), 0).astype(np.int64)
    replace = add - dup

    # one random order of the records in the cells that lose records or lend copies
    involved = (remove > 0) | (dup > 0)
    idx = np.flatnonzero(involved[cell])
    idx = idx[rng.permutation(idx.size)]
    key = cell[idx]
    if count.size <= np.iinfo(np.uint16).max:
        key = key.astype(np.uint16)  # a radix sort for small keys
    order = np.argsort(key, kind="stable")
    by_cell = idx[order]
    sorted_cells = cell[by_cell]
    in_sort = np.where(involved, count, 0)
    start = np.cumsum(in_sort) - in_sort  # where each cell's block begins in ``by_cell``
    rank = np.arange(by_cell.size) - start[sorted_cells]

    slots = by_cell[rank < remove[sorted_cells]]  # random records of the over-counted cells
    slots = slots[rng.permutation(slots.size)]
    n_replace = int(replace.sum())

    # replacement: overwrite the target's attributes of a removed record with the cell's values
    repl_cells = np.repeat(np.arange(count.size), replace)
    records[np.ix_(slots[:n_replace], target.attributes)] = target.values[repl_cells]
    # duplication: copy a whole random record of the under-counted cell into a removed record's row
    dup_cells = np.repeat(np.arange(count.size), dup)
    if dup_cells.size:
        dup_start = np.cumsum(dup) - dup
        dup_rank = np.arange(dup_cells.size) - dup_start[dup_cells]
        sources = by_cell[start[dup_cells] + dup_rank % count[dup_cells]]
        records[slots[n_replace:]] = records[sources]


# -- public API ------------------------------------------------------------------------------------------


def initial_records(one_way: Sequence[Marginal], sizes: Sequence[int], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records whose columns follow the 1-way targets independently (PrivSyn Sec. 5.3, "singleton").

    Each column gets the counts ``n p_v`` of its 1-way target rounded by the largest-remainder
    method (deterministic proportional allocation: every count is within 1 of ``n p_v``; ties at
    random), then its values are shuffled, independently per column. A column without a 1-way
    target is allocated uniformly the same way.

    Parameters
    ----------
    one_way : sequence of Marginal
        At most one 1-attribute marginal per column; its counts (noisy, post-processed to be
        non-negative) are normalised to proportions.
    sizes : sequence of int
        Number of categories of every column; ``len(sizes)`` is the number of columns ``d``.
    n : int
        Number of records, at least 1.
    rng : numpy.random.Generator
        Source of the shuffles and the tie breaks.

    Returns
    -------
    numpy.ndarray
        ``n x d`` integer codes in the smallest unsigned dtype that holds ``max(sizes) - 1``.

    >>> x = initial_records([Marginal((1,), np.array([1.0, 3.0]))], (3, 2), 8, np.random.default_rng(1))
    >>> x.dtype, np.bincount(x[:, 1]).tolist(), sorted(np.bincount(x[:, 0]).tolist())
    (dtype('uint8'), [2, 6], [2, 3, 3])
    """
    sizes = _check_sizes(sizes)
    n = _whole(n, "n", 1)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    shares: dict[int, np.ndarray] = {}
    for i, m in enumerate(one_way):
        if not isinstance(m, Marginal) or len(m.attributes) != 1:
            got = m.attributes if isinstance(m, Marginal) else type(m).__name__
            raise ValueError(f"one_way[{i}] must be a 1-way Marginal, got attributes {got}")
        p = _proportions(m, sizes, f"one_way[{i}]")
        if m.attributes[0] in shares:
            raise ValueError(f"column {m.attributes[0]} has more than one 1-way target")
        shares[m.attributes[0]] = p
    records = np.empty((n, len(sizes)), dtype=_codes_dtype(sizes))
    for j, size in enumerate(sizes):
        p = shares.get(j, np.full(size, 1.0 / size))
        counts = _apportion(p * n, n, rng)
        records[:, j] = rng.permutation(np.repeat(np.arange(size), counts))
    return records


def update_records(
    records: np.ndarray,
    targets: Sequence[Marginal],
    sizes: Sequence[int],
    iterations: int = 50,
    rate: Callable[[int], float] = StepDecay(1.0, 0.84, 20),
    rng: np.random.Generator | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> tuple[np.ndarray, list[float]]:
    """Update records towards the target marginals with GUM (PrivSyn Sec. 5.2–5.3, ``METHODS.md`` §4.5).

    Parameters
    ----------
    records : numpy.ndarray
        ``N x d`` integer codes, column ``j`` in ``[0, sizes[j])`` (e.g. from :func:`initial_records`).
        Not modified; the result is a new array of the same dtype and ``N``.
    targets : sequence of Marginal
        The marginals to match (consistent, non-negative). Each is normalised to proportions, so
        totals that differ from ``N`` (or from each other) are tolerated.
    sizes : sequence of int
        Number of categories of every column.
    iterations : int
        Number of passes over all targets ``T`` (PrivSyn default 50).
    rate : callable
        Update rate ``α_t`` of iteration ``t``; default :class:`StepDecay` ``(1.0, 0.84, 20)`` (U4).
    rng : numpy.random.Generator, optional
        Source of the random record choices; None draws a fresh one seeded by the operating system.
    progress : callable, optional
        Called as ``progress(t, error)`` after iteration ``t`` with the mean L1 error then.

    Returns
    -------
    records : numpy.ndarray
        The updated records.
    history : list of float
        Mean over targets of the L1 error ``Σ_cells |n_s - n_t|`` (proportions, in ``[0, 2]``):
        ``history[0]`` for the input records, ``history[t + 1]`` after iteration ``t``
        (``iterations + 1`` values).
    """
    sizes = _check_sizes(sizes)
    iterations = _whole(iterations, "iterations", 0)
    if rng is None:
        rng = np.random.default_rng()
    elif not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    out = _check_records(records, sizes).copy(order="C")
    prepared = _prepare(targets, sizes, out.dtype)

    errors = np.array([tg.error(out) for tg in prepared])
    history = [float(errors.mean())]
    for t in range(iterations):
        alpha, r = float(rate(t)), duplication_share(t)
        if not (np.isfinite(alpha) and alpha > 0):
            raise ValueError(f"rate({t}) must be a positive number, got {alpha!r}")
        for i in np.argsort(-errors, kind="stable"):  # largest error first
            _update_one(out, prepared[i], alpha, r, rng)
        errors = np.array([tg.error(out) for tg in prepared])
        history.append(float(errors.mean()))
        log.debug("GUM iteration %d: alpha %.4g, mean L1 error %.5f", t, alpha, history[-1])
        if progress is not None:
            progress(t, history[-1])
    return out, history
