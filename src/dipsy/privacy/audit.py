"""Exact audits of count mechanisms: enumerate every data set, neighbour and output on small cases.

For a mechanism that releases a count vector with total n over a few cells, and whose output pmf
is known in closed form, the largest privacy loss ``max log p(y*|y) - log p(y*|x)`` over all
data sets ``y`` (total n), all substitution neighbours ``x`` and all outputs ``y*`` is the exact
ε of the mechanism on that case. The tests use it to check every derived parameter: the loss is at
most ε there and above ε below it.

>>> compositions(2, 2).tolist()
[[0, 2], [1, 1], [2, 0]]
"""

from __future__ import annotations

import itertools

import numpy as np


def compositions(n: int, cells: int) -> np.ndarray:
    """Every count vector of ``cells`` non-negative integers summing to ``n`` (stars and bars)."""
    rows = []
    for bars in itertools.combinations(range(n + cells - 1), cells - 1):
        edges = (-1, *bars, n + cells - 1)
        rows.append([edges[k + 1] - edges[k] - 1 for k in range(cells)])
    return np.array(rows)


def neighbours(y: np.ndarray) -> list[np.ndarray]:
    """Every x with the same total that moves one record of y from one cell to another."""
    out = []
    for i, j in itertools.permutations(range(len(y)), 2):
        if y[i] >= 1:
            x = y.copy()
            x[i] -= 1
            x[j] += 1
            out.append(x)
    return out


def largest_privacy_loss(log_pmf, n: int, cells: int) -> float:
    """max over y, its neighbours x and every output y* (total n) of log p(y*|y) - log p(y*|x).

    ``log_pmf(outputs, y)`` gives the log-probabilities of all ``outputs`` given the data ``y``.
    """
    outputs = compositions(n, cells)
    worst = -np.inf
    for y in compositions(n, cells):
        log_y = log_pmf(outputs, y)
        for x in neighbours(y):
            worst = max(worst, float(np.max(log_y - log_pmf(outputs, x))))
    return worst
