r"""Array-level modips for simulation studies: sanitize and draw ``θ*`` for ``reps × m`` sets at once.

For benchmarks that reproduce Bowen & Liu (S-003 §4; ``METHODS.md`` §2.3), where each of ``reps``
repetitions has its own original data (its own statistics) and releases ``m`` sets. No DataFrame,
no engine, no session: the caller passes the statistics (simulated data, not confidential). The
noise is exactly :class:`~dipsy.methods.modips.Modips`'s: the same mechanism
(:class:`~.noise.Sanitization`, built by its ``for_budget`` with the same components, scales and
samplers) randomises a whole ``(reps, m)`` batch at once, so each of the ``m`` sets of a
repetition spends ``ε/m``, and ``post="truncation"`` doubles the scales (eq. N6 of :mod:`.noise`).
So modips-truncation at ``ε`` here equals Bowen & Liu's truncation at ``ε/2``.

The synthetic records themselves are cheap to draw from ``θ*`` (e.g. a set's sample proportion is
``Binomial(n, θ*)/n``), so they are left to the caller.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...errors import DipsyError
from ...privacy.budget import PureDP
from ...privacy.rng import Randomness
from ...privacy.samplers import to_fraction
from . import models as M
from .noise import POSTS, Component, Sanitization, check_choice

NOISES = ("discrete", "continuous")


def _randomness(rand: Randomness | np.random.Generator | int | None) -> Randomness:
    """A :class:`Randomness` from one, a seed, None (the OS), or a NumPy Generator (seeding one from its stream)."""
    if isinstance(rand, Randomness):
        return rand
    if isinstance(rand, np.random.Generator):
        return Randomness.from_seed(int(rand.integers(2**63)))
    return Randomness.from_seed(rand)


def _sanitizer(epsilon: Any, m: int, components: list[Component], budget: str, post: str) -> Sanitization:
    """The mechanism of one of ``m`` sets of ``epsilon`` (the synthesizer's, for the same components)."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise DipsyError(f"m must be a whole number >= 1, got {m!r}", "e.g. m=10")
    return Sanitization.for_budget(PureDP(float(to_fraction(epsilon, "epsilon"))), components, budget, post, sets=int(m))


def _batch(x: Any, reps: int, m: int, dtype: type) -> np.ndarray:
    """A statistic given per repetition (shape ``(reps,)``, or a scalar) as an array ``(reps, m)``."""
    a: np.ndarray = np.asarray(x, dtype=dtype)
    if a.ndim == 0:
        a = np.full(reps, a)
    if a.shape != (reps,):
        raise DipsyError(f"a statistic has shape {a.shape}, expected a scalar or ({reps},)", "give one value per repetition")
    return np.repeat(a[:, None], m, axis=1)


def bernoulli_sets(
    s: Any,
    n: int,
    epsilon: float,
    m: int,
    post: str = "threshold",
    rand: Randomness | np.random.Generator | int | None = None,
    reps: int = 1,
    *,
    prior: tuple[float, float] = (1 / 3, 1 / 3),
    noise: str = "discrete",
) -> np.ndarray:
    """``θ*`` of shape ``(reps, m)`` for Bowen & Liu's study 1 (models (B1)–(B4)).

    Parameters
    ----------
    s
        Number of ones in each repetition's data: an int, or ``(reps,)`` ints.
    n, epsilon, m
        Rows (public), total budget per repetition, sets per repetition (each ``ε/m``).
    post
        ``threshold`` or ``truncation``.
    rand
        :class:`Randomness`, a seed, None (the OS), or a NumPy Generator.
    reps
        Repetitions.
    prior
        Beta ``(α, β)``; Kerman's neutral ``(1/3, 1/3)`` by default, as Bowen & Liu.
    noise
        ``discrete`` (exact discrete Laplace, as the synthesizer) or ``continuous`` (Bowen & Liu's
        real-valued ``s* = s + Lap(m/ε)``; same ε, floating point).

    >>> bernoulli_sets(30, 100, 1.0, 10, rand=7, reps=4).shape
    (4, 10)
    """
    post = check_choice("post", post, POSTS)
    noise = check_choice("noise", noise, NOISES)
    rand = _randomness(rand)
    components = M.bernoulli_components(n)
    if noise == "continuous":
        components = [replace(c, discrete=False) for c in components]
    mechanism = _sanitizer(epsilon, m, components, "split", post)
    values = _batch(s, reps, m, np.int64 if noise == "discrete" else float)
    (s_star,) = mechanism.randomise([values], rand)
    return M.draw_beta(s_star, n, (prior[0], prior[1]), rand.numpy)


def normal_sets(
    xbar: Any,
    s2: Any,
    n: int,
    lower: float,
    upper: float,
    epsilon: float,
    m: int,
    budget: str = "split",
    post: str = "threshold",
    rand: Randomness | np.random.Generator | int | None = None,
    reps: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """``(μ*, σ²*)``, each ``(reps, m)``, for Bowen & Liu's study 2 (models (M1)–(M6)).

    ``xbar`` and ``s2`` (the ``1/(n-1)`` variance) per repetition, scalars or ``(reps,)``; data
    bounds ``[lower, upper]`` public; ``budget`` ``split`` or ``non-split``.

    >>> mu, sigma2 = normal_sets(0.1, 1.0, 100, -4.0, 4.0, 1.0, 10, rand=1, reps=3)
    >>> mu.shape, sigma2.shape
    ((3, 10), (3, 10))
    """
    post = check_choice("post", post, POSTS)
    rand = _randomness(rand)
    components = M.normal_components(n, lower, upper)
    mechanism = _sanitizer(epsilon, m, components, budget, post)
    values = [_batch(xbar, reps, m, float), _batch(s2, reps, m, float)]
    mean_star, var_star = mechanism.randomise(values, rand)
    return M.draw_normal(mean_star, var_star, n, rand.numpy)


def multinomial_sets(
    counts: Any,
    epsilon: float,
    m: int,
    post: str = "threshold",
    rand: Randomness | np.random.Generator | int | None = None,
    *,
    alpha: float = 1 / 3,
    neighbouring: str = "substitute",
) -> np.ndarray:
    """``θ*`` of shape ``(reps, m, K)`` from cell counts of shape ``(reps, K)`` (models (C1)–(C4)).

    >>> multinomial_sets(np.array([[5, 3, 2]]), 1.0, 4, rand=2).shape
    (1, 4, 3)
    """
    post = check_choice("post", post, POSTS)
    rand = _randomness(rand)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2:
        raise DipsyError(f"counts have shape {counts.shape}, expected (reps, K)", "give one row of counts per repetition")
    reps, k = counts.shape
    if neighbouring not in ("substitute", "add-remove"):
        raise DipsyError(f"unknown neighbouring relation {neighbouring!r}", "use substitute or add-remove")
    n = int(counts.sum(axis=1).max()) if neighbouring == "substitute" else None
    if n is not None and np.any(counts.sum(axis=1) != n):
        raise DipsyError("under substitution every repetition must have the same n", "use add-remove, or equal totals")
    components = M.multinomial_components(n, k)
    mechanism = _sanitizer(epsilon, m, components, "split", post)
    values = np.repeat(counts[:, None, :], m, axis=1)
    (noisy,) = mechanism.randomise([values], rand)
    return M.draw_dirichlet(noisy, alpha, rand.numpy)


def mixed_sets(
    statistics: Any,
    n: int,
    lower: Any,
    upper: Any,
    epsilon: float,
    m: int,
    budget: str = "split",
    post: str = "threshold",
    rand: Randomness | np.random.Generator | int | None = None,
    *,
    alpha: float = 1 / 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(π*, μ*, Σ*)`` of shapes ``(reps, m, K)``, ``(reps, m, K, p)``, ``(reps, m, p, p)`` (study 3).

    ``statistics`` as :func:`~dipsy.methods.modips.models.mixed_statistics` gives them, one row
    per repetition: counts ``(reps, K)``, ``p`` centred cell sums ``(reps, K)`` (centred at the
    middle of the box ``[lower, upper]``), then the pooled ``W_jj`` and ``W_jl`` (``j < l``) as
    ``(reps,)``. Components, sensitivities and bounds are the synthesizer's (substitution, ``n``
    public; models (X1), (W1)–(W3)); Bowen & Liu's split budget is ``budget="split"`` (``ε/m``
    per set over ``1 + p + p(p+1)/2`` components).

    >>> from dipsy.methods.modips.models import mixed_statistics
    >>> st = mixed_statistics(np.array([0, 0, 1, 1, 1]), np.arange(10.).reshape(5, 2), 2, np.full(2, 5.))
    >>> pi, mu, sigma = mixed_sets([a[None] for a in st], 5, [0., 0.], [10., 10.], 100.0, 3, rand=4)
    >>> pi.shape, mu.shape, sigma.shape
    ((1, 3, 2), (1, 3, 2, 2), (1, 3, 2, 2))
    """
    post = check_choice("post", post, POSTS)
    rand = _randomness(rand)
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    p = lower.size
    stats = [np.asarray(a) for a in statistics]
    if len(stats) != 1 + p + p * (p + 1) // 2:
        raise DipsyError(
            f"{len(stats)} statistics for {p} numeric column(s)", f"give counts, {p} sums and {p * (p + 1) // 2} cross-products"
        )
    counts = np.asarray(stats[0], dtype=np.int64)
    if counts.ndim != 2:
        raise DipsyError(f"counts have shape {counts.shape}, expected (reps, K)", "give one row of counts per repetition")
    reps, k = counts.shape
    components = M.mixed_components(n, k, lower, upper, tuple(f"y{j + 1}" for j in range(p)))
    mechanism = _sanitizer(epsilon, m, components, budget, post)
    values = [np.repeat(a[:, None, ...], m, axis=1) for a in stats[: 1 + p]]
    values += [_batch(a, reps, m, float) for a in stats[1 + p :]]
    noisy = mechanism.randomise(values, rand)
    return M.draw_mixed(noisy, n, lower, upper, alpha, rand.numpy)
