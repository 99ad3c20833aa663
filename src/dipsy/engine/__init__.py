"""Engines: the only code that reads confidential records.

:func:`engine_for` picks the backend: a DataFrame is queried in memory (NumPy), a CSV or Parquet
path out of core (DuckDB, the default for files).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..domain import Domain
from ..errors import DataError
from .base import CountTable, Engine
from .numpy_engine import NumpyEngine


def engine_for(data: "pd.DataFrame | str | Path", domain: Domain, on_invalid: str = "error") -> Engine:
    """The engine for ``data``: NumPy for a DataFrame, DuckDB for a file path."""
    if isinstance(data, pd.DataFrame):
        return NumpyEngine(data, domain, on_invalid)
    if isinstance(data, (str, Path)):
        from .duckdb_engine import DuckDBEngine  # imported on first use: in-memory work needs no DuckDB

        return DuckDBEngine(data, domain, on_invalid)
    raise DataError(f"cannot read data of type {type(data).__name__}", "pass a CSV or Parquet path, or a pandas DataFrame")


def __getattr__(name: str):  # lazy export of DuckDBEngine
    if name == "DuckDBEngine":
        from .duckdb_engine import DuckDBEngine

        return DuckDBEngine
    raise AttributeError(name)


__all__ = ["CountTable", "DuckDBEngine", "Engine", "NumpyEngine", "engine_for"]
