r"""How well synthetic sensitive columns keep their relation to the public ones (S-004 §6).

For a release that adds synthetic sensitive columns (sex, then race) to public ones (the random
decision trees, METHODS.md §5.2), the Duke report S-004 (§6 "Utility of Variable Depth RDT
Generated Synthetic Data") judges utility by

(a) joint-category proportions, confidential against synthetic (Fig. 3b): here every cell of
    each 2-way table S × P of a sensitive column S and a public column P, and, with two or more
    sensitive columns, of each table S₁ × S₂ × … × P, on one scatter with the Pearson
    correlation of the cells; and the total variation distance ½ Σ |p − q| of each table;
(b) slopes and correlations of indicator pairs (Figs. 3c, 3d): for ``X = 1[S = s]`` and
    ``Y = 1[B = b]`` (B a public column or a later sensitive one), the least-squares slope of Y
    on X, ``β₁ = P(Y=1 | X=1) − P(Y=1 | X=0)``, and the correlation

        r = β₁ sqrt(P(X=1)(1 − P(X=1)) / (P(Y=1)(1 − P(Y=1)))),

    both computed by :func:`~.relationships.indicator_relationships` (imported, not repeated),
    which enters a column with two categories by one indicator (its rarer category): the other
    only mirrors it, and the mirrored pairs would double every slope and, placed symmetrically
    about 0, inflate the correlation of slopes over pairs;
(c) a logistic regression of one category of each sensitive column (S-004: female) on the public
    columns as categorical predictors (Figs. 10–14), its coefficients fitted to the confidential
    data against those fitted to the synthetic sets (combined by the release's rule).

Every column is read through its codes in the domain — categories, or bins of a binned numeric
column — so the tables, indicators and predictors are the same for the original and every set.

Like the rest of the evaluation this reads the confidential data and is not private: it is the
data steward's evidence before publishing.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Column, Domain
from ..errors import DipsyError
from .marginals import encode_valid
from .relationships import indicator_relationships

#: Predictor levels rarer than this share of the original, or past the LEVELS most common, are
#: pooled into "other" for the regression (rare levels separate and make the fit fail to
#: converge; S-004's models have a few predictors). Levels absent from a synthetic set are
#: pooled too, so that every set gives the same terms.
RARE = 0.02
LEVELS = 8
OTHER = "other"


def sensitive_utility(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    sensitive: Sequence[str],
    public: Sequence[str] | None = None,
    rule: str | None = None,
    seed: int = 0,
    levels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """S-004's utility outputs (§6) for the ``sensitive`` columns against the ``public`` ones.

    Parameters
    ----------
    original
        The confidential records.
    tables
        The m synthetic sets of the release.
    domain
        The public domain; its codes (categories or bins) define every table.
    sensitive
        The sensitive columns, in the release's order (e.g. ``["sex", "race"]``).
    public
        The public columns; default every other column of ``domain``. Numeric columns without
        bins have no categories and are left out (listed under ``"skipped"``).
    rule
        The release's combining rule for the regression (``combining_rule`` of release.json).
    seed
        Passed to :func:`~.relationships.indicator_relationships` (which here uses every pair).
    levels
        Per sensitive column, the category modelled by the logistic regression, as a value or
        label (``{"sex": "Female"}``); default the rarer category of a binary column, else the
        most common category but one (the most common is the reference).

    Returns
    -------
    dict
        ``"sensitive"``, ``"public"``, ``"skipped"`` ({column: why});

        ``"tables"``: one ``{"columns", "way", "tvd"}`` (TVD per set) per table S × P, S × S′
        and, with several sensitive columns, S₁ × … × P; sorted worst (largest mean TVD) first;
        ``"tvd_mean"``: the mean TVD per way (``"2-way"``, ``"3-way"``…);
        ``"yardsticks"``: the same means for a resample of the original as large as a set (mean of
        :data:`FLOOR_DRAWS` seeded draws: the sampling floor) and for the original's own tables with
        the sensitive columns independent of the rest (the product of each table's sensitive and
        public margins: what a release that keeps no relationship of theirs would score at best),
        as ``{"rows", "draws", "floor": {way: TVD}, "independent": {way: TVD}}``;

        ``"proportions"``: the cells of the S × P and S₁ × … × P tables — ``"tables"`` (their
        columns), ``"cells"`` (cells per table), ``"original"`` (shares, in table order and C
        order within a table), ``"synthetic"`` (one list per set), ``"r"`` (Pearson correlation
        of synthetic with original shares over all these cells, per set) and ``"r_by_way"``;

        ``"indicators"``: ``"pairs"`` as :func:`~.relationships.indicator_relationships` gives
        them, ``x`` always the sensitive indicator; ``"slope_r"``, ``"corr_r"`` (correlation of
        synthetic with original slopes / correlations over the pairs) and
        ``"slope_mean_abs_diff"``, ``"corr_mean_abs_diff"``, each per set; ``"pairs_used"``;

        ``"logit"``: per sensitive column, the comparison of :func:`dipsy.evaluation.regression`
        (``"coefficients"`` with original estimate and 95% interval, synthetic combined estimate
        and interval, overlap, standardised difference) with ``"response"``, ``"level"``,
        ``"formula"``, ``"reference"`` and ``"pooled"`` levels per predictor, ``"coefficient_r"``
        and any fitting ``"warnings"`` — or ``{"response", "error"}`` when the model cannot be
        compared (it is then reported, never fatal).

    Examples
    --------
    >>> d = Domain((Column("p", "categorical", categories=(0, 1)), Column("s", "categorical", categories=(0, 1))))
    >>> o = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 0, 1, 1]})
    >>> y = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 1, 1, 1]})
    >>> out = sensitive_utility(o, [y], d, ["s"])
    >>> out["proportions"]["original"], out["proportions"]["synthetic"], out["tables"][0]["tvd"]
    ([0.5, 0.0, 0.0, 0.5], [[0.25, 0.0, 0.25, 0.5]], [0.25])
    """
    if not tables:
        raise DipsyError("there is no synthetic set to evaluate", "pass the m synthetic tables of a release")
    sensitive = list(dict.fromkeys(sensitive))
    unknown = [s for s in sensitive if s not in domain]
    if unknown:
        raise DipsyError(f"the sensitive column {unknown[0]!r} is not in the domain", f"name columns of {list(domain.names)}")
    for s in sensitive:
        if not domain[s].encodable:
            raise DipsyError(
                f"the sensitive column {s!r} is numeric without bins, so it has no categories", "give it bins in the domain file"
            )
    asked = [c for c in (public or domain.names) if c in domain and c not in sensitive]
    skipped = {c: "numeric without bins: no categories" for c in asked if not domain[c].encodable}
    public = [c for c in asked if c not in skipped]
    if not sensitive or not public:
        raise DipsyError(
            "the sensitive-attribute evaluation needs a sensitive and a public column of the domain",
            "pass --sensitive with columns of the release",
        )
    names = [*public, *sensitive]
    codes, labelled, view = _coded([original, *tables], domain.project(names))
    sizes = dict(zip(names, view.shape(names)))

    groups: list[tuple[str, ...]] = [(s, p) for s in sensitive for p in public]
    groups += combinations(sensitive, 2)
    if len(sensitive) > 1:
        groups += [(*sensitive, p) for p in public]
    out_tables: list[dict[str, Any]] = []
    cells: dict[tuple[str, ...], list[np.ndarray]] = {}
    for cols in groups:
        shares = [joint_shares(c, cols, sizes) for c in codes]
        out_tables.append(
            {"columns": list(cols), "way": len(cols), "tvd": [0.5 * float(np.abs(s - shares[0]).sum()) for s in shares[1:]]}
        )
        if cols[-1] in public:  # S × P and S₁ × … × P: the cells of S-004's Fig. 3b
            cells[cols] = shares
    return {
        "sensitive": sensitive,
        "public": public,
        "skipped": skipped,
        "tables": sorted(out_tables, key=lambda t: -float(np.mean(t["tvd"]))),
        "tvd_mean": {f"{w}-way": _mean_tvd(out_tables, w) for w in sorted({t["way"] for t in out_tables})},
        "yardsticks": _yardsticks(codes[0], groups, sizes, sensitive, round(float(np.mean([len(t) for t in tables]))), seed),
        "proportions": _proportions(cells, len(tables)),
        "indicators": _indicators(labelled, view, sensitive, public, seed),
        "logit": {s: _logit(labelled, view, s, public, rule, (levels or {}).get(s)) for s in sensitive},
    }


#: Resamples of the original the sampling floor of the sensitive tables averages.
FLOOR_DRAWS = 5


def _yardsticks(
    original: Mapping[str, np.ndarray],
    groups: Sequence[tuple[str, ...]],
    sizes: Mapping[str, int],
    sensitive: Sequence[str],
    rows: int,
    seed: int,
) -> dict[str, Any]:
    """The sampling floor and the no-relationship yardstick of the sensitive tables, per way.

    >>> codes = {"s": np.array([0, 0, 1, 1] * 50), "p": np.array([0, 0, 1, 1] * 50)}
    >>> y = _yardsticks(codes, [("s", "p")], {"s": 2, "p": 2}, ["s"], 200, 0)
    >>> y["independent"]["2-way"], y["floor"]["2-way"] < 0.1
    (0.5, True)
    """
    n = len(next(iter(original.values())))
    rng = np.random.default_rng([seed, 11])
    draws = [rng.integers(0, n, max(rows, 1)) for _ in range(FLOOR_DRAWS)]
    floor: dict[int, list[float]] = {}
    independent: dict[int, list[float]] = {}
    for cols in groups:
        shares = joint_shares(original, cols, sizes)
        for idx in draws:
            again = joint_shares({c: original[c][idx] for c in cols}, cols, sizes)
            floor.setdefault(len(cols), []).append(0.5 * float(np.abs(again - shares).sum()))
        table = shares.reshape(tuple(sizes[c] for c in cols))
        inner = [k for k, c in enumerate(cols) if c in sensitive]  # the sensitive block against the rest
        if len(inner) == len(cols):  # S × S′: the first sensitive column against the other
            inner = [0]
        outer = [k for k in range(len(cols)) if k not in inner]
        apart = table.sum(axis=tuple(outer), keepdims=True) * table.sum(axis=tuple(inner), keepdims=True)
        independent.setdefault(len(cols), []).append(0.5 * float(np.abs(apart - table).sum()))
    way = lambda found: {f"{w}-way": float(np.mean(v)) for w, v in sorted(found.items())}  # noqa: E731
    return {"rows": int(rows), "draws": FLOOR_DRAWS, "floor": way(floor), "independent": way(independent)}


def joint_shares(codes: Mapping[str, np.ndarray], cols: Sequence[str], sizes: Mapping[str, int]) -> np.ndarray:
    """Proportions of the cells of the table of ``cols``, flattened in C order (last column fastest).

    >>> joint_shares({"a": np.array([0, 1, 1]), "b": np.array([1, 0, 0])}, ["a", "b"], {"a": 2, "b": 2}).tolist()
    [0.0, 0.3333333333333333, 0.6666666666666666, 0.0]
    """
    shape = tuple(sizes[c] for c in cols)
    flat = np.ravel_multi_index(tuple(np.asarray(codes[c]) for c in cols), shape)
    counts = np.bincount(flat, minlength=math.prod(shape)).astype(float)
    return counts / max(counts.sum(), 1.0)


def _coded(frames: Sequence[pd.DataFrame], domain: Domain) -> tuple[list[dict[str, np.ndarray]], list[pd.DataFrame], Domain]:
    """Each frame's codes, the same frames with each code's label (text), and the domain of those labels.

    The labels are the domain's (categories, or bin ranges of a binned numeric column), so a
    binned column is categorical here; rows outside the domain are left out (with a warning).
    """
    from .plots import code_labels

    labels = {}
    for c in domain.columns:
        texts = [str(t) for t in code_labels(c)]
        if len(set(texts)) < len(texts):  # labels that repeat: fall back on unique texts
            texts = [f"{t} ({k})" for k, t in enumerate(texts)]
        labels[c.name] = texts
    whats = ["the original"] + [f"synthetic set {k}" for k in range(1, len(frames))]
    codes = [encode_valid(f, domain, w)[0] for f, w in zip(frames, whats)]
    labelled = [pd.DataFrame({n: np.asarray(labels[n], dtype=object)[c[n]] for n in domain.names}) for c in codes]
    view = Domain(tuple(Column(c.name, "categorical", categories=tuple(labels[c.name]), role=c.role) for c in domain.columns))
    return codes, labelled, view


def _proportions(cells: dict[tuple[str, ...], list[np.ndarray]], m: int) -> dict[str, Any]:
    keys = list(cells)
    o = np.concatenate([cells[k][0] for k in keys])
    synthetic = [np.concatenate([cells[k][j] for k in keys]) for j in range(1, m + 1)]
    way = np.concatenate([np.full(cells[k][0].size, len(k)) for k in keys])
    return {
        "tables": [list(k) for k in keys],
        "cells": [int(cells[k][0].size) for k in keys],
        "original": o.tolist(),
        "synthetic": [s.tolist() for s in synthetic],
        "r": [_pearson(o, s) for s in synthetic],
        "r_by_way": {f"{w}-way": [_pearson(o[way == w], s[way == w]) for s in synthetic] for w in sorted(set(way.tolist()))},
    }


def _mean_tvd(tables: list[dict], way: int) -> float:
    values = [np.mean(t["tvd"]) for t in tables if t["way"] == way]
    return float(np.mean(values)) if values else math.nan


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; NaN when either side is constant (or has fewer than two values)."""
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _indicators(frames: list[pd.DataFrame], view: Domain, sensitive: list[str], public: list[str], seed: int) -> dict[str, Any]:
    """Indicator pairs of each sensitive column with each public column and each later sensitive one.

    Every pair is used (none sampled); ``x`` is the sensitive column's indicator, so a slope is
    P(B = b | S = s) − P(B = b | S ≠ s).
    """
    pairs = []
    for s in sensitive:
        for other in [*public, *sensitive[sensitive.index(s) + 1 :]]:
            found = indicator_relationships(frames[0], frames[1:], view.project([s, other]), max_pairs=10**9, seed=seed)
            pairs += found["pairs"]
    out: dict[str, Any] = {"pairs": pairs, "pairs_used": len(pairs)}
    for key in ("slope", "corr"):
        o = np.array([p[f"{key}_original"] for p in pairs], dtype=float)
        for k in range(len(frames) - 1):
            syn = np.array([p[f"{key}_synthetic"][k] for p in pairs], dtype=float)
            ok = np.isfinite(o) & np.isfinite(syn)
            out.setdefault(f"{key}_r", []).append(_pearson(o[ok], syn[ok]) if ok.sum() > 2 else math.nan)
            out.setdefault(f"{key}_mean_abs_diff", []).append(float(np.abs(o[ok] - syn[ok]).mean()) if ok.any() else math.nan)
    return out


def response_level(values: pd.Series, column: Column, named: Any = None) -> tuple[str, str]:
    """The category of a sensitive column that the logistic regression models, and why.

    ``named`` (a category or its label) if given; else the rarer of a binary column's two
    categories (S-004 models female); else the most common category but one, the most common
    being the reference. ``values`` holds the column's labels (as :func:`_coded` makes them).

    >>> c = Column("sex", "categorical", categories=("Male", "Female"))
    >>> response_level(pd.Series(["Male", "Male", "Female"]), c)
    ('Female', 'the rarer of two categories')
    >>> response_level(pd.Series(["Male", "Male", "Female"]), c, named="Male")
    ('Male', 'named')
    """
    texts = list(column.category_texts)
    if named is not None:
        text = str(int(named)) if isinstance(named, float) and named.is_integer() else str(named)
        if text not in texts:
            raise DipsyError(f"the level {named!r} is not a category of {column.name!r}", f"name one of {texts}")
        return text, "named"
    counts = values.value_counts().reindex(texts, fill_value=0).sort_values(ascending=False, kind="stable")
    present = counts[counts > 0]
    if len(texts) == 2:
        return str(counts.index[-1]), "the rarer of two categories"
    return str(present.index[min(1, len(present) - 1)]), "the most common category but one (the most common is the reference)"


def _logit(
    frames: list[pd.DataFrame], view: Domain, column: str, public: list[str], rule: str | None, named: Any
) -> dict[str, Any]:
    """1[column = level] on the public columns as categories, the original against the sets.

    Each predictor keeps its levels that are at least :data:`RARE` of the original, at most the
    :data:`LEVELS` most common, and present in every set; the rest are pooled as "other". Should
    "other" be empty in some frames only (say the one rare level is absent from a synthetic set),
    it joins the least common kept level (a term such as ``age[T.3+other]``), so that every frame
    gives the same terms. The reference is the most common level. A model that still cannot be
    compared (the response constant in a set, a failed fit) is reported, not raised.
    """
    from .regressions import regression  # the evaluation's own comparison of one model on both

    level, why = response_level(frames[0][column], view[column], named)
    response = f"{column} = {level}"
    safe = {p: f"x{k}" for k, p in enumerate(public)}
    try:
        for k, f in enumerate(frames):
            share = float((f[column] == level).mean())
            if share in (0.0, 1.0):
                where = "the original" if k == 0 else f"synthetic set {k}"
                raise _NotComparable(
                    f"{'no' if share == 0 else 'every'} record of {where} has {response}, so the model cannot be fitted"
                )
        pooled, absent, merged, categories, fill = {}, {}, {}, {}, {}
        for p in public:
            order = list(view[p].category_texts)
            other = pooled_label(p, frames)
            shares = frames[0][p].value_counts(normalize=True)
            kept = [v for v in shares.index[:LEVELS] if shares[v] >= RARE]
            gone = [v for v in kept if any(not (f[p] == v).any() for f in frames[1:])]
            kept = [v for v in kept if v not in gone]
            others = [(~f[p].isin(kept)).any() for f in frames]
            fill[p] = other
            if any(others) and not all(others):  # "other" would be a term of some frames only
                if len(kept) < 2:
                    k = others.index(False)
                    raise _NotComparable(
                        f"the predictor {p} has no level present in every set but its reference "
                        f"and {other}, which {'the original' if k == 0 else f'synthetic set {k}'} lacks"
                    )
                host = min(kept[1:], key=lambda v: (shares[v], order.index(v)))
                fill[p] = merged[p] = f"{host}+{other}"
                kept = [fill[p] if v == host else v for v in kept]
                order.append(fill[p])
                order.insert(order.index(host), order.pop())
            # the reference (most common level) first, then domain order, "other" last
            categories[p] = kept[:1] + sorted(kept[1:], key=order.index) + ([other] if all(others) else [])
            pooled[p] = sorted(
                set(shares.index) - set(kept) - set(gone) - {merged.get(p, "").removesuffix(f"+{other}")}, key=order.index
            )
            if gone:
                absent[p] = sorted(gone, key=order.index)

        def frame(data: pd.DataFrame) -> pd.DataFrame:
            out = pd.DataFrame({"y": (data[column] == level).astype(float)})
            for p in public:
                out[safe[p]] = pd.Categorical(data[p].where(data[p].isin(categories[p]), fill[p]), categories=categories[p])
            return out

        formula = "y ~ " + " + ".join(f"C({safe[p]})" for p in public)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = regression(formula, frame(frames[0]), [frame(t) for t in frames[1:]], rule, model="logit")
    except _NotComparable as e:
        return {"response": response, "level": level, "error": str(e)}
    except Exception as e:  # noqa: BLE001 — a model that cannot be compared is reported, never fatal
        text = str(getattr(e, "problem", "") or e)
        return {"response": response, "level": level, "error": (text.splitlines() or [type(e).__name__])[0] or type(e).__name__}
    for c in result["coefficients"]:
        for p, x in safe.items():
            c["term"] = c["term"].replace(f"C({x})", p)
    o = np.array([c["original"]["estimate"] for c in result["coefficients"]], dtype=float)
    s = np.array([c["synthetic"]["estimate"] for c in result["coefficients"]], dtype=float)
    ok = np.isfinite(o) & np.isfinite(s)
    return {
        "response": response,
        "level": level,
        "level_rule": why,
        "predictors": list(public),
        "formula": f"1[{response}] ~ " + " + ".join(f"C({p})" for p in public),
        "reference": {p: categories[p][0] for p in public},
        "pooled": {p: v for p, v in pooled.items() if v},
        "pooled_absent": absent,
        "merged": merged,
        "pooled_below": RARE,
        "levels_kept": LEVELS,
        "coefficient_r": _pearson(o[ok], s[ok]),
        "warnings": sorted({str(w.message).splitlines()[0] for w in caught if str(w.message)}),
        **{k: v for k, v in result.items() if k != "formula"},
    }


def pooled_label(column: str, frames: list[pd.DataFrame]) -> str:
    """The name of the pooled rare levels of ``column``: :data:`OTHER`, in parentheses as often as
    needed to differ from every value the frames hold (a real category may be called "other").

    >>> pooled_label("job", [pd.DataFrame({"job": ["clerk", "other", "(other)"]})])
    '((other))'
    """
    taken = set().union(*(set(f[column].astype(str)) for f in frames))
    label = OTHER
    while label in taken:
        label = f"({label})"
    return label


class _NotComparable(Exception):
    """Why a logistic model cannot be compared between the original and the sets."""
