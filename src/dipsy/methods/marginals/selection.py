r"""Which marginals to measure: PrivSyn's dependency scores, greedy selection and clique merging.

Zhang, Wang, Li, Honorio, Backes, He, Chen & Zhang, "PrivSyn: Differentially private data
synthesis", USENIX Security 2021, §4.1–4.2 (DenseMarg, Algorithms 1 and 2); METHODS.md §4.5.

- :func:`indif` — the dependency score ``InDif_{a,b} = || M_{a,b} − M_a ⊗ M_b / n ||_1`` of a
  pair's count table (§4.1), whose sensitivity is at most 4 (proof below);
- :func:`score_units` — the integer vector of every pair's InDif that privsyn measures (the
  ``compute`` of its :class:`~dipsy.privacy.measurement.Statistic`), and its L2 sensitivity
  (:func:`score_sensitivity`).
- :func:`allocate` — the budget split that minimises the expected noise error of a set of
  marginals, ``ρ_i = ρ c_i^{2/3} / Σ_j c_j^{2/3}`` (eq. 1).
- :func:`greedy_select` — Algorithm 1: add pairs while the sum of expected noise error (for the
  chosen) and dependency error (for the rest) falls.
- :func:`combine` — Algorithm 2: merge cliques of chosen pairs into larger marginals.

Everything here except :func:`indif` and :func:`score_units` is post-processing of noisy values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def indif(table: np.ndarray) -> float:
    r"""``InDif = Σ_{ij} | c_ij − r_i s_j / n |`` for a two-way count table (PrivSyn §4.1).

    **Sensitivity 4 under add/remove of one record.** Add one record to cell (k, l) of a table
    with n records, row total r = r_k and column total s = s_l. The count term moves by 1. The
    expected counts ``e_ij = r_i s_j / n`` move by ``−r_i s_j / (n(n+1))`` off row k and column l,
    by ``s_j (n − r)/(n(n+1))`` on row k off column l, by ``r_i (n − s)/(n(n+1))`` on column l off
    row k, and by ``(n r + n s + n − r s)/(n(n+1))`` at (k, l) — all of one sign per group. Their
    absolute values sum to

    .. math:: \frac{(n−r)(n−s) + 2(n−r)(n−s) + nr + ns + n − rs}{n(n+1)}
              = \frac{n^2 + 2(n−r)(n−s) + n}{n(n+1)} \le \frac{3n^2 + n}{n(n+1)} < 3,

    so by the triangle inequality ``|ΔInDif| < 1 + 3 = 4``; removal is the same step read
    backwards. (The paper states the bound; this is its proof, checked by enumeration in the
    tests.) An individual owning θ records moves it by less than 4θ (θ single steps).

    >>> indif(np.array([[10, 0], [0, 10]]))
    20.0
    >>> indif(np.array([[1, 2], [2, 4]]))
    0.0
    """
    t = np.asarray(table, dtype=float)
    n = t.sum()
    if n <= 0:
        return 0.0
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    return float(np.abs(t - expected).sum())


def score_units(engine, pairs: Sequence[tuple[str, str]], units: int) -> np.ndarray:
    r"""``round(units · InDif)`` of each pair's two-way count table, read from ``engine``.

    Confidential: only privsyn's dependency-score measurement calls it, through a session, and
    adds discrete Gaussian noise calibrated to :func:`score_sensitivity`.

    **L2 sensitivity.** Adding or removing an individual of at most θ rows moves each InDif by
    less than 4θ (θ single-row steps of :func:`indif`), so ``units · InDif`` by less than
    ``4·units·θ``; rounding moves it by at most one more. Over ``m`` pairs the integer vector
    moves by at most ``(4·units·θ + 1)·√m`` in L2.
    """
    out = []
    for a, b in pairs:
        table = engine.contingency((a, b), form="dense")
        out.append(indif(np.asarray(table.counts, dtype=np.int64).reshape(table.shape)))
    return np.rint(np.asarray(out, dtype=float) * units).astype(np.int64)


def score_sensitivity(pairs: int, units: int, theta: int) -> float:
    """The L2 sensitivity ``(4·units·θ + 1)·√pairs`` of :func:`score_units` (proof there).

    (The bound has slack: an integer that moves by less than ``4·units·θ + 1`` moves by at most
    ``4·units·θ``; the slack also covers the float rounding of the square root.)

    >>> score_sensitivity(4, 64, 1)
    514.0
    """
    return (4 * units * theta + 1) * math.sqrt(pairs)


def noise_error(cells: np.ndarray, rho: float, sensitivity: float = 1.0) -> float:
    r"""Expected L1 error of a set of marginals measured with budget ρ split by eq. 1.

    A cell with Gaussian noise of sd ``σ_i = Δ/\sqrt{2ρ_i}`` errs by ``σ_i \sqrt{2/π} = Δ/\sqrt{πρ_i}``
    on average, so marginal i errs by ``ψ_i = c_i Δ / \sqrt{π ρ_i}`` (§4.2); with eq. 1's split
    the sum is ``Δ (Σ c_i^{2/3})^{3/2} / \sqrt{π ρ}``.

    >>> round(noise_error(np.array([8.0]), 1 / math.pi), 6)
    8.0
    """
    weight = float(np.sum(np.asarray(cells, dtype=float) ** (2 / 3)))
    return sensitivity * weight**1.5 / math.sqrt(math.pi * rho)


def allocate(cells: Sequence[float], rho: float) -> np.ndarray:
    """``ρ_i = ρ c_i^{2/3} / Σ_j c_j^{2/3}`` (PrivSyn eq. 1), the split that minimises Σ ψ_i.

    >>> allocate([1, 8], 1.0).round(12).tolist()
    [0.2, 0.8]
    """
    w = np.asarray(cells, dtype=float) ** (2 / 3)
    return rho * w / w.sum()


def greedy_select(scores: np.ndarray, cells: np.ndarray, rho: float, sensitivity: float = 1.0) -> list[int]:
    """Algorithm 1 (DenseMarg): indices of the pairs to measure, in the order chosen.

    Starting from none, each round adds the pair that most lowers
    ``E(X) = Σ_{i∈X} ψ_i + Σ_{j∉X} φ_j`` (``ψ`` from :func:`noise_error` with the budget ρ that
    will measure the chosen pairs, ``φ_j`` the noisy dependency score of pair j); it stops when no
    pair lowers it.

    >>> greedy_select(np.array([500.0, 1.0, 300.0]), np.array([4, 4, 4]), rho=1.0)
    [0, 2]
    """
    phi = np.asarray(scores, dtype=float)
    c23 = np.asarray(cells, dtype=float) ** (2 / 3)
    chosen: list[int] = []
    free = np.ones(len(phi), dtype=bool)
    weight = 0.0
    error = float(phi.sum())
    scale = sensitivity / math.sqrt(math.pi * rho)
    while free.any():
        candidates = np.flatnonzero(free)
        left = float(phi[free].sum())
        errors = scale * (weight + c23[candidates]) ** 1.5 + left - phi[candidates]
        best = int(np.argmin(errors))
        if errors[best] >= error:
            break
        pick = int(candidates[best])
        chosen.append(pick)
        free[pick] = False
        weight += c23[pick]
        error = float(errors[best])
    return chosen


def combine(pairs: Sequence[tuple[int, int]], sizes: Sequence[int], gamma: int = 5000) -> list[tuple[int, ...]]:
    """Algorithm 2: merge cliques of the chosen pairs into larger marginals.

    In the graph whose edges are ``pairs``, cliques are taken from the largest size down to 3; a
    clique becomes one marginal when it has at most ``gamma`` cells and shares at most two
    attributes with those already merged. Pairs inside no merged clique stay as they are.

    >>> combine([(0, 1), (1, 2), (0, 2), (2, 3)], [2, 2, 2, 2])
    [(0, 1, 2), (2, 3)]
    """
    neighbours: dict[int, set[int]] = {}
    for a, b in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    by_size: dict[int, list[tuple[int, ...]]] = {}
    for clique in _cliques(neighbours, sizes, gamma):
        if len(clique) >= 3:
            by_size.setdefault(len(clique), []).append(clique)
    merged: list[tuple[int, ...]] = []
    used: set[int] = set()
    for size in sorted(by_size, reverse=True):
        for clique in sorted(by_size[size]):
            if len(used.intersection(clique)) <= 2:
                merged.append(clique)
                used.update(clique)
    covered = {frozenset(p) for m in merged for p in _pairs_of(m)}
    rest = dict.fromkeys(tuple(sorted(p)) for p in pairs if frozenset(p) not in covered)
    return merged + list(rest)


def _cliques(neighbours: dict[int, set[int]], sizes: Sequence[int], gamma: int):
    """Every clique (ascending tuples) with at most ``gamma`` cells, grown in ascending order.

    Cell counts only grow as a clique grows, so the search stops at ``gamma``."""

    def grow(clique: tuple[int, ...], cells: int, candidates: set[int]):
        yield clique
        for v in sorted(candidates):
            if v > clique[-1] and cells * sizes[v] <= gamma:
                yield from grow(clique + (v,), cells * sizes[v], candidates & neighbours[v])

    for v in sorted(neighbours):
        if sizes[v] <= gamma:
            yield from grow((v,), sizes[v], neighbours[v])


def _pairs_of(clique: tuple[int, ...]):
    return [(a, b) for i, a in enumerate(clique) for b in clique[i + 1 :]]
