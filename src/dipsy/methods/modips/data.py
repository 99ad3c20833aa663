"""Reading the values modips needs through an engine (the engine is still the only reader of records).

The engine interface so far answers contingency tables only; modips also needs sums and sums of
squares and cross-products per cell. Rather than add methods to the shared interface, this helper
asks each engine for the valid rows of the needed columns — cell codes for categorical columns,
numbers for numeric ones — as NumPy arrays, and :mod:`.models` computes the statistics from them
(sorted first, so that both engines give identical bits). It holds the columns in memory: two
arrays of ``n`` values each for the normal model, ``n × (1 + p)`` for the mixed one.

- :class:`~dipsy.engine.NumpyEngine`: the codec's :func:`~dipsy.domain.encode_frame` over its
  DataFrame (the same rules that decided which rows are valid).
- :class:`~dipsy.engine.DuckDBEngine`: one SQL query over the file through the engine's own codec
  in SQL (its ``_codes_sql``, whose ``k`` columns are the codes, ``< 0`` for invalid rows, and
  ``x`` columns the numbers as pandas would read them), keeping rows valid in every column in scope.
  This uses the engine's private query builder, deliberately: it is the one place where the
  codec's matching rules are written in SQL.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from ...domain import encode_frame
from ...engine import Engine, NumpyEngine
from ...errors import DipsyError


def read_columns(engine: Engine, names: Iterable[str]) -> dict[str, np.ndarray]:
    """Codes (int64) of categorical columns and values (float64) of numeric ones, valid rows only.

    >>> from dipsy.domain import Column, Domain
    >>> d = Domain((Column("g", "categorical", categories=("a", "b")), Column("y", "numeric", lower=0, upper=9, bins=(0, 3, 9))))
    >>> e = NumpyEngine(pd.DataFrame({"g": ["b", "a", "c"], "y": [1.5, 2.0, 3.0]}), d, on_invalid="drop")
    >>> {k: v.tolist() for k, v in read_columns(e, ["g", "y"]).items()}
    {'g': [1, 0], 'y': [1.5, 2.0]}
    """
    names = tuple(names)
    engine.ensure_valid()
    domain = engine.domain
    if isinstance(engine, NumpyEngine):
        encoded, _ = encode_frame(engine.frame, domain)
        valid = np.ones(len(engine.frame), dtype=bool)
        for e in encoded.values():
            valid &= ~e.invalid
        out = {}
        for name in names:
            if domain[name].is_categorical:
                out[name] = encoded[name].codes[valid].astype(np.int64)
            else:
                out[name] = pd.to_numeric(engine.frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)[valid]
        return out
    codes_sql = getattr(engine, "_codes_sql", None)
    if codes_sql is None:
        raise DipsyError(f"modips cannot read values through a {type(engine).__name__}", "pass a DataFrame or a CSV/Parquet file")
    scope = domain.columns  # rows invalid in any column in scope are left out, as in every query
    index = {c.name: j for j, c in enumerate(scope)}
    select = [f"k{index[n]}" if domain[n].is_categorical else f"x{index[n]}" for n in names]
    where = " AND ".join(f"k{j} >= 0" for j in range(len(scope)))
    result = engine._run(f"SELECT {', '.join(select)} FROM ({codes_sql(scope, keep=True)}) WHERE {where}").fetchnumpy()
    return {
        n: np.asarray(result[s], dtype=np.int64 if domain[n].is_categorical else float)
        for n, s in zip(names, select)
    }
