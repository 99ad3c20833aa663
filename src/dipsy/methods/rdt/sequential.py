r"""Sequential synthesis inside the leaf counts (S-004 §2): later ensembles see synthesized earlier columns.

S-004 §2 builds ``ensemble_S`` (Sex), synthesizes Sex for the confidential records from it,
*substitutes the confidential Sex with the synthesized values*, and only then counts the leaves of
``ensemble_R`` (Race, with Sex among its node attributes). Here, the leaf counts of sensitive column
``j`` (``condition_on=synthetic``, the default) route each confidential record by its public values
and by synthetic values of the earlier sensitive columns ``1 … j − 1``, drawn inside the query from
those columns' already released leaf distributions; the record's confidential earlier values are
never read.

The draws
---------
Record ``x`` of the query's input is the tuple of values the query reads — its public feature values
and its label of column ``j``. Records with equal tuples are numbered ``1 … n_c`` within their class
``c`` (they are interchangeable, so the numbering is immaterial). The earlier column ``i``'s synthetic
value of the ``r``-th record of class ``c`` is the inverse-CDF draw, at the uniform
``U_i(key, c, r)`` (a 64-bit mixing hash, :func:`uniforms`), from the distribution the released
trees of column ``i`` give at the record's public values and synthetic values of columns ``< i``
(the same rule as the synthesis of the targets, :func:`draw`). ``key`` is drawn for the release and
never recorded.

Sensitivity (the lemma the privacy proof of :mod:`.synthesizer` uses)
--------------------------------------------------------------------
Fix the released distributions of columns ``< j`` and the key. The query's answer is

    H(D) = Σ_c Σ_{r=1}^{n_c(D)} e_{(leaf(c, r), label(c))},

a sum over (class, number) pairs in which each term depends on its pair alone. Adding a record of
class ``c`` adds the one term ``r = n_c + 1``; removing one removes the term ``r = n_c``; so
``‖H(D') − H(D)‖₁ = 1`` under add/remove and ``≤ 2`` under substitution (a removal and an addition),
for *every* key and every released earlier model — the same Δ₁ as counting on confidential values.
The answer is a function of the multiset of records, so it does not depend on the engine's row order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...domain import Domain
from ...errors import PrivacyError
from .features import Features
from .trees import Tree

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014), elementwise on uint64 (wrapping arithmetic)."""
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def uniforms(key: int, stream: int, rows: np.ndarray) -> np.ndarray:
    """A uniform in [0, 1) per row of ``rows`` (n × c uint64): a hash of ``key``, ``stream``, the row's
    values and the row's number among the equal rows before it (0, 1, …).

    Equal rows get distinct numbers, so distinct uniforms; the numbering follows row order, but equal
    rows are interchangeable, so the multiset of (row, uniform) pairs — all the leaf counts depend
    on — is a function of the multiset of rows (and the key) alone.

    >>> rows = np.array([[1, 2], [1, 2], [3, 4]], dtype=np.uint64)
    >>> u = uniforms(5, 0, rows)
    >>> bool(np.all((0 <= u) & (u < 1))), bool(u[0] != u[1]), bool(np.array_equal(uniforms(5, 0, rows[::-1]), u[[2, 0, 1]]))
    (True, True, True)
    """
    n = len(rows)
    with np.errstate(over="ignore"):
        h = np.full(n, _mix(np.array([(key ^ (stream * 0x2545F4914F6CDD1D)) & (2**64 - 1)], dtype=np.uint64))[0], dtype=np.uint64)
        for col in rows.T:
            h = _mix(h ^ col)
        if n:
            _, inverse = np.unique(rows, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            order = np.argsort(inverse, kind="stable")
            sorted_inv = inverse[order]
            starts = np.flatnonzero(np.r_[True, sorted_inv[1:] != sorted_inv[:-1]])
            number = np.empty(n, dtype=np.int64)
            number[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
            h = _mix(h ^ _mix(number.astype(np.uint64)))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def probabilities(
    trees: Sequence[Tree], dists: Sequence[np.ndarray], matrix: np.ndarray, combine: str, pick: np.ndarray | None
) -> np.ndarray:
    """Each row's label distribution: the trees' leaf distributions averaged (``average``), or the
    distribution of tree ``pick[row]`` (``random-tree``)."""
    leaf = [np.searchsorted(t.leaves, t.route(matrix)) for t in trees]
    if combine == "average":
        return np.asarray(sum(d[i] for d, i in zip(dists, leaf)) / len(trees))
    assert pick is not None, "random-tree draws a tree per row"
    out = np.empty((len(matrix), dists[0].shape[1]))
    for t, (d, i) in enumerate(zip(dists, leaf)):
        mine = pick == t
        out[mine] = d[i[mine]]
    return out


def draw(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: the least label whose cumulative probability passes ``u`` (one per row)."""
    return np.minimum((np.cumsum(p, axis=1) < u[:, None]).sum(axis=1), p.shape[1] - 1)


@dataclass(eq=False)
class Earlier:
    """The released models of the earlier sensitive columns, filled by ``fit`` as they are measured.

    ``models[k][i]`` holds column ``i``'s trees and leaf distributions in set ``k``; a later column's
    leaf query reads them (:meth:`synthesize`). Nothing here is confidential: the trees are public,
    the distributions post-processed noisy counts, and ``key`` only seeds the draws.
    """

    key: int
    features: tuple[Features, ...]
    combine: str
    models: dict[int, list[tuple[tuple[Tree, ...], tuple[np.ndarray, ...]]]] = field(default_factory=dict)

    def add(self, k: int, i: int, trees: tuple[Tree, ...], dists: tuple[np.ndarray, ...]) -> None:
        mine = self.models.setdefault(k, [])
        if len(mine) != i:
            raise PrivacyError(f"sensitive column {i + 1}'s model came out of order", "fit the plan's measurements in order")
        mine.append((trees, dists))

    def synthesize(
        self, k: int, j: int, public: Mapping[str, np.ndarray], label: np.ndarray, domain: Domain, names: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """Synthetic codes of the sensitive columns ``names[:j]`` for each record (set ``k``), drawn in
        order from their released models at the record's ``public`` feature inputs; the uniforms are
        hashed from the record's public inputs and its ``label`` code (module docstring)."""
        done = self.models.get(k, [])
        if len(done) < j:
            raise PrivacyError(
                f"the leaf counts of sensitive column {j + 1} route records by synthetic values of the "
                f"earlier columns, whose models are not released yet",
                "measure the plan in order inside fit()",
            )
        rows = np.column_stack([_bits(public[c]) for c in public] + [np.asarray(label).astype(np.uint64)])
        n = len(rows)
        out: dict[str, np.ndarray] = {}
        for i in range(j):
            trees, dists = done[i]
            f = self.features[i]
            matrix = f.matrix({**public, **out}, n)
            pick = None
            if self.combine != "average":
                pick = np.minimum(
                    (uniforms(self.key, 2 * (k * 1000 + i) + 1, rows) * len(trees)).astype(np.int64), len(trees) - 1
                )
            p = probabilities(trees, dists, matrix, self.combine, pick)
            out[names[i]] = draw(p, uniforms(self.key, 2 * (k * 1000 + i), rows))
        return out


def _bits(x: np.ndarray) -> np.ndarray:
    """A column's values as uint64 words: codes as they are, floats by their bits."""
    a = np.asarray(x)
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)
    return a.astype(np.int64).view(np.uint64)
