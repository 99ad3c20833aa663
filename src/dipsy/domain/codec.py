"""Records to integer codes and back, for data held in pandas.

Matching rules (the DuckDB engine implements the same ones in SQL, so both agree exactly):

- a categorical column whose categories are all numbers matches values as numbers (``1``, ``1.0``
  and ``"1"`` are the same category); otherwise values are matched as text, a whole-number float
  written without its ``.0``;
- integer and numeric values are read as numbers; an integer column rejects fractions;
- a value below ``lower`` or above ``upper`` is outside the domain, unless the column has
  ``clip: true``: then it is set to the nearest bound first (after the checks of type and
  wholeness, so ``2.5`` in an integer column is still of the wrong type); bins assign
  ``k = #{interior edges <= v}`` (the last bin holds ``upper``).

Declared missing states (a column's ``missing:``, :mod:`dipsy.domain.missing`) are matched
first, before any other check and before clipping: an empty value is the empty state when one is
declared; a value that reads as a number equal to a number code (``-8``, ``-8.0``, ``"-8"``) is
that code's state; a value whose text (as above) is a text code (``".a"``) is that code's state.
Such a row is valid; its code is ``K + s`` for state ``s`` of a column of ``K`` value codes (``K``
for every state when pooled; ``-1``, like its values, in a numeric column without bins).

Decoding returns the category, the integer, or a value drawn uniformly inside its bin; a state
decodes to its code as written (``-8``, ``".a"``), or to an empty value (None, NaN in a column of
numbers) for the empty state and the pooled one. The type of a decoded column depends on its
declaration alone, never on which codes a set holds (so that the chunks of one set agree).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import Column
from .domain import Domain
from .validation import EXAMPLES, MISSING, OUTSIDE, WRONG_TYPE, ColumnIssue, ValidationReport


@dataclass(frozen=True)
class EncodedColumn:
    """Codes of one column (``-1`` where the row is invalid) and the masks of what is wrong."""

    codes: np.ndarray
    missing: np.ndarray
    wrong_type: np.ndarray
    outside: np.ndarray

    @property
    def invalid(self) -> np.ndarray:
        return self.missing | self.wrong_type | self.outside


def encode_column(values: pd.Series, column: Column) -> EncodedColumn:
    """Encode one column; numeric columns without bins are checked and get code ``-1``.

    >>> c = Column("x", "integer", lower=0, upper=9, bins=(0, 5, 9))
    >>> encode_column(pd.Series([0, 4.0, 5, 9, 10, 2.5, None]), c).codes.tolist()
    [0, 0, 1, 1, -1, -1, -1]
    >>> from dipsy.domain.missing import Missing
    >>> m = Missing(empty="skipped", codes=((-8, "refused"), (".a", "not asked")))
    >>> encode_column(pd.Series([0, -8, "-8.0", None, ".a", "x"]), Column("x", "integer", lower=0, upper=9, missing=m)).codes.tolist()
    [0, 11, 11, 10, 12, -1]
    """
    missing = values.isna().to_numpy()
    numeric = not (column.is_categorical and not column.numeric_categories)
    v = (
        pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        if numeric or column.missing is not None
        else None
    )
    encoded = _encode_values(values, column, missing, v)
    if column.missing is None:
        return encoded
    assert v is not None, "computed for every column with missing states"
    state = _states(values, column, missing, v)
    hit = state >= 0
    size = column.value_size
    codes = np.where(hit, -1 if size is None else size + state, encoded.codes)
    return EncodedColumn(codes.astype(np.int64), encoded.missing & ~hit, encoded.wrong_type & ~hit, encoded.outside & ~hit)


def states(values: pd.Series, column: Column) -> np.ndarray:
    """The missing state of each value (``-1``: none), as :func:`encode_column` matches them.

    >>> from dipsy.domain.missing import Missing
    >>> c = Column("x", "numeric", lower=0, upper=1, missing=Missing(empty="skipped", codes=((-9, "n/a"),)))
    >>> states(pd.Series([0.5, None, -9.0, -8]), c).tolist()
    [-1, 0, 1, -1]
    """
    if column.missing is None:
        return np.full(len(values), -1, dtype=np.int64)
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return _states(values, column, values.isna().to_numpy(), v)


def _states(values: pd.Series, column: Column, missing: np.ndarray, v: np.ndarray) -> np.ndarray:
    assert column.missing is not None, "called for columns with missing states"
    out = np.full(len(values), -1, dtype=np.int64)
    empty = column.missing.empty_state
    if empty is not None:
        out[missing] = empty
    numbers, texts = column.missing.code_states()
    for state, code in numbers:
        out[~missing & (v == code)] = state
    if texts:
        # A text code does not read as a number (Missing refuses one that does), so only values
        # that are not numbers can match; their text is read as for text categories.
        rows = np.flatnonzero(~missing & np.isnan(v))
        if rows.size:
            found = pd.Index([t for _, t in texts]).get_indexer(as_text(values.iloc[rows]))
            out[rows[found >= 0]] = np.asarray([s for s, _ in texts], dtype=np.int64)[found[found >= 0]]
    return out


def _encode_values(values: pd.Series, column: Column, missing: np.ndarray, v: np.ndarray | None) -> EncodedColumn:
    """The codes of the values alone (missing states not matched): what the codec did before them."""
    if column.is_categorical and not column.numeric_categories:
        text = as_text(values)
        codes = pd.Index(column.category_texts).get_indexer(text).astype(np.int64)
        wrong = np.zeros_like(missing)
        outside = ~missing & (codes < 0)
        return EncodedColumn(np.where(missing, -1, codes), missing, wrong, outside)

    assert v is not None, "computed for every column of numbers"
    wrong = ~missing & np.isnan(v)
    if column.kind == "integer":
        wrong |= ~missing & ~wrong & (v != np.floor(v))
    ok = ~missing & ~wrong
    v = clipped(v, column)
    if column.is_categorical:
        keys = np.asarray(column.categories, dtype=float)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        pos = np.clip(np.searchsorted(sorted_keys, v), 0, len(keys) - 1)
        found = ok & (sorted_keys[pos] == v)
        codes = np.where(found, order[pos], -1)
        return EncodedColumn(codes.astype(np.int64), missing, wrong, ok & ~found)

    inside = ok & (v >= column.lower) & (v <= column.upper)
    outside = ok & ~inside
    if column.bins is not None:
        interior = np.asarray(column.bins[1:-1], dtype=float)
        codes = np.searchsorted(interior, v, side="right")
    elif column.kind == "integer":
        codes = np.where(inside, v - column.lower, 0)
    else:
        codes = np.full(v.shape, -1)
    return EncodedColumn(np.where(inside, codes, -1).astype(np.int64), missing, wrong, outside)


def clipped(v: np.ndarray, column: Column) -> np.ndarray:
    """Numbers of a ``clip: true`` column set to the nearest bound when outside (top/bottom-coding;
    ``±inf`` too, NaN stays NaN); other columns' numbers as they are.

    >>> clipped(np.array([-5.0, 3.0, np.inf, np.nan]), Column("x", "numeric", lower=0, upper=10, clip=True)).tolist()
    [0.0, 3.0, 10.0, nan]
    """
    if not column.clip:
        return v
    lower, upper = column.bounds
    return np.clip(v, float(lower), float(upper))


def numbers(values: pd.Series, column: Column) -> np.ndarray:
    """An integer or numeric column's values as numbers, as the codec reads them (clipped if declared)."""
    return clipped(pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan), column)


def encode_frame(frame: pd.DataFrame, domain: Domain) -> tuple[dict[str, EncodedColumn], ValidationReport]:
    """Encode every column of ``domain`` found in ``frame`` and report what does not match."""
    absent = tuple(n for n in domain.names if n not in frame.columns)
    if absent:
        return {}, ValidationReport(len(frame), len(frame), (), absent)
    encoded = {c.name: encode_column(frame[c.name], c) for c in domain.columns}
    issues = []
    invalid = np.zeros(len(frame), dtype=bool)
    for c in domain.columns:
        e = encoded[c.name]
        invalid |= e.invalid
        for problem, mask in ((MISSING, e.missing), (WRONG_TYPE, e.wrong_type), (OUTSIDE, e.outside)):
            rows = int(mask.sum())
            if rows:
                examples = () if problem == MISSING else _examples(frame[c.name][mask])
                issues.append(ColumnIssue(c.name, problem, rows, examples))
    return encoded, ValidationReport(len(frame), int(invalid.sum()), tuple(issues))


def valid_rows(encoded: Mapping[str, EncodedColumn], rows: int) -> np.ndarray:
    """Mask of the rows valid in every encoded column."""
    valid = np.ones(rows, dtype=bool)
    for e in encoded.values():
        valid &= ~e.invalid
    return valid


def decode(codes: Mapping[str, np.ndarray], domain: Domain, rng: np.random.Generator) -> pd.DataFrame:
    """Records from codes, one column of ``domain`` each, in the domain's order.

    >>> d = Domain((Column("r", "categorical", categories=("a", "b")),))
    >>> decode({"r": np.array([1, 0, 1])}, d, np.random.default_rng(0))["r"].tolist()
    ['b', 'a', 'b']
    """
    return pd.DataFrame({c.name: decode_column(np.asarray(codes[c.name]), c, rng) for c in domain.columns})


def decode_column(codes: np.ndarray, column: Column, rng: np.random.Generator) -> np.ndarray:
    """Values from codes: the category, the integer, a value drawn inside the bin, or a missing
    state's value (its code as written, or an empty value).

    >>> from dipsy.domain.missing import Missing
    >>> c = Column("x", "integer", lower=0, upper=2, missing=Missing(codes=((-8, "refused"), (-9, "n/a"))))
    >>> decode_column(np.array([0, 2, 3, 4]), c, np.random.default_rng(0)).tolist()
    [0, 2, -8, -9]
    >>> decode_column(np.array([1, 3]), Column("r", "categorical", categories=("a", "b"), missing=Missing(empty="skipped", codes=((".a", "not asked"),))), np.random.default_rng(0)).tolist()
    ['b', '.a']
    """
    codes = np.asarray(codes)
    if column.missing is None:
        return _decode_values(codes, column, rng)
    size = column.n_codes - column.n_states
    state = codes >= size
    out = np.empty(codes.shape, dtype=decoded_dtype(column))
    out[~state] = _decode_values(codes[~state], column, rng)
    if state.any():
        out[state] = state_values(column)[codes[state] - size]
    return out


def state_values(column: Column) -> np.ndarray:
    """What each missing state of ``column`` decodes to, in the decoded column's type
    (:func:`decoded_dtype`): its code as written, or an empty value (None; NaN among numbers). In a
    column of text values a number code is written as text (``"-8"``), which reads back as it.

    >>> from dipsy.domain.missing import Missing
    >>> m = Missing(empty="skipped", codes=((-8, "refused"),))
    >>> state_values(Column("r", "categorical", categories=("a", "b"), missing=m)).tolist()
    [None, '-8']
    >>> state_values(Column("x", "integer", lower=0, upper=9, missing=m)).tolist()
    [nan, -8.0]
    """
    assert column.missing is not None, "called for columns with missing states"
    dtype = decoded_dtype(column)
    values = list(column.missing.values)
    if dtype.kind != "O":  # numbers: an empty value is NaN
        return np.asarray([np.nan if x is None else x for x in values], dtype=dtype)
    if column.is_categorical and not column.numeric_categories:
        values = [x if x is None or isinstance(x, str) else _number_text(x) for x in values]
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def repeated_column(numbers: np.ndarray, states: np.ndarray | None, column: Column) -> np.ndarray:
    """A public integer or numeric column repeated as it is: its ``numbers`` where a value is present,
    and the value of the row's missing state (:func:`state_values`; ``states`` as :func:`states`
    gives them, −1 for none) where it is in one; without declared states, the numbers (integers as
    int64).

    >>> from dipsy.domain.missing import Missing
    >>> c = Column("x", "integer", lower=0, upper=9, missing=Missing(codes=((-8, "refused"),)))
    >>> repeated_column(np.array([3.0, np.nan]), np.array([-1, 0]), c).tolist()
    [3, -8]
    """
    numbers = np.asarray(numbers, dtype=float)
    if column.missing is None:
        return numbers.astype(np.int64) if column.kind == "integer" else numbers
    assert states is not None, "read with the column's states"
    out = np.empty(len(numbers), dtype=decoded_dtype(column))
    state = np.asarray(states) >= 0
    out[~state] = numbers[~state]
    out[state] = state_values(column)[np.asarray(states)[state]]
    return out


def decoded_dtype(column: Column) -> np.dtype:
    """The type of a decoded column with missing states, from its declaration alone (never from
    the codes a set holds): text if its values or a code are text (an empty value is None); else
    float if a value, a code or the empty value is not a whole number (NaN); else int64."""
    assert column.missing is not None, "called for columns with missing states"
    states = column.missing.values
    if column.is_categorical:
        texts = not column.numeric_categories
        whole = not texts and all(float(c).is_integer() for c in column.levels)
    else:
        texts, whole = False, column.kind == "integer"
    if texts or any(isinstance(x, str) for x in states):
        return np.dtype(object)
    if not whole or any(x is None or not float(x).is_integer() for x in states):
        return np.dtype(float)
    return np.dtype(np.int64)


def _number_text(x: float) -> str:
    """A number code as text, as :func:`as_text` reads a number (a whole number without '.0')."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _decode_values(codes: np.ndarray, column: Column, rng: np.random.Generator) -> np.ndarray:
    if column.is_categorical:
        cats = column.categories
        table = np.asarray(cats, dtype=object if not column.numeric_categories else None)
        return table[codes]
    if column.bins is None:
        return (int(column.bounds[0]) + codes).astype(np.int64)
    if column.kind == "integer":
        low, high = column.integer_bin_ranges()
        return rng.integers(low[codes], high[codes], endpoint=True)
    edges = np.asarray(column.bins, dtype=float)
    lo, hi = edges[codes], edges[codes + 1]
    x = lo + rng.random(codes.shape) * (hi - lo)
    # Rounding can land a draw on the upper edge, which belongs to the next bin (but for the last).
    last = codes == len(edges) - 2
    return np.where(last, np.minimum(x, hi), np.minimum(x, np.nextafter(hi, lo)))


def as_text(values: pd.Series) -> np.ndarray:
    """Values as text, whole-number floats without their '.0' (as the DuckDB engine does)."""
    if pd.api.types.is_float_dtype(values.dtype):
        v = values.to_numpy(dtype=float, na_value=np.nan)
        whole = (np.abs(v) < 2.0**63) & (v == np.floor(v))
        out = values.astype(str).to_numpy(dtype=object)
        out[whole] = v[whole].astype(np.int64).astype(str)
        return out
    return values.astype(str).to_numpy(dtype=object)


def float_for_text(text: str, kind: str) -> float | None:
    """The float (``kind`` float or float32) whose text (:func:`as_text`) is ``text``, or None if
    there is none: how an engine matches a text category against a float column.

    >>> float_for_text("1", "float"), float_for_text("1.0", "float"), float_for_text("0.1", "float32")
    (1.0, None, 0.10000000149011612)
    """
    try:
        d = float(text)
    except ValueError:
        return None
    if math.isnan(d):
        return None
    dtype = np.float32 if kind == "float32" else np.float64
    with np.errstate(over="ignore", invalid="ignore"):
        value = dtype(d)
        same = as_text(pd.Series([value], dtype=dtype))[0] == text
    return float(value) if same else None


def few_values(column: Column) -> bool:
    """Whether ``column`` has no more valid values than codes: categorical, or whole numbers
    without bins or clipping (an engine may then count distinct raw values and code those). A CSV
    field may write one value in several ways, ' 1' and '1'; a column still has only as many as
    the file holds."""
    return column.is_categorical or (column.kind == "integer" and column.bins is None and not column.clip)


def _examples(bad: pd.Series) -> tuple[str, ...]:
    """The first few distinct bad values, as text (made text first: a list or dict cannot be hashed)."""
    return tuple(pd.unique(bad.head(10_000).astype(str))[:EXAMPLES])
