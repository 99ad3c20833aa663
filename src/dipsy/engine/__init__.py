"""Engines: the only code that reads confidential records.

:func:`engine_for` picks the backend: a DataFrame is queried in memory (NumPy), a CSV or Parquet
path out of core (DuckDB, the default for files) or, when asked, with Spark. A SAS, Stata or SPSS
file is converted to a private Parquet copy first, which every backend reads (:mod:`.agency`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..domain import Domain
from ..errors import DataError
from .agency import is_agency, open_engine
from .base import CountTable, Engine, Records
from .files import file_format
from .numpy_engine import NumpyEngine

#: The backends :func:`engine_for` can be asked for.
ENGINES = ("numpy", "duckdb", "spark")


def engine_for(data: pd.DataFrame | str | Path, domain: Domain, on_invalid: str = "error", engine: str | None = None) -> Engine:
    """The engine for ``data``: by default NumPy for a DataFrame, DuckDB for a file path.

    ``engine`` forces a backend: ``"numpy"`` (a file is read with pandas, into memory),
    ``"duckdb"`` or ``"spark"`` (files only; Spark also reads a folder of Parquet files). An
    agency file (``.sas7bdat``, ``.xpt``, ``.dta``, ``.sav``, ``.zsav``) is read by each of them
    through its private Parquet copy (:func:`.agency.open_engine`), removed when the engine is closed.
    """
    if engine is not None and engine not in ENGINES:
        raise DataError(f"there is no engine {engine!r}", f"choose one of {', '.join(map(repr, ENGINES))}")
    if isinstance(data, pd.DataFrame):
        if engine not in (None, "numpy"):
            raise DataError(
                f"the {engine} engine reads files, and these data are a DataFrame in memory",
                "pass the path of a CSV or Parquet file, or use the numpy engine",
            )
        return NumpyEngine(data, domain, on_invalid)
    if isinstance(data, (str, Path)):
        if is_agency(data):
            return open_engine(Path(data), domain, on_invalid, engine)
        if engine == "numpy":
            return NumpyEngine(_read(Path(data)), domain, on_invalid)
        if engine == "spark":
            from .spark_engine import SparkEngine  # imported on first use: pyspark and a JVM only when asked

            return SparkEngine(data, domain, on_invalid)
        from .duckdb_engine import DuckDBEngine  # imported on first use: in-memory work needs no DuckDB

        return DuckDBEngine(data, domain, on_invalid)
    raise DataError(f"cannot read data of type {type(data).__name__}", "pass a CSV or Parquet path, or a pandas DataFrame")


def _read(path: Path) -> pd.DataFrame:
    """A CSV or Parquet file (or folder of Parquet files) read whole, as pandas reads it."""
    name = path.name.lower()
    if not path.is_dir() and not name.endswith((".csv", ".csv.gz", ".parquet", ".pq")):
        file_format(path)  # names the extensions it takes
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist", "check the path of the data file")
    try:
        return pd.read_csv(path) if name.endswith((".csv", ".csv.gz")) and not path.is_dir() else pd.read_parquet(path)
    except (OSError, ValueError, UnicodeDecodeError) as e:  # pandas' parser errors are ValueErrors
        raise DataError(
            f"cannot read {str(path)!r}: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}",
            "check that it is a complete CSV (UTF-8, with a header row) or Parquet file",
        ) from None


def __getattr__(name: str):  # lazy exports of the out-of-core engines
    if name == "DuckDBEngine":
        from .duckdb_engine import DuckDBEngine

        return DuckDBEngine
    if name == "SparkEngine":
        from .spark_engine import SparkEngine

        return SparkEngine
    raise AttributeError(name)


__all__ = ["ENGINES", "CountTable", "DuckDBEngine", "Engine", "NumpyEngine", "Records", "SparkEngine", "engine_for"]
