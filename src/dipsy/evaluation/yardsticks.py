"""What a release's two-way marginals are judged against: two yardsticks a steward can reach
without the release.

- **The sampling floor**: the mean two-way TVD of a random resample of the original (drawn with
  replacement) as large as a synthetic set. A release cannot be expected to beat it: even the
  original's own records, drawn again, sit this far from the original.
- **The independent baseline at the same budget**: what a release that keeps no relationship
  between columns gets, each column's one-way table measured with the release's per-set budget
  split evenly over the d columns, and the two-way tables taken as products of those noisy
  one-way tables (without drawing records). Under zCDP, ρ/d per column and Gaussian noise of
  σ = Δ₂ sqrt(d / (2ρ)) (an (ε, δ) budget as the largest ρ that converts to it, :func:`dipsy.privacy.conversions.zcdp_to_epsilon`); under pure DP, ε/d per column and Laplace noise of b = Δ₁ d / ε; the
  sensitivities Δ₁, Δ₂ are 1, 1 for adding or removing a record and 2, √2 for substituting one,
  times θ for a relation of θ records per unit. A release without a DP budget (a local guarantee,
  none) is set beside the noiseless product, the least an independent release would lose.

A release whose mean two-way TVD is not below the independent baseline has kept no more of the
joint structure than one-way tables would, whatever the threshold says. Both yardsticks are means
over the same pairs as the release's own, so they compare like with like.

The evaluation reads the confidential original: it is for the data steward, and not private.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..privacy.budget import ZCDP
from ..privacy.composition import requested_budget
from .marginals import encode_valid, shared_domain

#: Draws of the noise averaged for the independent baseline, and of the resample for the floor.
DRAWS = 5
#: At most this many pairs (a seeded sample of them) enter the yardsticks, as in the release's mean.
MAX_PAIRS = 2000


def noise_per_column(privacy: Mapping[str, Any], columns: int) -> dict[str, Any] | None:
    """The noise each one-way table gets when the release's per-set budget is split over
    ``columns`` columns (module docstring), or None without a DP budget.

    >>> noise_per_column({"definition": "zCDP", "rho_per_set": 0.5, "relation": {"kind": "add-remove"}}, 4)["scale"]
    2.0
    >>> noise_per_column({"definition": "pure-DP", "epsilon_per_set": 1.0, "relation": {"kind": "substitute"}}, 3)["scale"]
    6.0
    """
    given = privacy.get("relation")
    relation: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    kind = str(relation.get("kind") or "")
    theta = float(relation.get("theta") or 1)
    l1, l2 = (1.0, 1.0) if kind == "add-remove" else (2.0, math.sqrt(2.0))
    rho = _positive(privacy.get("rho_per_set"))
    if privacy.get("differentially_private") is not False and rho is not None:
        sigma = theta * l2 * math.sqrt(columns / (2.0 * rho))
        return {"kind": "gaussian", "scale": sigma, "budget": f"ρ = {rho:.4g} per set, ρ/{columns} per column"}
    eps, delta = _positive(privacy.get("epsilon_per_set")), _positive(privacy.get("delta_per_set"))
    if privacy.get("differentially_private") is not False and eps is not None and delta is not None and delta < 1:
        # the largest ρ whose (ε, δ) statement is the release's, by dipsy's own conversion: the most
        # generous budget the independent columns could be given, so the strictest yardstick
        budget_rho = requested_budget("zCDP", epsilon=eps, delta=delta)[0]
        assert isinstance(budget_rho, ZCDP)
        rho = budget_rho.rho
        sigma = theta * l2 * math.sqrt(columns / (2.0 * rho))
        budget = f"(ε, δ) = ({eps:.4g}, {delta:.2g}) per set as ρ = {rho:.4g}, ρ/{columns} per column"
        return {"kind": "gaussian", "scale": sigma, "budget": budget}
    if privacy.get("differentially_private") is not False and privacy.get("definition") == "pure-DP" and eps is not None:
        return {
            "kind": "laplace",
            "scale": theta * l1 * columns / eps,
            "budget": f"ε = {eps:.4g} per set, ε/{columns} per column",
        }
    return None


def _positive(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def two_way_yardsticks(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    privacy: Mapping[str, Any],
    seed: int = 0,
    repeated: Sequence[str] = (),
) -> dict[str, Any] | None:
    """The sampling floor and the independent baseline of the mean two-way TVD (module docstring).

    Returns
    -------
    dict or None
        ``floor`` (mean over :data:`DRAWS` resamples of the mean synthetic set's size), ``rows``
        (that size), ``independent`` (mean over :data:`DRAWS` draws of the noise), ``noise`` (its
        kind, scale per cell and budget; None for the noiseless product) and ``pairs``; with
        ``repeated`` columns (released as they are) among them, ``synthesized``: the same
        ``floor``, ``independent`` and ``pairs`` over the pairs that hold a synthesized column. None
        with fewer than two columns that have cells.

    >>> d = Domain.from_sizes({"a": 2, "b": 2})
    >>> o = pd.DataFrame({"a": [0, 1] * 50, "b": [0, 1] * 50})  # b = a: independence halves every table
    >>> y = two_way_yardsticks(o, [o], d, {})
    >>> y["independent"], y["noise"]
    (0.5, None)
    """
    domain = shared_domain(original, tables, domain)
    domain = domain.project([c.name for c in domain.columns if c.encodable])
    if len(domain.names) < 2 or not tables:
        return None
    codes, _ = encode_valid(original, domain, "original")
    n = len(next(iter(codes.values())))
    if n == 0:
        return None
    sizes = dict(zip(domain.names, domain.shape()))
    rng = np.random.default_rng(seed)
    pairs = list(combinations(domain.names, 2))
    if len(pairs) > MAX_PAIRS:
        pairs = [pairs[i] for i in np.sort(rng.choice(len(pairs), MAX_PAIRS, replace=False))]
    joint = {p: _table(codes, p, sizes, np.arange(n)) for p in pairs}
    noise = noise_per_column(_budgeted(privacy), len(domain.names))

    # independent: products of (noisy) one-way tables, per pair
    independent = np.zeros(len(pairs))
    draws = DRAWS if noise else 1
    for _ in range(draws):
        ones = {}
        for name in domain.names:
            counts = np.bincount(codes[name], minlength=sizes[name]).astype(float)
            if noise:
                draw = rng.normal if noise["kind"] == "gaussian" else rng.laplace
                counts = np.maximum(counts + draw(0.0, noise["scale"], counts.size), 0.0)
            total = counts.sum()
            ones[name] = counts / total if total > 0 else np.full(counts.size, 1.0 / counts.size)
        independent += [0.5 * np.abs(joint[p] - np.outer(ones[p[0]], ones[p[1]])).sum() / draws for p in pairs]

    rows = int(round(np.mean([len(t) for t in tables])))
    floor = np.zeros(len(pairs))
    for _ in range(DRAWS):
        pick = rng.integers(0, n, max(rows, 1))
        floor += [0.5 * np.abs(joint[p] - _table(codes, p, sizes, pick)).sum() / DRAWS for p in pairs]
    out: dict[str, Any] = {
        "floor": float(floor.mean()),
        "rows": rows,
        "independent": float(independent.mean()),
        "noise": noise,
        "pairs": len(pairs),
    }
    kept = [c for c in repeated if c in domain.names]
    synthesized = [k for k, p in enumerate(pairs) if not set(p) <= set(kept)]
    if kept and synthesized:
        out["synthesized"] = {
            "floor": float(floor[synthesized].mean()),
            "independent": float(independent[synthesized].mean()),
            "pairs": len(synthesized),
        }
    return out


def per_column_noise(domain: Domain, privacy: Mapping[str, Any]) -> dict[str, Any] | None:
    """The noise of each one-way table of the independent baseline over ``domain``: the release's
    per-set budget split over its columns that have cells (:func:`noise_per_column`), as for the
    two-way yardstick; the numeric yardsticks (:mod:`.numeric`) measure each column's histogram
    with it.

    >>> d = Domain.from_sizes({"a": 2, "b": 3, "c": 4, "e": 5})
    >>> per_column_noise(d, {"rho_per_set": 0.5, "relation": {"kind": "add-remove"}})["scale"]
    2.0
    """
    columns = sum(1 for c in domain.columns if c.encodable)
    return noise_per_column(_budgeted(privacy), max(columns, 1))


def _table(codes: Mapping[str, np.ndarray], pair: tuple[str, str], sizes: Mapping[str, int], rows: np.ndarray) -> np.ndarray:
    """The proportions of ``pair``'s two-way table over ``rows``."""
    a, b = pair
    flat = codes[a][rows].astype(np.int64) * sizes[b] + codes[b][rows]
    counts = np.bincount(flat, minlength=sizes[a] * sizes[b]).reshape(sizes[a], sizes[b]).astype(float)
    return counts / max(counts.sum(), 1.0)


def _budgeted(privacy: Mapping[str, Any]) -> Mapping[str, Any]:
    """The statement whose budget the release spent: a seeded test release's is the one it would
    have unseeded (``if_unseeded``)."""
    if privacy.get("rho_per_set") or privacy.get("epsilon_per_set"):
        return privacy
    unseeded = privacy.get("if_unseeded")
    return unseeded if isinstance(unseeded, Mapping) else privacy


__all__ = ["DRAWS", "noise_per_column", "per_column_noise", "two_way_yardsticks"]
