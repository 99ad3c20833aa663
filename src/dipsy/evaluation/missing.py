"""Declared missing states in the evaluation: never numbers, and their shares compared.

A column's ``missing:`` (:mod:`dipsy.domain.missing`) names the values that are states, not
values: an empty cell, ``-8`` "refused", ``.a`` "not asked". The numeric metrics read a column's
numbers without them (a mean of incomes leaves out the −8s, as a survey analysis would), and
:func:`missing_shares` compares how often each state occurs in the original and in each set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Column, Domain
from ..domain.codec import encode_column, states
from .marginals import shared_domain


def value_numbers(values: pd.Series, column: Column) -> np.ndarray:
    """The numbers of ``values``, NaN where a value is a declared missing state (or no number).

    >>> from dipsy.domain.missing import Missing
    >>> c = Column("Income", "integer", lower=0, upper=100, missing=Missing(empty="n/a", codes=((-8, "refused"),)))
    >>> value_numbers(pd.Series([10, -8, None, 30]), c).tolist()
    [10.0, nan, nan, 30.0]
    """
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if column.missing is not None:
        v = np.where(states(values, column) >= 0, np.nan, v)  # a copy: to_numpy may share pandas' read-only data
    return v


def without_states(frame: pd.DataFrame, domain: Domain) -> pd.DataFrame:
    """``frame`` with every declared missing state of the domain's columns made empty (NaN), for
    analyses that drop incomplete rows (the regression formulas, the plots of numbers): a state is
    left out there, never read as a number or as a level of its own. Other columns are as they are.
    """
    out = frame
    for column in domain.columns:
        if column.missing is None or column.name not in frame:
            continue
        if out is frame:
            out = frame.copy()
        values = frame[column.name].reset_index(drop=True)
        state = states(values, column) >= 0
        if column.is_categorical:
            kept = values.astype(object).where(~state, None)
        else:
            kept = pd.Series(value_numbers(values, column))
        out[column.name] = kept.set_axis(frame.index).to_numpy()
    return out


def missing_shares(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> dict[str, Any]:
    """The share of each declared missing state, in the original and in each synthetic set.

    Shares are of the rows whose value in the column matches the domain (a value or a state).

    Returns
    -------
    dict
        One entry per column that declares missing states: ``"states"`` (each ``{"label",
        "code"}``, the code as written or None for the empty state and the pooled one),
        ``"original"`` (a share per state), ``"synthetic"`` (per set, a share per state),
        ``"max_abs_diff"`` (per set, the largest gap between a state's two shares), and ``"by"``:
        for each column against which the missingness is shown (:func:`_partners`), the share of
        rows in any missing state within each of its levels (``"levels"``, ``"original"``,
        ``"synthetic"`` per set, ``"max_abs_diff"`` per set). Empty when no column declares missing
        states.

    >>> from dipsy.domain.missing import Missing
    >>> d = Domain((Column("r", "categorical", categories=(1, 2), missing=Missing(codes=((-8, "refused"),))),))
    >>> out = missing_shares(pd.DataFrame({"r": [1, -8, 2, -8]}), [pd.DataFrame({"r": [1, 2, 2, -8]})], d)["r"]
    >>> out["original"], out["synthetic"], out["max_abs_diff"]
    ([0.5], [[0.25]], [0.25])
    """
    domain = shared_domain(original, tables, domain)
    out: dict[str, Any] = {}
    for column in domain.columns:
        if column.missing is None:
            continue
        shares = [_shares(frame[column.name], column) for frame in (original, *tables)]
        out[column.name] = {
            "states": [{"label": label, "code": code} for label, code in zip(column.missing.labels, column.missing.values)],
            "original": shares[0],
            "synthetic": shares[1:],
            "max_abs_diff": [max(abs(a - b) for a, b in zip(shares[0], s)) if shares[0] else 0.0 for s in shares[1:]],
            "by": {other: _missing_by(original, tables, column, domain[other]) for other in _partners(original, column, domain)},
        }
    return out


#: A level of the other column counts in :func:`_partners`'s choice when it holds this share of the rows.
PARTNER_LEVEL_SHARE = 0.01


def _partners(original: pd.DataFrame, column: Column, domain: Domain) -> list[str]:
    """The columns against which ``column``'s missingness is shown: those a rule names with it (the
    rule ties the state to them: 'N' exactly under 15), else the one across whose levels (each with
    at least 1 % of the rows) the original's share of rows in a missing state varies most."""
    named = [c for r in domain.rules if column.name in r.columns for c in r.columns if c != column.name and c in domain.names]
    if named:
        return list(dict.fromkeys(named))
    best, spread = None, 0.0
    missing = states(original[column.name].reset_index(drop=True), column) >= 0
    for other in domain.columns:
        if other.name == column.name or not other.encodable:
            continue
        codes = encode_column(original[other.name].reset_index(drop=True), other).codes
        rows = np.bincount(codes[codes >= 0], minlength=other.size or 0)
        hits = np.bincount(codes[(codes >= 0) & missing], minlength=other.size or 0)
        kept = rows >= PARTNER_LEVEL_SHARE * len(codes)
        if kept.sum() > 1:
            share = hits[kept] / rows[kept]
            if share.max() - share.min() > spread:
                best, spread = other.name, float(share.max() - share.min())
    return [best] if best is not None else []


def _missing_by(original: pd.DataFrame, tables: Sequence[pd.DataFrame], column: Column, other: Column) -> dict[str, Any]:
    """The share of rows in any missing state of ``column`` within each level of ``other`` (levels
    grouped as the report's heat maps group them), in the original and in each set."""
    from .plots import cap_levels, column_codes  # matplotlib, only where a column declares states

    codes, labels = zip(*(column_codes(f[other.name], other) for f in (original, *tables)))
    grouped, names = cap_levels(list(codes), labels[0], other, codes[0])
    shares = []
    for frame, level in zip((original, *tables), grouped):
        missing = states(frame[column.name].reset_index(drop=True), column) >= 0
        ok = level >= 0
        rows = np.bincount(level[ok], minlength=len(names))
        hits = np.bincount(level[ok & missing], minlength=len(names))
        shares.append([float(h / r) if r else float("nan") for h, r in zip(hits, rows)])
    return {
        "levels": list(names),
        "original": shares[0],
        "synthetic": shares[1:],
        "max_abs_diff": [float(np.nanmax(np.abs(np.subtract(s, shares[0])), initial=0.0)) for s in shares[1:]],
    }


def _shares(values: pd.Series, column: Column) -> list[float]:
    assert column.missing is not None, "called for columns with missing states"
    encoded = encode_column(values.reset_index(drop=True), column)
    state = states(values.reset_index(drop=True), column)
    valid = ~encoded.invalid
    rows = int(valid.sum())
    counts = np.bincount(state[valid & (state >= 0)], minlength=column.n_states)
    return [float(c / rows) if rows else float("nan") for c in counts]
