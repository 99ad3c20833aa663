"""Whether a file given as public is the confidential data again: the same file, the same bytes, or the same rows.

A method's public input (dpsyn's ``public=``, rdt's ``structure=`` and ``targets=``) and ``domain
init --from-public`` take a file the steward declares public. Given the confidential file itself
— or a copy of it, re-saved under another name or as Parquet — every count, category and range
read from it is the confidential data's, released without noise. :func:`copy_of` tells, before
anything is charged:

- the same file (:func:`dipsy.paths.same_file`: path, link or inode);
- the same bytes (SHA-256, compared only when the sizes agree);
- the same rows: when the public file has exactly as many rows as the data and its columns are
  among the data's, DuckDB compares the two as multisets of rows (``EXCEPT ALL`` both ways) over
  the public file's columns, every value read as text and numbers normalised (``1``, ``1.0`` and
  ``"1"`` alike), so a copy in another format is caught too.

Only the answer leaves this module (it stops the run on the operator's terminal); nothing of it
enters a release.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from ..errors import DataError


def copy_of(public: str | Path, data: str | Path, rows: int | None = None) -> str | None:
    """Why ``public`` is the data ``data`` (a phrase), or None when it is not (by any test above).

    ``rows`` is the data's number of rows, when known (the row test runs only then).

    >>> import tempfile, pathlib
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "d.csv").write_text("x,y\\n1,a\\n2,b\\n"); _ = (tmp / "p.csv").write_text("y,x\\nb,2.0\\na,1\\n")
    >>> copy_of(tmp / "p.csv", tmp / "d.csv", rows=2)
    'it holds the same rows'
    """
    from ..paths import same_file

    public, data = Path(public), Path(data)
    if not (public.is_file() and data.is_file()):
        return None
    if same_file(public, data):
        return "it is the same file"
    if public.stat().st_size == data.stat().st_size and _sha256(public) == _sha256(data):
        return "it has the same bytes"
    if rows is not None and _same_rows(public, data, rows):
        return "it holds the same rows"
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _source(path: Path) -> str:
    text = str(path).replace("'", "''")
    return (
        f"read_parquet('{text}')"
        if path.suffix.lower() == ".parquet"
        else f"read_csv('{text}', all_varchar = true, header = true)"
    )


def _same_rows(public: Path, data: Path, rows: int) -> bool:
    """The public file's rows, over its columns, are the data's (as multisets); False where either
    cannot be read as a table, or the sizes or columns rule it out without comparing. An agency
    file (SAS, Stata, SPSS) is compared through its private Parquet copy (:mod:`.agency`), the
    data's made only once the public file has as many rows: a copy in another format is caught too."""
    from .agency import ParquetCopy, is_agency

    made: list[ParquetCopy] = []
    try:
        if is_agency(public):
            made.append(ParquetCopy(public))
            if made[-1].rows != rows:
                return False
            public = made[-1].path
        if is_agency(data):
            made.append(ParquetCopy(data))
            data = made[-1].path
        return _same_rows_of_tables(public, data, rows)
    except DataError:  # an agency file that cannot be read is no copy of anything
        return False
    finally:
        for copy in made:
            copy.remove()


def _same_rows_of_tables(public: Path, data: Path, rows: int) -> bool:
    """:func:`_same_rows` for CSV and Parquet files."""
    try:
        with duckdb.connect() as con:
            con.execute("SET threads = 1")
            pub = con.execute(f"DESCRIBE SELECT * FROM {_source(public)}").fetchall()
            dat = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {_source(data)}").fetchall()}
            columns = [r[0] for r in pub if not r[0].startswith("__index_level_")]  # pandas' stored index is no column
            if not columns or not set(columns) <= dat:
                return False
            counted = con.execute(f"SELECT count(*) FROM {_source(public)}").fetchone()
            if counted is None or counted[0] != rows:  # (count(*) always has its row)
                return False
            values = ", ".join(_normalised(c) for c in columns)
            differ = (
                f"SELECT count(*) FROM (SELECT {values} FROM {_source(public)} EXCEPT ALL SELECT {values} FROM {_source(data)})"
                f" UNION ALL SELECT count(*) FROM (SELECT {values} FROM {_source(data)} EXCEPT ALL SELECT {values} FROM {_source(public)})"
            )
            return all(n == 0 for (n,) in con.execute(differ).fetchall())
    except duckdb.Error:
        return False


def _normalised(column: str) -> str:
    """A column's values as text, numbers written one way (so 1, 1.0 and "1" compare equal)."""
    name = '"' + column.replace('"', '""') + '"'
    text = f"CAST({name} AS VARCHAR)"
    return f"COALESCE(CAST(TRY_CAST(trim({text}) AS DOUBLE) AS VARCHAR), {text}) AS {name}"
