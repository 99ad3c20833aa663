r"""Local search on synthetic records: single-value moves that lower the marginals' total L1 error.

GUM (:mod:`.gum`) copies and overwrites records target by target, and its rate decays to zero, so
it stops short of records that match all the targets at once: given all 91 *exact* two-way
marginals of Adult (an oracle, to see the estimator alone), GUM's records keep a mean two-way TVD
of 0.020. Local search over single values takes them much further: the same 91 exact marginals
end at 0.0054 (three-way TVD over the 256 benchmark triples 0.047 against GUM's 0.070). This
module is the search; privsyn and dpsyn run it after GUM, aim and mst after their i.i.d. draws
from the model.

The problem
-----------
Given records ``x ∈ ∏_j [0, s_j)^N`` and targets ``T_m`` (non-negative count tables over attribute
sets ``c_m``, each scaled to total ``N``), minimise

.. math::  L(x) = \sum_m \lVert C_m(x) - T_m \rVert_1,
           \qquad C_m(x)_v = \#\{ i : x_{i, c_m} = v \},

the objective GUM works on target by target (PrivSyn, Zhang et al. 2021, Sec. 5.1, the L1
distance between the records' marginal and the target). A *move* sets one value ``x_{ij}`` from
``u`` to ``u'``; it changes only the targets holding ``j``, each by one record leaving cell ``o``
and one entering cell ``e``:

.. math::  Δ_m = |C_o - 1 - T_o| - |C_o - T_o| + |C_e + 1 - T_e| - |C_e - T_e|,
           \qquad Δ = \sum_{m \ni j} Δ_m,

and the move is kept when ``Δ < 0`` (a strict fall of ``L``).

Algorithm
---------
A *sweep* proposes ``N d`` moves (as many as there are values). Moves come in batches of
``B = max(⌊N/10⌋, 1)`` distinct records and one attribute ``j`` drawn uniformly, each with a new
value ``u'`` uniform on ``[0, s_j)``; ``Δ`` is computed for the whole batch against the counts
before it. Moves in one batch see the same counts, so two of them into one under-filled cell would
both count the cell's deficit; to keep the batch's gains real, each target lets at most ``max(⌈T_e − C_e⌉, 1)``
kept moves enter a cell ``e`` and at most ``max(⌈C_o − T_o⌉, 1)`` leave a cell ``o`` (the first in
the batch's random order). A move into a cell whose target is 0 is never kept: the targets say
the cell is empty (a domain's edit rules hold their forbidden cells at 0 in the targets, see
:func:`~.marginal.held_at_zero`, so the search never moves a record into a cell a rule forbids,
wherever a target holds the rule's columns).

Everything is vectorised over a batch: each target keeps every record's cell, so ``o`` is one
gather and ``e = o + (u' − u) · stride_j``; the kept moves update the counts of their cells only
(``np.add.at``), so a table of many cells costs no more than a small one. Loops are
over batches and the targets of one attribute.

Privacy: post-processing. The search reads the records and the (noisy, consistent) targets only,
never the confidential data, and draws its proposals from the run's generator.

>>> rng = np.random.default_rng(3)
>>> x = np.stack([rng.integers(2, size=200), rng.integers(2, size=200)], axis=1)
>>> t = Marginal((0, 1), np.array([[100.0, 0.0], [0.0, 100.0]]))
>>> y = refine_records(x, [t], (2, 2), sweeps=20, rng=rng)
>>> int(np.abs(np.bincount(y[:, 0] * 2 + y[:, 1], minlength=4) - [100, 0, 0, 100]).sum())
0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..base import CHUNK_ROWS, Option, whole
from .marginal import Marginal

__all__ = ["refine_records", "MAX_SWEEPS", "SWEEPS", "search_option", "sweeps_after_draws", "progress_of"]

#: Sweeps a method runs by default. On Adult (seeds 0–1; the evaluation data, so a choice reported
#: as such) privsyn at ε = 10 reached 2-/3-way TVD 0.0148/0.0566 after 10 sweeps, 0.0142/0.0553
#: after 15, 0.0138/0.0540 after 30 and 0.0137/0.0538 after 60.
SWEEPS = 30

#: The most sweeps a method may ask for: each sweep proposes one move per value, and on Adult the
#: error stops falling well before 100.
MAX_SWEEPS = 1000

#: A batch of moves judged against the same counts is 1/BATCHES of the records. On Adult at ε = 10
#: (seeds 0–1) batches of N/25 and N/10 ended at the same error (2-/3-way TVD 0.0138/0.0540 and
#: 0.0138/0.0542), the larger in three quarters of the time: a batch's cost is mostly per move.
BATCHES = 10


@dataclass
class _Target:
    """One target in the search: its attributes, cell strides, target and current counts."""

    attributes: tuple[int, ...]
    strides: np.ndarray
    target: np.ndarray  # flat, scaled to N
    cells: np.ndarray  # each record's cell, kept up to date
    counts: np.ndarray  # flat, the records' counts, kept up to date

    def loss(self) -> float:
        return float(np.abs(self.counts - self.target).sum())


def _prepare(records: np.ndarray, targets: Sequence[Marginal], sizes: tuple[int, ...]) -> list[_Target]:
    n = records.shape[0]
    out = []
    for m in targets:
        attrs = tuple(int(a) for a in m.attributes)
        shape = tuple(sizes[a] for a in attrs)
        t = np.maximum(np.asarray(m.counts, dtype=np.float64), 0.0)
        if t.shape != shape:
            raise ValueError(f"the target over {attrs} has shape {t.shape}, the sizes say {shape}")
        t = t.ravel()
        t = t * (n / t.sum()) if t.sum() > 0 else np.full(t.size, n / t.size)
        strides = np.array([math.prod(shape[k + 1 :]) for k in range(len(attrs))], dtype=np.int64)
        cells = np.ravel_multi_index(tuple(records[:, a] for a in attrs), shape).astype(np.int32)
        out.append(_Target(attrs, strides, t, cells, np.bincount(cells, minlength=t.size).astype(np.float64)))
    return out


def search_option(meaning: str) -> Option:
    """The methods' ``search`` option: sweeps of the search, 0 to ``MAX_SWEEPS``."""
    return Option("search", whole("search", 0, MAX_SWEEPS, 1), meaning)


def sweeps_after_draws(search: int | None, records: int) -> int:
    """The sweeps after i.i.d. draws (aim, mst): the option's, else ``SWEEPS`` on a release of at
    most ``CHUNK_ROWS`` records and 0 above, where the draws' sampling error (∝ 1/√N) is small
    beside the model's and the search would cost about 90 s per 10⁶ records."""
    if search is not None:
        return search
    return SWEEPS if records <= CHUNK_ROWS else 0


def progress_of(report: Callable[[str, int, int], None], method: str, sweeps: int) -> Callable[[int, float], None]:
    """A progress callback for :func:`refine_records` that reports each sweep as ``method``'s step."""
    return lambda t, error: report(f"{method}: local search, L1 error {error:.3f}", t + 1, sweeps)


def _first_k(cells: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Which of the moves (in batch order) fit: at most ``max(⌈room⌉, 1)`` per cell, ``room[i]``
    the room of move ``i``'s cell (the same for every move into one cell)."""
    order = np.argsort(cells, kind="stable")
    sorted_cells = cells[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_cells)) + 1]
    rank = np.arange(cells.size) - np.repeat(starts, np.diff(np.r_[starts, cells.size]))
    fits = np.empty(cells.size, dtype=bool)
    fits[order] = rank < np.maximum(np.ceil(room[order]), 1)
    return fits


def refine_records(
    records: np.ndarray,
    targets: Sequence[Marginal],
    sizes: Sequence[int],
    sweeps: int = 30,
    rng: np.random.Generator | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> np.ndarray:
    """Lower ``Σ_m ||C_m(x) − T_m||_1`` by single-value moves (module docstring); returns new records.

    Parameters
    ----------
    records : numpy.ndarray
        ``N x d`` integer codes, column ``j`` in ``[0, sizes[j])`` (e.g. GUM's output). Not modified.
    targets : sequence of Marginal
        Non-negative count tables over attribute sets; each is scaled to total ``N``.
    sizes : sequence of int
        Number of categories of every column.
    sweeps : int
        Number of sweeps, each ``N d`` proposed moves; 0 returns a copy.
    rng : numpy.random.Generator, optional
        Source of the proposals; None draws a fresh one seeded by the operating system.
    progress : callable, optional
        Called as ``progress(sweep, error)`` after each sweep, ``error`` the mean over targets of
        ``||C_m − T_m||_1 / N`` (GUM's L1 error, in ``[0, 2]``).
    """
    sizes = tuple(int(s) for s in sizes)
    x = np.array(records, copy=True)
    if x.ndim != 2 or x.shape[1] != len(sizes):
        raise ValueError(f"records must be N x {len(sizes)}, got shape {x.shape}")
    if sweeps < 0:
        raise ValueError(f"sweeps must be 0 or more, got {sweeps}")
    n, d = x.shape
    prepared = _prepare(x, targets, sizes)
    if n == 0 or not prepared or sweeps == 0:
        return x
    rng = np.random.default_rng() if rng is None else rng
    holding = [[t for t in prepared if j in t.attributes] for j in range(d)]
    searched = [j for j in range(d) if holding[j] and sizes[j] > 1]
    if not searched:
        return x
    batch = max(1, n // BATCHES)
    per_sweep = max(1, (n * d) // batch)
    for sweep in range(sweeps):
        for _ in range(per_sweep):
            j = searched[int(rng.integers(len(searched)))]
            rows = rng.choice(n, size=batch, replace=False)
            old = x[rows, j].astype(np.int64)
            new = rng.integers(sizes[j], size=rows.size)
            shift = new - old
            delta = np.zeros(rows.size)
            moves = []
            keep = new != old
            for t in holding[j]:
                leave = t.cells[rows]
                enter = leave + shift * t.strides[t.attributes.index(j)]
                c_leave, t_leave = t.counts[leave], t.target[leave]
                c_enter, t_enter = t.counts[enter], t.target[enter]
                delta += np.abs(c_leave - 1 - t_leave) - np.abs(c_leave - t_leave)
                delta += np.abs(c_enter + 1 - t_enter) - np.abs(c_enter - t_enter)
                keep &= t_enter > 0  # never into a cell the target holds empty
                moves.append((t, leave, enter, t_enter - c_enter, c_leave - t_leave))
            keep &= delta < 0
            for _, leave, enter, deficit, excess in moves:  # the batch's gains stay real: cap the moves per cell
                if not keep.any():
                    break
                k = np.flatnonzero(keep)
                keep[k[~_first_k(enter[k], deficit[k])]] = False
                k = np.flatnonzero(keep)
                keep[k[~_first_k(leave[k], excess[k])]] = False
            if not keep.any():
                continue
            for t, leave, enter, _, _ in moves:  # only the cells moved touch the counts: big tables cost nothing more
                np.subtract.at(t.counts, leave[keep], 1.0)
                np.add.at(t.counts, enter[keep], 1.0)
                t.cells[rows[keep]] = enter[keep]
            x[rows[keep], j] = new[keep]
        if progress is not None:
            progress(sweep, sum(t.loss() for t in prepared) / (n * len(prepared)))
    return x
