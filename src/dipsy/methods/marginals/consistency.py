"""Make noisy marginals mutually consistent and non-negative (PrivSyn's post-processing).

PrivSyn (Zhang, Wang, Li, Honorio, Backes, He, Chen & Zhang, "PrivSyn: Differentially Private
Data Synthesis", USENIX Security 2021, Sec. 4.3 "Consistency"; METHODS.md §4.5 step 6) measures
many low-order marginals with independent Gaussian noise. Before records are synthesised from
them they are post-processed so that they describe one population: every marginal has the same
total, every two marginals agree on the attributes they share, and no count is negative. This
reads only the noisy marginals, so it costs no privacy budget (post-processing).

>>> a = Marginal((0, 1), np.array([[30.0, -4.0], [12.0, 50.0]]), rho=0.5)
>>> b = Marginal((1, 2), np.array([[40.0, 5.0], [41.0, 8.0]]), rho=0.5)
>>> a2, b2 = make_consistent([a, b])
>>> a2.counts.round(2).tolist(), b2.counts.round(2).tolist()
([[30.1, 0.0], [12.1, 48.8]], [[38.6, 3.6], [40.9, 7.9]])
>>> a2.project((1,)).counts.round(2).tolist(), b2.project((1,)).counts.round(2).tolist()
([42.2, 48.8], [42.2, 48.8])
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .marginal import Marginal

logger = logging.getLogger(__name__)

NonNegativity = Literal["norm_sub", "norm_cut"]

#: The final clip moves a shared projection by at most 4x the largest negative mass it removes
#: (see ``make_consistent``); stopping when that mass is below tolerance * total / 8 leaves a
#: factor 2 for floating-point rounding.
_STOP_FRACTION = 1.0 / 8.0

#: Number of past rounds the Anderson mixing combines.
_ANDERSON_MEMORY = 6


def make_consistent(
    marginals: Sequence[Marginal],
    iterations: int = 500,
    tolerance: float = 1e-9,
    *,
    non_negativity: NonNegativity = "norm_sub",
) -> list[Marginal]:
    """Post-process noisy marginals into non-negative, mutually consistent ones (PrivSyn).

    Implements the consistency step of PrivSyn (Zhang et al., USENIX Security 2021, Sec. 4.3;
    METHODS.md §4.5 step 6). It reads only the noisy marginals: no privacy cost.

    Steps:

    1. *Shared attribute sets.* ``F`` is the set of pairwise intersections ``A_i & A_j`` of the
       marginals' attribute sets, closed under intersection, plus the empty set (the total).
    2. *Consistency pass.* For every ``B`` in ``F``, from small to large, every marginal ``i``
       containing ``B`` gets its ``B``-projection replaced by the weighted average
       ``T_B = sum_i w_i proj_B(M_i)``; marginal ``i`` spreads the difference
       ``T_B - proj_B(M_i)`` evenly over the ``g_i`` cells that sum into each cell of ``B``.
       The weights are inverse noise variances: a cell of ``proj_B(M_i)`` sums ``g_i`` cells,
       each with noise variance ``1 / (2 rho_i)``, so its variance is ``g_i / (2 rho_i)`` and
       ``w_i = (rho_i / g_i) / sum_j (rho_j / g_j)``. For ``B`` the empty set ``g_i`` is the
       number of cells ``c_i`` and the pass starts by moving every marginal to the common total
       ``N = sum_i (rho_i / c_i) T_i / sum_j (rho_j / c_j)``. Exact marginals (``rho = inf``)
       dominate: when one of them contains ``B``, the average runs over the exact ones only,
       with weights ``(1 / g_i) / sum_j (1 / g_j)``.

       Spreading a difference evenly changes only the parts of ``M_i`` that are functions of
       ``B``'s cells, and all sets in ``F`` below ``B`` already agree among the marginals that
       contain ``B`` (``F`` is closed under intersection and visited by size), so one pass
       makes the marginals *exactly* consistent on every ``B`` in ``F`` — in particular on
       every pairwise intersection.
    3. *Non-negativity.* ``"norm_sub"`` (default): set negative cells to 0 and subtract a
       common amount from the positive cells so the total stays ``N``, repeating until no cell
       is negative — computed in closed form as ``max(x - theta, 0)`` with ``theta`` found by
       sorting (the loop's fixed point; the Euclidean projection onto
       ``{y >= 0, sum y = N}``). ``"norm_cut"``: set negative cells to 0 and remove the same
       mass from the smallest positive cells, zeroing them in ascending order.

    Steps 2 and 3 alternate in rounds (non-negativity, then a consistency pass), from one
    initial pass. PrivSyn runs a fixed 501 rounds; here the rounds stop as soon as, after a
    pass, the negative mass of every marginal is at most ``tolerance * N / 8``. The plain
    iteration converges linearly and slowly once only a few cells still cross zero (hundreds of
    rounds to 1e-9 on realistic inputs), so the rounds are accelerated by Anderson mixing
    (Walker & Ni 2011) of the round map; each accelerated state is an affine combination of
    consistent states, re-passed to remove rounding, so it stays consistent. Typically 5-60
    rounds suffice.

    How (a)-(c) are guaranteed on return:

    * *Converged*: the last pass is exactly consistent, with negative mass at most
      ``s = tolerance * N / 8`` per marginal. Negative cells are set to 0 and each marginal is
      rescaled to total ``N``; this moves a marginal by at most ``2 s`` in L1, so two marginals'
      shared projections differ by at most ``4 s = tolerance * N / 2`` per cell. Non-negativity
      and the common total are exact (up to rounding). Exact marginals are left untouched.
    * *Not converged* in ``iterations`` rounds (``norm_cut`` rounds, whose map jumps, often do
      not settle: then up to ``iterations`` ``norm_sub`` rounds follow): the last, exactly
      consistent, state ``C`` is mixed with the uniform marginals ``U_i = N / c_i`` — which are
      consistent, positive and of total ``N`` — as ``(1 - lam) C + lam U`` with the smallest
      ``lam`` making every cell non-negative; a warning reports ``lam``. Mixing is linear, so
      consistency and the total are kept; exact marginals move by ``lam`` too.

    Parameters
    ----------
    marginals
        The noisy marginals; ``rho`` of each is the zCDP budget of its Gaussian noise (noise
        variance ``1 / (2 rho)`` per cell) and ``inf`` for an exact marginal. Two marginals
        must give a shared attribute the same number of categories.
    iterations
        Maximum number of rounds (non-negativity + consistency pass); PrivSyn uses 501.
    tolerance
        Accepted inconsistency relative to the common total: on return, for any two marginals
        and every cell of their shared attributes, ``|proj_i - proj_j| <= tolerance * N``.
    non_negativity
        ``"norm_sub"`` or ``"norm_cut"`` (PrivSyn's names).

    Returns
    -------
    list of Marginal
        In input order, same attributes and ``rho``; non-negative, all with total ``N`` (all
        zero if ``N <= 0``, the only non-negative marginals with such a total) and consistent
        to within ``tolerance``.

    Raises
    ------
    ValueError
        For an empty list, an attribute with different sizes in two marginals, non-finite
        counts, a ``rho`` that is not positive, or bad ``iterations`` / ``tolerance`` /
        ``non_negativity``.
    """
    plan = _Plan.build(marginals)
    if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
    if not (isinstance(tolerance, numbers.Real) and 0 < tolerance < 1):
        raise ValueError(f"tolerance must be a number in (0, 1), got {tolerance!r}")
    if non_negativity not in _NON_NEGATIVITY:
        raise ValueError(f"non_negativity must be one of {sorted(_NON_NEGATIVITY)}, got {non_negativity!r}")

    tables = _Tables(plan, [np.shape(m.counts) for m in marginals])
    x = np.concatenate([np.ravel(m.counts).astype(np.float64) for m in marginals])
    total = plan.common_total(tables.views(x))
    if not total > 0:
        logger.warning(
            "the common total of the noisy marginals is %.6g <= 0; the only non-negative marginals with that total are all zero",
            total,
        )
        return [m.with_counts(np.zeros(np.shape(m.counts))) for m in marginals]

    stop = _STOP_FRACTION * tolerance * total
    tables.consistency_pass(x)
    rules = ["norm_sub"] if non_negativity == "norm_sub" else [non_negativity, "norm_sub"]
    for rule in rules:
        x, rounds = tables.settle(x, total, _NON_NEGATIVITY[rule], stop, iterations)
        if rounds is not None:
            logger.debug("consistent and non-negative to tolerance after %d %s rounds", rounds, rule)
            # Clip the negative mass (at most `stop` per marginal) and rescale to the total:
            # each marginal moves by at most 2 * stop in L1, so shared projections differ by at
            # most 4 * stop = tolerance * total / 2.
            parts = [np.maximum(c, 0.0) for c in tables.views(x)]
            if any(not c.sum() > 0 for c in parts):  # a total of a rounding error: nothing left to rescale
                return [m.with_counts(np.full(np.shape(c), total / c.size)) for m, c in zip(marginals, parts)]
            return [m.with_counts(c * (total / c.sum())) for m, c in zip(marginals, parts)]
        if rule != "norm_sub":
            logger.info("%s did not settle in %d rounds; continuing with norm_sub", rule, iterations)

    # x ends on a pass, so it is consistent; mixing in the (consistent) uniform marginals keeps that.
    parts = tables.views(x)
    lam = max(_mixing_weight(c, total / c.size) for c in parts)
    logger.warning(
        "consistency did not converge in %d rounds; mixed in a fraction %.3g of the uniform "
        "marginals to keep the counts non-negative",
        iterations,
        lam,
    )
    return [m.with_counts(np.maximum((1.0 - lam) * c + lam * (total / c.size), 0.0)) for m, c in zip(marginals, parts)]


# --- the plan: which attribute sets are shared, by whom, with which weights -----------------------


@dataclass(frozen=True)
class _Step:
    """One shared attribute set ``B``: the marginals containing it and how each projects on it."""

    attributes: tuple[int, ...]
    members: tuple[int, ...]  # indices of the marginals that contain B
    drop: tuple[tuple[int, ...], ...]  # per member: its axes summed out to project on B
    g: np.ndarray  # per member: cells summed into one cell of B
    weights: np.ndarray  # per member: w_i, summing to 1


@dataclass(frozen=True)
class _Plan:
    steps: tuple[_Step, ...]  # by size of B, the empty set (the total) first

    @classmethod
    def build(cls, marginals: Sequence[Marginal]) -> _Plan:
        if isinstance(marginals, Marginal) or len(marginals) == 0:
            raise ValueError("make_consistent needs a non-empty sequence of Marginal objects")
        sizes: dict[int, tuple[int, int]] = {}  # attribute -> (size, first marginal giving it)
        rhos = []
        for i, m in enumerate(marginals):
            if not isinstance(m, Marginal):
                raise ValueError(f"marginal {i} is a {type(m).__name__}, not a Marginal")
            rho = float(m.rho)
            if not rho > 0:  # also rejects NaN
                raise ValueError(f"marginal {i} over {m.attributes} has rho = {m.rho}; it must be > 0 (inf if exact)")
            rhos.append(rho)
            if not np.all(np.isfinite(m.counts)):
                raise ValueError(f"marginal {i} over {m.attributes} has non-finite counts")
            for a, n in zip(m.attributes, np.shape(m.counts)):
                if n < 1:
                    raise ValueError(f"marginal {i} gives attribute {a} no categories")
                if a in sizes and sizes[a][0] != n:
                    raise ValueError(
                        f"attribute {a} has {sizes[a][0]} categories in marginal {sizes[a][1]} but {n} in "
                        f"marginal {i}; every marginal must use the same domain"
                    )
                sizes.setdefault(a, (n, i))

        attrs = [frozenset(m.attributes) for m in marginals]
        shared: set[frozenset[int]] = {frozenset()} | {attrs[i] & attrs[j] for i in range(len(attrs)) for j in range(i)}
        frontier = set(shared)
        while frontier:  # close under intersection
            new = {s & t for s in frontier for t in shared} - shared
            shared |= new
            frontier = new

        steps = []
        for b in sorted(shared, key=lambda s: (len(s), sorted(s))):
            members = tuple(i for i, a in enumerate(attrs) if b <= a)
            drop = tuple(tuple(ax for ax, a in enumerate(marginals[i].attributes) if a not in b) for i in members)
            g = np.array(
                [math.prod(np.shape(marginals[i].counts)[ax] for ax in d) for i, d in zip(members, drop)], dtype=np.float64
            )
            member_rho = np.array([rhos[i] for i in members])
            exact = np.isinf(member_rho)
            # w_i = (rho_i / g_i) / sum_j (rho_j / g_j): inverse variance of proj_B(M_i), whose cells
            # each sum g_i cells of noise variance 1 / (2 rho_i). Exact marginals take all the weight.
            raw = np.where(exact, 1.0 / g, 0.0) if exact.any() else member_rho / g
            steps.append(_Step(tuple(sorted(b)), members, drop, g, raw / raw.sum()))
        return cls(tuple(steps))

    def common_total(self, counts: Sequence[np.ndarray]) -> float:
        """``N = sum_i w_i T_i`` with ``w_i`` proportional to ``rho_i / c_i`` (step for the empty set)."""
        step = self.steps[0]
        return float(sum(w * counts[i].sum() for i, w in zip(step.members, step.weights)))

    def consistency_pass(self, counts: list[np.ndarray]) -> None:
        """One pass over the shared sets, small to large, updating ``counts`` in place."""
        for step in self.steps:
            projections = [counts[i].sum(axis=d) if d else counts[i].copy() for i, d in zip(step.members, step.drop)]
            target = sum(w * p for w, p in zip(step.weights, projections))
            for i, d, g, p in zip(step.members, step.drop, step.g, projections):
                counts[i] += np.expand_dims((target - p) / g, d)


class _Tables:
    """All marginals' counts as one flat vector (for the acceleration), with views per marginal."""

    def __init__(self, plan: _Plan, shapes: list[tuple[int, ...]]) -> None:
        self.plan = plan
        self.shapes = shapes
        self.ends = np.cumsum([math.prod(s) for s in shapes]).tolist()

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        return [flat[e - math.prod(s) : e].reshape(s) for e, s in zip(self.ends, self.shapes)]

    def consistency_pass(self, flat: np.ndarray) -> None:
        self.plan.consistency_pass(self.views(flat))

    def largest_negative_mass(self, flat: np.ndarray) -> float:
        return max(float(-np.minimum(c, 0.0).sum()) for c in self.views(flat))

    def settle(self, x: np.ndarray, total: float, project_nonnegative, stop: float, rounds: int) -> tuple[np.ndarray, int | None]:
        """Run PrivSyn rounds from a consistent ``x`` until every marginal's negative mass is at
        most ``stop``; return the last state (consistent) and the rounds used (None if not done).

        A round is ``G(x)``: non-negativity on each marginal, then a consistency pass. The
        iteration ``x <- G(x)`` converges linearly, slowly once few cells still cross zero
        (hundreds of rounds to reach 1e-9), so it is accelerated by Anderson mixing.
        """
        accelerate = _Anderson(_ANDERSON_MEMORY)
        for round_ in range(rounds + 1):
            if self.largest_negative_mass(x) <= stop:
                return x, round_
            if round_ == rounds:
                break
            g = x.copy()
            parts = self.views(g)
            for c in parts:
                project_nonnegative(c, total)
            self.plan.consistency_pass(parts)
            x = accelerate(g, g - x)
            if not np.isfinite(x).all():  # a wild extrapolation: drop it and the memory
                x = g
                accelerate = _Anderson(_ANDERSON_MEMORY)
            # x is an affine combination of consistent states, so consistent up to rounding; a
            # pass (the identity on consistent states) removes the rounding.
            self.consistency_pass(x)
        return x, None


# --- non-negativity ------------------------------------------------------------------------------


def _norm_sub(counts: np.ndarray, total: float) -> None:
    """PrivSyn's norm_sub, in place: the fixed point ``max(x - theta, 0)`` with total ``total``.

    norm_sub zeroes the negative cells and subtracts one amount from the positive cells to
    restore the total, until no cell is negative; the cells that survive are the largest ones,
    each lowered by the same ``theta``. With the values sorted in decreasing order ``v_1 >= ...``,
    ``theta = (sum_{k <= K} v_k - total) / K`` for the largest ``K`` with ``v_K > theta_K``.
    """
    if counts.min() >= 0.0:
        return
    flat = counts.reshape(-1)
    v = np.sort(flat)[::-1]
    theta = (np.cumsum(v) - total) / np.arange(1, v.size + 1)
    k = int(np.flatnonzero(v > theta)[-1])
    np.maximum(flat - theta[k], 0.0, out=flat)


def _norm_cut(counts: np.ndarray, total: float) -> None:
    """PrivSyn's norm_cut, in place: zero the negative cells, then remove the mass they held from
    the smallest positive cells, zeroing them in ascending order (the last one only in part)."""
    if counts.min() >= 0.0:
        return
    flat = counts.reshape(-1)
    np.maximum(flat, 0.0, out=flat)
    excess = flat.sum() - total
    if excess <= 0.0:
        return
    order = np.argsort(flat, kind="stable")
    removed = np.cumsum(flat[order])  # mass removed if the k smallest cells are zeroed
    k = int(np.searchsorted(removed, excess, side="right"))  # cells zeroed entirely
    if k < order.size:
        flat[order[k]] = removed[k] - excess
    flat[order[:k]] = 0.0


_NON_NEGATIVITY = {"norm_sub": _norm_sub, "norm_cut": _norm_cut}


# --- acceleration --------------------------------------------------------------------------------


class _Anderson:
    """Anderson mixing for a fixed-point iteration ``x <- G(x)`` (Walker & Ni, SIAM J. Numer.
    Anal. 49(4), 2011, "Anderson acceleration for fixed-point iterations", type II).

    Called with ``g = G(x_k)`` and the residual ``f = g - x_k``, it returns
    ``x_{k+1} = g - dG gamma`` where ``dG``, ``dF`` hold the differences of the last ``memory + 1``
    values of ``g`` and ``f`` and ``gamma`` minimises ``|f - dF gamma|`` (ridge-regularised normal
    equations). The coefficients of the ``g``'s sum to one, so ``x_{k+1}`` stays on any affine
    subspace that holds them all. The memory is cleared when the residual grows tenfold.
    """

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.g: list[np.ndarray] = []
        self.f: list[np.ndarray] = []
        self.last = math.inf

    def __call__(self, g: np.ndarray, f: np.ndarray) -> np.ndarray:
        size = float(np.sqrt(np.einsum("k,k->", f, f)))
        if size > 10.0 * self.last:
            self.g.clear()
            self.f.clear()
        self.last = size
        self.g.append(g)
        self.f.append(f)
        if len(self.g) > self.memory + 1:
            del self.g[0], self.f[0]
        if len(self.g) < 2:
            return g
        d_f = np.diff(np.stack(self.f), axis=0)
        d_g = np.diff(np.stack(self.g), axis=0)
        # einsum, not BLAS: these products are small, and BLAS threads only add overhead here.
        gram = np.einsum("ik,jk->ij", d_f, d_f)
        ridge = 1e-10 * float(np.trace(gram)) + np.finfo(float).tiny
        try:
            gamma = np.linalg.solve(gram + ridge * np.eye(len(gram)), np.einsum("ik,k->i", d_f, f))
        except np.linalg.LinAlgError:
            return g
        return g - np.einsum("i,ik->k", gamma, d_g)


def _mixing_weight(counts: np.ndarray, uniform: float) -> float:
    """Smallest ``lam`` in [0, 1] with ``(1 - lam) * counts + lam * uniform >= 0`` (``uniform > 0``)."""
    low = float(counts.min())
    return 0.0 if low >= 0.0 else -low / (uniform - low)
