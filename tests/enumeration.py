"""Exact enumeration for privacy checks on small count tables."""

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
