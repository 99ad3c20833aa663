"""The codec (:mod:`dipsy.domain.codec`) as Spark SQL expressions, for Parquet data of plain types.

The Spark engine validates and encodes such data in Spark itself, with no Python worker: each
column's code, number and missing state is a Spark ``Column`` over its raw values, and the
validation report's counts are one Spark aggregate. The rules are the codec's, written as the
DuckDB engine writes them in SQL, for the pandas types a Parquet column can be read as:

- integers (``int8`` … ``int64``, ``uint8`` … ``uint32``): pandas reads int64, or float64 if the
  column holds nulls; either way a value's number is its double and its text its decimal digits
  (text categories on ``int64`` are left to the codec itself: pandas' float64 rounds past 2⁵³);
- ``float64`` and ``float32``: NaN is missing, as null is; a text category matches the float whose
  text (the codec's ``as_text``) it is;
- text: matched as text against text categories and text missing codes. Text read as numbers
  (pandas' ``to_numeric``) is left to the codec itself, as are booleans, dictionaries (partition
  columns, pandas categories), decimals, dates and nullable extension floats.

A category or bin is found by binary search (nested comparisons with the sorted public keys or
edges), not one comparison per key; consecutive whole-number categories by arithmetic. Columns
of more than :data:`MAX_KEYS` keys or edges are left to the codec itself. Nothing here reads the
data: the expressions are built from the public domain and the file's schema.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..domain import Column
from ..domain.codec import float_for_text

#: Keys (categories) or interior bin edges a column may have for its search to be written as
#: Spark expressions (about two nodes each); beyond, Python workers code the data (the codec itself).
MAX_KEYS = 4096
#: Keys searched by a chain of equalities rather than halved further.
_FLAT = 8
_INT_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_MISSING, _WRONG, _OUTSIDE = -1, -2, -3


def native_kinds(columns: tuple[Column, ...], schema: pa.Schema) -> dict[str, str] | None:
    """Each column's kind (``int``, ``int64``, ``float``, ``float32``, ``str``) if every one of
    ``columns`` can be coded in Spark SQL exactly as the codec codes it; else None."""
    meta = {c.get("field_name", c.get("name")): c for c in (schema.pandas_metadata or {}).get("columns", [])}
    kinds = {}
    for c in columns:
        if c.name not in schema.names:
            return None
        kind = _kind(schema.field(c.name).type, str(meta.get(c.name, {}).get("numpy_type", "")))
        if kind is None or not _expressible(c, kind):
            return None
        kinds[c.name] = kind
    return kinds


def _kind(dtype: pa.DataType, numpy_type: str) -> str | None:
    if pa.types.is_integer(dtype) and dtype != pa.uint64():  # Spark reads uint64 as a decimal
        return "int64" if dtype == pa.int64() else "int"
    if pa.types.is_floating(dtype) and numpy_type in ("", "float64", "float32"):  # not pandas' Float64 (NaN is no NA)
        return {pa.float64(): "float", pa.float32(): "float32"}.get(dtype)
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "str"
    return None


def _expressible(column: Column, kind: str) -> bool:
    texts = column.is_categorical and not column.numeric_categories
    number_codes = column.missing is not None and bool(column.missing.code_states()[0])
    if kind == "str" and (not texts or number_codes):
        return False  # numbers read from text: pandas' to_numeric
    if kind == "int64" and texts:
        return False  # text of an int64 column with nulls: pandas' float64, rounded past 2⁵³
    if column.is_categorical:
        return _consecutive(column) is not None or len(column.levels) <= MAX_KEYS
    return column.bins is None or len(column.bins) - 2 <= MAX_KEYS


def _consecutive(column: Column) -> float | None:
    """The first of a numeric column's categories if they are ``a, a + 1, …`` in order (codes by
    arithmetic), else None."""
    if not column.numeric_categories:
        return None
    keys = [float(c) for c in column.levels]
    first = keys[0]
    whole = first.is_integer() and abs(first) + len(keys) < 2.0**52
    return first if whole and keys == [first + i for i in range(len(keys))] else None


@dataclass(frozen=True)
class Coded:
    """One column's verdicts for a row, as Spark expressions: ``problem`` (0 for a valid row, else
    the codec's reason, −1 missing, −2 wrong type, −3 outside), ``code`` (the codec's code of a
    valid row, as ``encode_column`` gives it), ``number`` (``numbers``) and ``state`` (``states``)."""

    problem: Any
    code: Any
    number: Any
    state: Any


def coded(column: Column, kind: str, raw) -> Coded:
    """The codec's verdicts for ``column`` of ``kind`` (see :func:`native_kinds`) over ``raw``."""
    from pyspark.sql import functions as F

    floats = kind in ("float", "float32")
    m = raw.isNull() | F.isnan(raw) if floats else raw.isNull()
    v = None if kind == "str" else raw.cast("double")
    nan = F.lit(float("nan"))
    states = _state_arms(column, kind, m, raw, v)
    wrong, outside, value = _value(column, kind, raw, v)
    size = column.value_size
    problem = code = None
    for when, s in states:
        problem = _when(problem, when, 0)
        code = _when(code, when, 0 if size is None else size + s)
    problem, code = _when(problem, m, _MISSING), _when(code, m, _MISSING)
    if wrong is not None:
        problem, code = _when(problem, wrong, _WRONG), _when(code, wrong, _WRONG)
    problem, code = _when(problem, outside, _OUTSIDE), _when(code, outside, _OUTSIDE)
    number = state = None
    if not column.is_categorical:
        number = F.when(m, nan).otherwise(_clipped(column, v))
        state = F.lit(-1)
        for when, s in reversed(states):
            state = F.when(when, s).otherwise(state)
    return Coded(problem.otherwise(0), code.otherwise(value), number, state)


def _when(chain, condition, value):
    from pyspark.sql import functions as F

    return F.when(condition, value) if chain is None else chain.when(condition, value)


def _state_arms(column: Column, kind: str, m, raw, v) -> list[tuple[Any, int]]:
    """The codec's ``_states``: (condition, state) pairs. A text code matches only values that are
    not numbers, so never one of a number column (whose NaN is missing)."""
    if column.missing is None:
        return []
    from pyspark.sql import functions as F

    arms = [] if column.missing.empty_state is None else [(m, column.missing.empty_state)]
    numbers, texts = column.missing.code_states()
    if v is not None:
        arms += [(~m & (v == F.lit(code)), s) for s, code in numbers]
    if kind == "str":
        arms += [(~m & (raw == F.lit(code)), s) for s, code in texts]
    return arms


def _value(column: Column, kind: str, raw, v) -> tuple[Any, Any, Any]:
    """``(wrong, outside, code)`` of a value that is in no state and not missing (``wrong`` None
    where no value can be of the wrong type)."""
    from pyspark.sql import functions as F

    if column.is_categorical:
        found = _category(column, kind, raw, v)
        return None, found.isNull(), found
    wrong = (v != F.rint(v)) if column.kind == "integer" and kind in ("float", "float32") else None
    lower, upper = (float(b) for b in column.bounds)
    x = _clipped(column, v)
    outside = F.lit(False) if column.clip else ~((x >= F.lit(lower)) & (x <= F.lit(upper)))
    if column.bins is not None:
        edges = [float(e) for e in column.bins[1:-1]]
        code = _search(x, [(e, None) for e in edges], bins=True)
    elif column.kind == "integer":
        code = (x - F.lit(lower)).cast("long")
    else:
        code = F.lit(0)  # valid, but a numeric column without bins has no cells
    return wrong, outside, code


def _category(column: Column, kind: str, raw, v):
    """The code of the category a value matches, or null."""
    from pyspark.sql import functions as F

    first = _consecutive(column)
    if first is not None:
        last = first + len(column.levels) - 1
        match = (v >= F.lit(first)) & (v <= F.lit(last))
        if kind in ("float", "float32"):
            match &= v == F.rint(v)
        return F.when(match, (v - F.lit(first)).cast("long"))
    if column.numeric_categories:
        keys = [(float(c), k) for k, c in enumerate(column.levels) if not math.isnan(float(c))]
        return _search(v, sorted(keys))
    texts = column.category_texts
    if kind == "str":
        return _search(raw, sorted((t, k) for k, t in enumerate(texts)))
    if kind in ("float", "float32"):
        found = ((float_for_text(t, kind), k) for k, t in enumerate(texts))
        return _search(v, sorted((d, k) for d, k in found if d is not None))
    # integers: a value's text is its digits, so a category matches the integer it writes
    ints = ((int(t), k) for k, t in enumerate(texts) if _INT_TEXT.fullmatch(t) and t != "-0")
    return _search(raw.cast("long"), sorted((n, k) for n, k in ints if -(2**63) <= n < 2**63))


def _search(x, keys: list[tuple[Any, Any]], bins: bool = False):
    """Binary search of ``x`` in the sorted ``keys``: the code of the key equal to ``x`` (null if
    none); with ``bins``, the number of keys (interior edges) at most ``x``."""
    from pyspark.sql import functions as F

    def among(lo: int, hi: int):
        if bins and lo == hi:
            return F.lit(lo)
        if not bins and hi - lo <= _FLAT:
            chain = None
            for key, code in keys[lo:hi]:
                chain = _when(chain, x == F.lit(key), code)
            return F.lit(None).cast("long") if chain is None else chain
        mid = (lo + hi) // 2
        if bins:
            return F.when(x >= F.lit(keys[mid][0]), among(mid + 1, hi)).otherwise(among(lo, mid))
        return F.when(x < F.lit(keys[mid][0]), among(lo, mid)).otherwise(among(mid, hi))

    return among(0, len(keys))


def _clipped(column: Column, v):
    """The codec's ``clipped``: a ``clip: true`` column's number set to the nearest bound."""
    from pyspark.sql import functions as F

    if not column.clip or v is None:
        return v
    lower, upper = (float(b) for b in column.bounds)
    return F.least(F.greatest(v, F.lit(lower)), F.lit(upper))
