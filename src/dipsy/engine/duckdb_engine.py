"""Out-of-core engine: CSV and Parquet files queried in place with DuckDB.

A file larger than memory is never loaded: each query is one SQL aggregate over the file, and
only counts come back to Python (plus, when rows do not match the domain, at most 10,000 of the
offending values of a column, to show a few in the error message).

Design rule 6 asks this engine and :class:`~.numpy_engine.NumpyEngine` to agree bit for bit, so
the codec's matching rules (:mod:`dipsy.domain.codec`) are written here in SQL, and a file is read
as :func:`pandas.read_csv` and :func:`pandas.read_parquet` with their defaults read it: the same
missing-value markers, the same number syntax, blank lines skipped, and, for a CSV column, the
type pandas would infer for it (which decides how its values read as text).
"""

from __future__ import annotations

import csv
import gzip
import itertools
import math
import re
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..domain import Column, ColumnIssue, Domain, ValidationReport
from ..domain.codec import few_values, float_for_text
from ..domain.limits import check_width
from ..domain.missing import NA_TEXTS
from ..domain.validation import EXAMPLES, MISSING, OUTSIDE, WRONG_TYPE
from ..errors import DataError
from .base import PANDAS_FALSE, PANDAS_TRUE, PICK_FIELDS, Engine, Pick
from .files import dedup_names, error_reason, file_format, refuse_repeated, unreadable_fix
from .owner import mark, scratch_folder, sweep

#: The strings :func:`pandas.read_csv` reads as missing by default (``keep_default_na=True``).
PANDAS_NA = NA_TEXTS
#: DuckDB's memory limit per engine: what the process holds beyond Python's own, whatever n is.
MEMORY_LIMIT = "256MB"
#: How many offending values the codec looks at for its examples.
EXAMPLE_ROWS = 10_000

# Codes below zero say why a row is invalid.
_MISSING, _WRONG, _OUTSIDE = -1, -2, -3
_PROBLEM_CODES = ((MISSING, _MISSING), (WRONG_TYPE, _WRONG), (OUTSIDE, _OUTSIDE))

#: The number syntax of pandas (its CSV parser and pd.to_numeric), as an RE2 pattern. The SQL
#: below reaches the same verdict faster: DuckDB's cast, less what it alone accepts (see _number).
NUMBER_RE = r"(?:[ \t\n\v\f\r]*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t\n\v\f\r]*|[+-]?(?i:inf|infinity))"
_INF_RE = r"[+-]?(?i:inf|infinity)"
# A line of spaces and tabs only, which pandas skips (skip_blank_lines=True).
_BLANK_RE = r"[ \t]+"

#: Columns of more bins than this find their bin by binary search, not one comparison per edge.
SEARCH_FROM = 32
#: Columns of more categories than this look their codes up in a table, not a CASE arm each.
LOOKUP_FROM = 64

#: DuckDB CSV reader options, tried in turn (see DuckDBEngine._next_csv_mode).
_CSV_MODES = ("null_padding = true", "null_padding = false", "null_padding = true, parallel = false")

_INT_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}


class DuckDBEngine(Engine):
    """Queries over a CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``, ``.pq``) file.

    Parameters
    ----------
    path
        The data file. It is read where it is, once per query, never loaded.
    domain
        The columns in scope, matched by name against the file's header or schema.
    on_invalid
        ``"error"`` or ``"drop"``, as for every :class:`~.base.Engine`.
    memory_limit
        DuckDB's memory limit (default :data:`MEMORY_LIMIT`); beyond it DuckDB spills to the
        engine's private folder. With the default, counting the 105 one- and two-way tables of
        10⁸ Adult-like rows peaks at about 530 MB for the whole process (``benchmarks/scale.py``).

    Notes
    -----
    One DuckDB connection per engine, to a database file in a private folder, limited to two
    threads so that a query over a large file keeps a modest footprint.

    >>> import tempfile, os
    >>> from dipsy.domain import Domain
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = os.path.join(tmp, "d.csv")
    ...     _ = open(p, "w").write("a\\n0\\n1\\n1\\n")
    ...     e = DuckDBEngine(p, Domain.from_sizes({"a": 2}))
    ...     counts = e.contingency(["a"]).dense().tolist()
    ...     e.close()
    >>> counts
    [1, 2]
    """

    def __init__(self, path: str | Path, domain: Domain, on_invalid: str = "error", memory_limit: str = MEMORY_LIMIT) -> None:
        super().__init__(domain, on_invalid)
        self.path = Path(path)
        self.memory_limit = memory_limit
        self.format = file_format(self.path)
        if not self.path.exists():
            raise DataError(f"data file {str(self.path)!r} does not exist", "check the path of the data file")
        if not self.path.is_file():
            raise DataError(f"data file {str(self.path)!r} is not a file", "pass the path of a CSV or Parquet file")
        # Spilled rows are confidential: DuckDB spills into a private folder (mode 0700), not the
        # current directory, and the folder goes with the engine; inside a command's run folder
        # when there is one (removed with it on every way out), else in the temporary folder.
        # A run that is killed leaves its folder behind: the next engine sweeps those whose
        # process is gone (see .owner).
        sweep(Path(tempfile.gettempdir()), "dipsy-duckdb-*")
        spill = tempfile.mkdtemp(prefix="dipsy-duckdb-", dir=scratch_folder())
        self._spill = Path(spill)
        mark(self._spill)
        # A database file in the same folder, not an in-memory one: the codes table (_codes_table)
        # then lives in pages DuckDB can evict, and the memory limit holds whatever n is (an
        # in-memory database keeps its tables resident: 2.1 GB at 10⁸ rows of Adult's columns).
        self._con = duckdb.connect(
            str(self._spill / "codes.duckdb"), config={"threads": 2, "temp_directory": spill, "memory_limit": memory_limit}
        )
        self._finalizer = weakref.finalize(self, _cleanup, self._con, spill)
        #: Lookup tables made for long category lists and bin edges (see _lookup, _edges_table).
        self._tables: dict[tuple, str] = {}
        #: The file's column (as named in the view ``src``) of each domain column it has.
        self._sql: dict[str, str] = {}
        #: How pandas types each such column. CSV: str, bool, int, float, or number (int or
        #: float, not yet told apart). Parquet: int, float, float32, bool, str, decimal, other.
        self._kinds: dict[str, str] = {}
        self._nulls: dict[str, bool] = {}
        self._metadata: dict = {}
        self._queries = 0
        self._materialized = False
        try:
            if self.format == "csv":
                self._open_csv()
            else:
                self._open_parquet()
        except BaseException:
            self._finalizer()  # a file that cannot be opened leaves no spill folder behind
            raise

    def _codes_table(self) -> str:
        """``codes``: the code of every domain column for the valid rows, made once.

        Each code in the narrowest unsigned type that holds the column's values (one or two bytes
        for most columns, against four for INTEGER: on 10⁷ rows of Adult's 14 columns the table is
        what grows with n). It is a table of the engine's database file, in its private folder:
        DuckDB holds of it what fits under the memory limit and reads the rest back from disk."""
        if not self._materialized:
            scope = self.domain.columns
            types = [_code_type(c.size) if c.encodable and c.size else "INTEGER" for c in scope]
            select = ", ".join(f"CAST(k{j} AS {t}) AS k{j}" for j, t in enumerate(types))
            where = " AND ".join(f"k{j} >= 0" for j in range(len(scope)))
            self._run(f"CREATE TABLE codes AS SELECT {select} FROM ({self._codes_sql(scope)}) WHERE {where}")
            self._materialized = True
        return "codes"

    def _codes_fit(self) -> bool:
        """Whether the codes table takes at most half of DuckDB's memory limit (the other half
        for the aggregates over it), by the bytes of its code types."""
        if self._materialized:
            return True
        width = sum(_CODE_BYTES[_code_type(c.size)] if c.encodable and c.size else 4 for c in self.domain.columns)
        limit = self._row("SELECT value FROM duckdb_settings() WHERE name = 'memory_limit'")[0]
        return self.report.valid_rows * width <= _bytes(limit) / 2

    def _values(self, picks: tuple[tuple[str, Pick], ...]) -> list[np.ndarray]:
        # The codec in SQL: k columns are codes (< 0 for invalid rows), x columns the numbers as
        # pandas would read them, s columns the missing states; rows invalid in any column in scope
        # are left out.
        scope = self.domain.columns
        index = {c.name: j for j, c in enumerate(scope)}
        select = [
            _clipped(self.domain[n], f"x{index[n]}") if pick == "number" else f"{PICK_FIELDS[pick]}{index[n]}"
            for n, pick in picks
        ]
        where = " AND ".join(f"k{j} >= 0" for j in range(len(scope)))
        aliases = ", ".join(f"{s} AS v{i}" for i, s in enumerate(select))
        result = self._run(f"SELECT {aliases} FROM ({self._codes_sql(scope, keep=True)}) WHERE {where}").fetchnumpy()
        return [np.asarray(result[f"v{i}"], dtype=float if pick == "number" else np.int64) for i, (_, pick) in enumerate(picks)]

    def _has_column(self, name: str) -> bool:
        return name in self._sql

    def _raw_counts(self, name: str) -> tuple:
        # One GROUP BY over the raw column: a CSV field as written (every field is text here),
        # a Parquet value by its type. Missing values (pandas' markers, NULL, NaN) are left out.
        q, kind = self._sql[name], self._kinds.get(name, "str")
        numeric = self.format == "parquet" and kind in ("int", "float", "float32")
        if self.format == "csv" or kind == "str":
            raw = q
        elif numeric:
            raw = f"CAST({q} AS DOUBLE)"
        elif kind == "bool":
            raw = f"CASE WHEN {q} THEN 'True' ELSE 'False' END"
        else:
            raw = f"CAST({q} AS VARCHAR)"
        rows = self._run(f"SELECT {raw} AS r, count(*) AS n FROM src WHERE NOT {self._missing(name)} GROUP BY r").fetchall()
        values = [r for r, _ in rows]
        counts = np.asarray([n for _, n in rows], dtype=np.int64)
        if numeric:
            return [], [], np.asarray(values, dtype=float), counts
        return values, counts, np.zeros(0), np.zeros(0, np.int64)

    def _reopen(self, domain: Domain) -> DuckDBEngine:
        return DuckDBEngine(self.path, domain, self.on_invalid, self.memory_limit)

    def close(self) -> None:
        """Close the DuckDB connection and remove its spill folder (also done on garbage collection)."""
        self._finalizer()

    # -- opening --------------------------------------------------------------------------------

    def _open_csv(self) -> None:
        skip, header = self._csv_header()
        check_width(header, f"the header of {str(self.path)!r}")
        refuse_repeated(header, self.domain, f"the header of {str(self.path)!r}")
        names = dedup_names(header)
        inner = [f"c{i}" for i in range(len(names))]
        self._csv_skip, self._csv_columns = skip, "{" + ", ".join(f"'{c}': 'VARCHAR'" for c in inner) + "}"
        self._csv_read = self.path
        self._csv_source = self._csv_reader()
        # pandas skips lines of blanks. DuckDB skips empty lines but reads one of spaces and tabs
        # as a row whose first field holds them and whose other fields are padded.
        blank = f"regexp_full_match(c0, '{_BLANK_RE}')"
        if len(inner) > 1:
            blank += " AND " + " AND ".join(f"{c} IS NULL" for c in inner[1:])
        self._csv_blank = blank
        self._csv_mode = 0
        self._create_csv_view()
        for i, name in enumerate(names):
            if name in self.domain.names and name not in self._sql:
                self._sql[name] = inner[i]

    def _csv_reader(self) -> str:
        """The read_csv call over ``_csv_read`` (the file, or its copy with line ends made one kind)."""
        compression = "gzip" if self._csv_read.name.lower().endswith(".gz") else "none"
        # Nothing is sniffed: the options are pandas.read_csv's defaults and every value is read as
        # text. NULL is only a padded field (nullstr is a line break, which no unquoted field holds),
        # so empty fields stay '' and missing-value markers are handled in SQL.
        return (
            f"read_csv({_text(str(self._csv_read))}, auto_detect = false, header = true, skip = {self._csv_skip}, "
            f"delim = ',', quote = '\"', escape = '\"', comment = '', columns = {self._csv_columns}, "
            f"nullstr = E'\\n', allow_quoted_nulls = false, compression = '{compression}', "
        )

    def _create_csv_view(self) -> None:
        options = _CSV_MODES[self._csv_mode]
        self._run(
            f"CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM {self._csv_source}{options}) WHERE NOT coalesce({self._csv_blank}, false)"
        )

    def _next_csv_mode(self, message: str) -> bool:
        """Move to the next reader mode if the error is one the current mode cannot avoid.

        pandas pads short rows and reads line breaks inside quotes. DuckDB's parallel reader does
        either, not both; its serial reader does both but stops silently at an unterminated quote
        (DuckDB 2.0), so it is used only for files that need it.
        """
        if self.format != "csv":
            return False
        if (self._csv_mode == 0 and "quoted new lines" in message) or (self._csv_mode == 1 and "null_padding=true" in message):
            self._csv_mode += 1
            self._create_csv_view()
            return True
        if "invalid state" in message and self._csv_read == self.path:
            # Line ends of more than one kind (CRLF and LF, or CR), which pandas reads and DuckDB's
            # reader refuses: read a copy with every line end outside quotes written as LF, made
            # in the engine's private spill folder (the copy is confidential) and removed with it.
            self._csv_read = self._spill / "lines.csv"
            _normalize_line_ends(self.path, self._csv_read)
            self._csv_source = self._csv_reader()
            self._csv_mode = 0
            self._create_csv_view()
            return True
        return False

    def _csv_header(self) -> tuple[int, list[str]]:
        """Lines before the header (blank ones, which pandas skips) and the header's fields."""
        opener = gzip.open if self.path.name.lower().endswith(".gz") else open
        try:
            with opener(self.path, "rt", encoding="utf-8-sig", newline="") as f:
                skip = 0
                for line in f:
                    if line.strip(" \t\r\n"):
                        return skip, next(csv.reader(itertools.chain([line], f)))
                    skip += 1
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise DataError(f"cannot read CSV file {str(self.path)!r}: {error_reason(e)}", unreadable_fix("csv")) from None
        raise DataError(f"CSV file {str(self.path)!r} has no header row", "write the column names on its first line")

    def _open_parquet(self) -> None:
        # Columns are renamed by position, as DuckDB matches names regardless of case.
        try:
            schema = pq.read_schema(self.path)
        except (OSError, pa.ArrowException) as e:
            raise DataError(
                f"cannot read Parquet file {str(self.path)!r}: {error_reason(e)}", unreadable_fix("parquet")
            ) from None
        check_width(schema.names, f"the schema of {str(self.path)!r}")
        refuse_repeated(schema.names, self.domain, f"the columns of {str(self.path)!r}")
        self._metadata = schema.pandas_metadata or {}
        # pandas.read_parquet turns the stored index back into the index, not a column.
        index = {c for c in self._metadata.get("index_columns", []) if isinstance(c, str)}
        inner = [f"c{i}" for i in range(len(schema.names))]
        self._run(f"CREATE TEMP VIEW src AS SELECT * FROM read_parquet({_text(str(self.path))}) AS t({', '.join(inner)})")
        types = dict(self._run("SELECT column_name, column_type FROM (DESCRIBE src)").fetchall())
        for i, name in enumerate(schema.names):
            if name in self.domain.names and name not in index and name not in self._sql:
                self._sql[name] = inner[i]
                self._kinds[name] = _parquet_kind(types[inner[i]])

    def _run(self, sql: str) -> duckdb.DuckDBPyConnection:
        while True:
            try:
                return self._con.execute(sql)
            except duckdb.OutOfMemoryException as e:
                raise DataError(
                    f"out of memory while reading {str(self.path)!r} ({error_reason(e)})",
                    "choose fewer columns (--columns) or coarser bins, or free memory for the run",
                ) from None
            except duckdb.Error as e:
                if self._next_csv_mode(str(e)):
                    continue
                kind = "CSV" if self.format == "csv" else "Parquet"
                raise DataError(
                    f"cannot read {kind} file {str(self.path)!r}: {error_reason(e)}", unreadable_fix(self.format)
                ) from None

    def _row(self, sql: str) -> tuple[Any, ...]:
        """The one row of an aggregate query (which always has one)."""
        row = self._run(sql).fetchone()
        if row is None:
            raise DataError(f"internal error: DuckDB returned no row for {sql!r}", "report this bug")
        return row

    # -- validation -----------------------------------------------------------------------------

    def _validate(self) -> ValidationReport:
        absent = tuple(n for n in self.domain.names if n not in self._sql)
        if absent:
            rows = int(self._row("SELECT count(*) FROM src")[0])
            return ValidationReport(rows, rows, (), absent)
        columns = self.domain.columns
        counts: list[int] | None
        if self.format == "csv":
            # Guess each column's pandas type, check the guess in the same pass, and pass again
            # in the rare case a wrong guess changes the codes (text read as numbers or booleans).
            self._kinds = {c.name: "str" if _text_categories(c) else "number" for c in columns}
            counts, kinds = self._validation_pass(columns, infer=True)
            again = any(kinds[c.name] != self._kinds[c.name] for c in columns if _text_categories(c))
            again |= any(kinds[c.name] == "bool" for c in columns)
            self._kinds = kinds
            if again:
                counts, _ = self._validation_pass(columns, infer=False)
        else:
            counts = self._column_by_column(columns)
            if counts is None:
                counts, _ = self._validation_pass(columns, infer=False)
        rows, invalid = counts[0], counts[1]
        issues = []
        for j, c in enumerate(columns):
            for p, (problem, code) in enumerate(_PROBLEM_CODES):
                n = counts[2 + 3 * j + p]
                if n:
                    examples = () if problem == MISSING else self._examples(c, code)
                    issues.append(ColumnIssue(c.name, problem, n, examples))
        return ValidationReport(rows, invalid, tuple(issues))

    def _column_by_column(self, columns: tuple[Column, ...]) -> list[int] | None:
        """The counts of _validation_pass for a Parquet file whose columns all have few values
        (:func:`few_values`), or None if a row is invalid.

        Each column's problems are counted as in _grouped_cell_counts: its distinct values with
        their rows, each value coded once. A row is invalid if it is invalid in some column, so
        with no problem in any column no row is invalid; otherwise the rows invalid in more than
        one column need the pass over whole rows, and None says so. (10⁸ rows, 14 columns: 9 s
        against 23 s for the pass.)"""
        if self.format != "parquet" or not columns or not all(few_values(c) for c in columns):
            return None
        rows = 0
        for c in columns:
            grouped = f"SELECT {self._sql[c.name]}, count(*) AS n FROM src GROUP BY ALL"
            sql = f"SELECT min(k0), CAST(sum(n) AS BIGINT) FROM ({self._codes_sql((c,), source=grouped, carry=('n',))})"
            least, rows = self._row(sql)
            if least is not None and least < 0:
                return None
        return [int(rows or 0), 0] + [0] * (3 * len(columns))

    def _validation_pass(self, columns: tuple[Column, ...], infer: bool) -> tuple[list[int], dict[str, str]]:
        """Row counts (all, invalid, then each column's problems) and, if asked, CSV kinds."""
        aggs = ["count(*)", "count(*) FILTER (WHERE " + " OR ".join(f"k{j} < 0" for j in range(len(columns))) + ")"]
        for j in range(len(columns)):
            aggs += [f"count(*) FILTER (WHERE k{j} = {code})" for _, code in _PROBLEM_CODES]
        if infer:
            # x is NULL where m is true, and no missing-value marker is a boolean.
            for j, c in enumerate(columns):
                is_bool = _any_of(f"r{j}", PANDAS_TRUE + PANDAS_FALSE)
                is_int = f"x{j} IS NOT NULL AND NOT {_has_any(f'r{j}', '.eEiI')}" if _text_categories(c) else "false"
                aggs += [
                    f"count(x{j})",
                    f"count(*) FILTER (WHERE {is_int})",
                    f"count(*) FILTER (WHERE x{j} IS NULL AND {is_bool})",
                    # the empty cells themselves: with an empty state declared they are valid,
                    # and pandas' type still depends on them
                    f"count(*) FILTER (WHERE m{j})",
                ]
        sql = f"SELECT {', '.join(aggs)} FROM ({self._codes_sql(columns, keep=infer)})"
        counts = [int(n) for n in self._row(sql)]
        kinds = dict(self._kinds)
        if infer:
            base = 2 + 3 * len(columns)
            for j, c in enumerate(columns):
                numbers, ints, bools, missing = counts[base + 4 * j : base + 4 * j + 4]
                present = counts[0] - missing
                self._nulls[c.name] = missing > 0
                if present == 0:
                    continue  # all missing: nothing is read from it
                if numbers == present:
                    ints_only = ints == present and missing == 0
                    kinds[c.name] = ("int" if ints_only else "float") if _text_categories(c) else "number"
                elif bools == present:
                    kinds[c.name] = "bool"
                else:
                    kinds[c.name] = "str"
        return counts, kinds

    def _examples(self, column: Column, code: int) -> tuple[str, ...]:
        """The first distinct offending values, as ``str`` of what pandas would hold."""
        name = column.name
        sql = f"SELECT r0 FROM ({self._codes_sql((column,), keep=True)}) WHERE k0 = {code} LIMIT {EXAMPLE_ROWS}"
        values = self._run(sql).fetchnumpy()["r0"]
        kind = self._kinds[name]
        if self.format == "csv":
            if kind == "number":
                kind = self._kinds[name] = self._int_or_float(column)
            values = _csv_values(values, kind)
        elif kind == "int" and self._parquet_int_as_float(name):
            values = np.asarray(values, dtype=float)
        return tuple(str(x) for x in pd.unique(values)[:EXAMPLES])

    def _int_or_float(self, column: Column) -> str:
        """For a CSV column of numbers: int64 if all are whole-number text and none is missing."""
        sql = f"SELECT count(*) FILTER (WHERE m0 OR {_has_any('r0', '.eEiI')}) FROM ({self._codes_sql((column,), keep=True)})"
        return "float" if self._row(sql)[0] else "int"

    def _parquet_int_as_float(self, name: str) -> bool:
        """pandas reads an integer column with nulls as float64, unless its metadata says Int64."""
        if name not in self._nulls:
            self._nulls[name] = bool(self._row(f"SELECT count(*) > count({self._sql[name]}) FROM src")[0])
        if not self._nulls[name]:
            return False
        for entry in self._metadata.get("columns", []):
            if entry.get("name") == name:
                return not str(entry.get("numpy_type", "")).startswith(("Int", "UInt"))
        return True

    # -- counting -------------------------------------------------------------------------------

    def _cell_counts(self, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        # Rows invalid in any column in scope are left out; without any, only ``names`` are read.
        # From the second query on, the codes of the valid rows are read from a table made once
        # (methods that ask for many marginals would otherwise parse the file for each), if it
        # fits in DuckDB's memory: 105 tables of 10⁶ rows take 0.8× DuckDB's GROUP BY of each
        # from the file, against 1.2× for counting each from the file by _grouped_cell_counts,
        # the faster way for one table, and for every table once the codes would spill to disk
        # (10⁸ rows: 1.5× against about 1.0×).
        strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
        self._queries += 1
        if (
            (self._queries == 1 or not self._codes_fit())
            and not self.report.invalid_rows
            and all(few_values(self.domain[n]) for n in names)
        ):
            return self._grouped_cell_counts(names, strides)
        if self._queries > 1:
            index = {c.name: j for j, c in enumerate(self.domain.columns)}
            cell = " + ".join(f"CAST(k{index[n]} AS BIGINT) * {s}" for n, s in zip(names, strides))
            source, where = self._codes_table(), "true"
        else:
            scope = self.domain.columns if self.report.invalid_rows else tuple(self.domain[n] for n in names)
            key = {c.name: f"k{j}" for j, c in enumerate(scope)}
            cell = " + ".join(f"{key[n]} * {s}" for n, s in zip(names, strides))
            source, where = f"({self._codes_sql(scope)})", " AND ".join(f"{k} >= 0" for k in key.values())
        sql = f"SELECT cell, count(*) AS n FROM (SELECT {cell} AS cell FROM {source} WHERE {where}) GROUP BY cell ORDER BY cell"
        out = self._run(sql).fetchnumpy()
        return np.asarray(out["cell"], dtype=np.int64), np.asarray(out["n"], dtype=np.int64)

    def _grouped_cell_counts(self, names: tuple[str, ...], strides: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Cell counts by counting the distinct raw rows first and coding only those.

        A row's code is a function of its raw values alone (the codec reads nothing else), so
        counting the rows of each distinct combination of raw values, coding each combination
        once and adding the counts of those that share a cell gives the counts of coding every
        row. It is taken when no row is invalid and every column has few valid values
        (:func:`few_values`): there are then about as many combinations as cells (exactly as
        many in a Parquet integer column), and the file is read as DuckDB's own ``GROUP BY`` reads it (10⁸ rows, three columns: 0.8 s against
        1.5 s for coding every row).
        """
        scope = tuple(self.domain[n] for n in names)
        raw = ", ".join(dict.fromkeys(self._sql[n] for n in names))
        grouped = f"SELECT {raw}, count(*) AS n FROM src GROUP BY ALL"
        cell = " + ".join(f"k{j} * {s}" for j, s in enumerate(strides))
        sql = (
            f"SELECT cell, CAST(sum(n) AS BIGINT) AS n FROM (SELECT {cell} AS cell, n FROM "
            f"({self._codes_sql(scope, source=grouped, carry=('n',))})) GROUP BY cell ORDER BY cell"
        )
        out = self._run(sql).fetchnumpy()
        return np.asarray(out["cell"], dtype=np.int64), np.asarray(out["n"], dtype=np.int64)

    # -- the codec in SQL -----------------------------------------------------------------------

    def _codes_sql(
        self, columns: tuple[Column, ...], keep: bool = False, source: str = "src", carry: tuple[str, ...] = ()
    ) -> str:
        """A query with the code ``k{j}`` (BIGINT; below zero: why the row is invalid) of each column.

        Four nested selects compute, per column, the raw value ``r`` and missing flag ``m``, a
        first number ``y``, the number ``x`` and text ``t`` pandas would see, and the code ``k``:
        each costly step (casts, pattern matches) runs once per row. ``keep`` keeps ``m``, ``x``
        and ``r`` in the result.

        A column of more than :data:`SEARCH_FROM` bins finds its bin by binary search over its
        edges (one select per halving, ``b{j}``) instead of one comparison per edge; a column of
        more than :data:`LOOKUP_FROM` categories looks its code up in a table (a hash join) instead
        of a CASE arm per category. Both give the same codes, at a cost that does not grow with
        the number of bins or categories (up to the domain's limit of a million).

        ``source`` is what the columns are read from (a query with the columns of ``src``), and
        ``carry`` names its columns passed through to the result unchanged.
        """
        raw, first, seen, coded = [], [], [], []
        searched: list[tuple[int, str, int]] = []  # (j, edges column, number of interior edges)
        for j, c in enumerate(columns):
            name, q = c.name, self._sql[c.name]
            kind = self._kinds[name]
            m, r, y, x = f"m{j}", f"r{j}", f"y{j}", f"x{j}"
            raw += [
                f"{self._missing(name)} AS {m}",
                f"{q if kind not in ('decimal', 'other') else f'CAST({q} AS VARCHAR)'} AS {r}",
            ]
            if not keep and self._whole_range(c):
                first += [m, r]
                seen += [m, r]
                lo, hi = (int(b) for b in _bounds(c))
                coded.append(
                    f"CASE WHEN {m} THEN {_MISSING} WHEN {r} >= {lo} AND {r} <= {hi} THEN CAST({r} AS BIGINT) - {lo} "
                    f"ELSE {_OUTSIDE} END AS k{j}"
                )
                continue
            first += [m, r, f"{self._first_number(kind, r)} AS {y}"]
            seen += [m, r, f"{self._number(kind, r, y)} AS {x}"]
            text = _text_categories(c) and kind not in ("float", "float32")
            # A text missing code is matched by its text, as text categories are (a float's text
            # never equals one: Missing refuses text codes that read as numbers).
            texts = text or (c.missing is not None and kind not in ("float", "float32") and bool(c.missing.code_states()[1]))
            if texts:
                seen.append(f"{self._as_text(kind, r)} AS t{j}")
            binned = None
            if c.bins is not None and len(c.bins) - 2 > SEARCH_FROM:
                searched.append((j, self._edges_table(c), len(c.bins) - 2))
                binned = f"b{j}"
            code = self._code(c, m, f"t{j}" if text else x, binned, x=x, t=f"t{j}" if texts else None)
            coded.append(f"CAST({code} AS BIGINT) AS k{j}")
            if keep:
                coded += [m, x, r]
                if c.missing is not None and not c.is_categorical:
                    arms = self._state_arms(c, m, x, f"t{j}" if texts else None)
                    # no arm where no value of the column can be in a state (a float column, text codes only)
                    states = f"CASE {' '.join(f'WHEN {w} THEN {s}' for w, s in arms)} ELSE -1 END" if arms else "-1"
                    coded.append(f"CAST({states} AS BIGINT) AS s{j}")
        sql = source
        for level in (raw, first, seen):
            sql = f"SELECT {', '.join([*level, *carry])} FROM " + (sql if sql == "src" else f"({sql})")
        if searched:
            # b = #{interior edges <= x}, found by binary lifting over the sorted edges (1-based).
            tables = ", ".join(f"(SELECT edges AS e{j} FROM {table}) AS s{j}" for j, table, _ in searched)
            sql = f"SELECT *, {', '.join(f'0 AS b{j}' for j, _, _ in searched)} FROM ({sql}), {tables}"
            step = 1 << max(n for _, _, n in searched).bit_length()
            while step > 1:
                step //= 2
                steps = [
                    f"b{j} + CASE WHEN b{j} + {step} <= {n} AND x{j} >= e{j}[b{j} + {step}] THEN {step} ELSE 0 END AS b{j}"
                    for j, _, n in searched
                    if step <= n
                ]
                sql = f"SELECT * REPLACE ({', '.join(steps)}) FROM ({sql})"
        return f"SELECT {', '.join([*coded, *carry])} FROM ({sql})"

    def _whole_range(self, column: Column) -> bool:
        """Whether ``column``'s codes can be read off a Parquet integer column in integers:
        an integer column without bins or clipping, its code the value less its lower bound.

        What the general codec computes in doubles (the value cast, checked whole, checked
        against the bounds) is then exact in integers, four times faster (10⁸ rows: 1.0 against
        4.1 s for two columns): a Parquet integer is always whole, and with bounds below 2⁵² in
        magnitude a double rounds no value across a bound (rounding starts at 2⁵³).
        """
        return (
            self.format == "parquet"
            and self._kinds.get(column.name) == "int"
            and column.kind == "integer"
            and not column.is_categorical
            and column.bins is None
            and not column.clip
            and column.missing is None  # a state's code is not the value less the bound
            and all(b is not None and float(b).is_integer() and abs(b) < 2.0**52 for b in (column.lower, column.upper))
        )

    def _edges_table(self, column: Column) -> str:
        """A one-row table holding the interior bin edges of ``column`` as a DOUBLE list."""
        key = ("edges", column.name, column.bins)
        assert column.bins is not None, "called for binned columns only"
        if key not in self._tables:
            name = f"dipsy_edges_{len(self._tables)}"
            self._create(name, pa.table({"edges": pa.array([list(column.bins[1:-1])], type=pa.list_(pa.float64()))}))
            self._tables[key] = name
        return self._tables[key]

    def _lookup(self, column: Column, keys: list, codes: list[int], dtype: pa.DataType) -> str:
        """A table of (key, code) pairs, each key once, for matching a long list of categories."""
        key = ("codes", column.name, str(dtype))
        if key not in self._tables:
            name = f"dipsy_codes_{len(self._tables)}"
            self._create(name, pa.table({"key": pa.array(keys, type=dtype), "code": pa.array(codes, type=pa.int64())}))
            self._tables[key] = name
        return self._tables[key]

    def _create(self, name: str, table: pa.Table) -> None:
        """A temporary table ``name`` holding ``table`` (public values: categories, edges)."""
        self._con.execute("SELECT 1").fetchall()  # finish any open result: registering needs an idle connection
        self._con.register(f"{name}_arrow", table)
        try:
            self._run(f"CREATE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
        finally:
            self._con.unregister(f"{name}_arrow")

    def _missing(self, name: str) -> str:
        """True where pandas would hold NaN or None: an empty or padded field, a marker, a NaN."""
        q = self._sql[name]
        if self.format == "csv":
            return f"({q} IS NULL OR {_any_of(q, PANDAS_NA)})"
        if self._kinds[name] in ("float", "float32"):
            return f"({q} IS NULL OR {_nan(q)})"
        return f"({q} IS NULL)"

    def _first_number(self, kind: str, r: str) -> str:
        """DOUBLE: a typed value cast, or text cast by DuckDB unless it has '_', '+-' or '-+'.

        DuckDB reads '1_000' and '+-1' as numbers, pandas does not.
        """
        if kind == "bool" and self.format == "csv":
            return f"CASE WHEN {_any_of(r, PANDAS_TRUE)} THEN 1.0 WHEN {_any_of(r, PANDAS_FALSE)} THEN 0.0 END"
        if self.format == "csv" or kind in ("str", "other"):
            return f"CASE WHEN {_has_any(r, '_')} OR contains({r}, '+-') OR contains({r}, '-+') THEN NULL ELSE TRY_CAST({r} AS DOUBLE) END"
        return f"CAST({r} AS DOUBLE)"

    def _number(self, kind: str, r: str, y: str) -> str:
        """The value as pd.to_numeric(errors="coerce") reads it (DOUBLE); NULL if not a number.

        Of text, DuckDB also reads 'nan' and ' inf ' (with blanks), which pandas does not; with
        what ``_first_number`` refuses, the rest of its syntax is pandas' (NUMBER_RE; the tests
        check both against pandas on random text).
        """
        if self.format == "parquet" and kind in ("float", "float32"):
            return f"CASE WHEN {_nan(y)} THEN NULL ELSE {y} END"  # NaN is missing: no later step casts it
        if self.format == "csv" and kind == "bool" or self.format == "parquet" and kind not in ("str", "other"):
            return y
        inf = f"isinf({y}) AND {_has_any(r, 'iI')} AND NOT regexp_full_match({r}, '{_INF_RE}')"
        return f"CASE WHEN {_nan(y)} OR ({inf}) THEN NULL ELSE {y} END"

    def _as_text(self, kind: str, r: str) -> str:
        """The value as the codec's ``as_text`` gives it, for any kind but floats."""
        if kind == "bool":
            true = _any_of(r, PANDAS_TRUE) if self.format == "csv" else r
            return f"CASE WHEN {true} THEN 'True' ELSE 'False' END"
        if kind == "int" and self.format == "csv":
            # str(int(text)): no blanks, no '+', no leading zeros, '-0' is '0'.
            t = f"regexp_replace(regexp_replace({r}, '^[ \\t\\n\\v\\f\\r]+|[ \\t\\n\\v\\f\\r]+$', '', 'g'), '^(?:\\+|(-))?0*([0-9])', '\\1\\2')"
            return f"CASE WHEN {t} = '-0' THEN '0' ELSE {t} END"
        if kind == "int":
            return f"CAST({r} AS VARCHAR)"
        return r

    def _code(self, column: Column, m: str, v: str, binned: str | None = None, x: str = "", t: str | None = None) -> str:
        """The codec's ``encode_column`` for one row, from its missing flag ``m`` and value ``v``
        (``binned``: the bin of ``v`` found by binary search, for a column of many bins); with
        declared missing states, those first (the codec's ``_states``), from the number ``x`` and
        the text ``t`` (None: not computed, as no text code can match)."""
        values = self._value_code(column, m, v, binned)
        if column.missing is None:
            return values
        size = column.value_size
        state = lambda s: 0 if size is None else size + s  # noqa: E731 - a numeric column without bins: valid, no cell
        arms = [f"WHEN {when} THEN {state(s)}" for when, s in self._state_arms(column, m, x, t)]
        return f"CASE {' '.join(arms)} ELSE {values} END" if arms else values

    def _state_arms(self, column: Column, m: str, x: str, t: str | None) -> list[tuple[str, int]]:
        """The codec's ``_states`` for one row: (condition, state index) pairs, tried in order, from
        the missing flag ``m``, the number ``x`` and the text ``t`` (None: no text code can match)."""
        assert column.missing is not None, "called for columns with missing states"
        arms = []
        empty = column.missing.empty_state
        if empty is not None:
            arms.append((m, empty))
        numbers, texts = column.missing.code_states()
        arms += [(f"NOT {m} AND {x} = {_double(code)}", s) for s, code in numbers]
        if t is not None:
            arms += [(f"NOT {m} AND {x} IS NULL AND {t} = {_text(code)}", s) for s, code in texts]
        return arms

    def _value_code(self, column: Column, m: str, v: str, binned: str | None = None) -> str:
        """The code of the value alone (no missing state matched), or why the row is invalid."""
        if _text_categories(column):
            cats = list(column.category_texts)
            kind = self._kinds[column.name]
            if kind in ("float", "float32"):
                # A float reads as text without a whole number's '.0': match each category's number.
                numbered = [(k, d) for k, d in ((k, float_for_text(c, kind)) for k, c in enumerate(cats)) if d is not None]
                if len(numbered) > LOOKUP_FROM:
                    table = self._lookup(column, [d for _, d in numbered], [k for k, _ in numbered], pa.float64())
                    found = f"(SELECT code FROM {table} WHERE key = {v})"
                else:
                    match = " ".join(f"WHEN {_double(d)} THEN {k}" for k, d in numbered)
                    found = f"CASE {v} {match} END" if match else "NULL"
            elif len(cats) > LOOKUP_FROM:
                table = self._lookup(column, cats, list(range(len(cats))), pa.string())
                found = f"(SELECT code FROM {table} WHERE key = {v})"
            else:
                match = " ".join(f"WHEN {_text(c)} THEN {k}" for k, c in enumerate(cats))
                found = f"CASE {v} {match} END" if match else "NULL"
            return f"CASE WHEN {m} THEN {_MISSING} ELSE coalesce({found}, {_OUTSIDE}) END"

        arms = [f"WHEN {m} THEN {_MISSING}", f"WHEN {v} IS NULL THEN {_WRONG}"]
        if column.kind == "integer":
            arms.append(f"WHEN {v} <> floor({v}) THEN {_WRONG}")
        if column.is_categorical:
            assert column.categories is not None, "Column checks every categorical column's categories"
            keys = [(k, float(c)) for k, c in enumerate(column.categories) if not math.isnan(float(c))]
            if len(keys) > LOOKUP_FROM:
                table = self._lookup(column, [d for _, d in keys], [k for k, _ in keys], pa.float64())
                found = f"(SELECT code FROM {table} WHERE key = {v})"
            else:
                found = f"CASE {v} " + " ".join(f"WHEN {_double(d)} THEN {k}" for k, d in keys) + " END" if keys else "NULL"
            arms.append(f"ELSE coalesce({found}, {_OUTSIDE})")
        else:
            if column.clip:
                # Top/bottom-coding: no value is outside; the code is that of the nearest bound. A
                # bin found by search (``binned``) already is: below lower is bin 0, above upper the last.
                v = _clipped(column, v)
            else:
                lower, upper = _bounds(column)
                arms.append(f"WHEN NOT ({v} >= {_double(lower)} AND {v} <= {_double(upper)}) THEN {_OUTSIDE}")
            if binned is not None:
                code = binned
            elif column.bins is not None:
                # k = #{interior edges <= v}
                code = " + ".join(f"CAST({v} >= {_double(e)} AS BIGINT)" for e in column.bins[1:-1]) or "0"
            elif column.kind == "integer":
                code = f"{v} - {_double(_bounds(column)[0])}"
            else:
                code = "0"  # valid, but a numeric column without bins has no cells
            arms.append(f"ELSE {code}")
        return "CASE " + " ".join(arms) + " END"


# -- helpers --------------------------------------------------------------------------------------


def _bounds(column: Column) -> tuple[float, float]:
    """A numeric or integer column's public bounds, as declared (the domain requires both)."""
    assert column.lower is not None and column.upper is not None, "Column checks every non-categorical column's bounds"
    return column.lower, column.upper


_CODE_BYTES = {"UTINYINT": 1, "USMALLINT": 2, "UINTEGER": 4, "UBIGINT": 8}
_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def _bytes(text: str) -> float:
    """Bytes of a DuckDB memory setting.

    >>> _bytes("244.1 MiB"), _bytes("2GB")
    (255957401.6, 2000000000.0)
    """
    found = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", text)
    if found is None:
        raise DataError(f"cannot read DuckDB's memory limit {text!r}", "report this bug")
    number, unit = found.groups()
    return float(number) * _UNITS[unit.upper()]


def _code_type(size: int) -> str:
    """The narrowest DuckDB unsigned integer type for codes 0..size-1.

    >>> _code_type(2), _code_type(256), _code_type(257), _code_type(70_000)
    ('UTINYINT', 'UTINYINT', 'USMALLINT', 'UINTEGER')
    """
    return "UTINYINT" if size <= 2**8 else "USMALLINT" if size <= 2**16 else "UINTEGER" if size <= 2**32 else "UBIGINT"


def _parquet_kind(dtype: str) -> str:
    """How pandas types a Parquet column of DuckDB type ``dtype``."""
    if dtype in _INT_TYPES:
        return "int"
    if dtype == "DOUBLE":
        return "float"
    if dtype == "FLOAT":
        return "float32"
    if dtype == "BOOLEAN":
        return "bool"
    if dtype == "VARCHAR":
        return "str"
    if dtype.startswith("DECIMAL"):
        return "decimal"
    return "other"


def _text_categories(column: Column) -> bool:
    """Whether the codec matches the column's values as text."""
    return column.is_categorical and not column.numeric_categories


def _normalize_line_ends(source: Path, target: Path) -> None:
    """Copy a CSV file (gzip or plain) with every CRLF or CR outside quotes written as LF.

    pandas ends a line at LF, CRLF or CR alike and keeps line breaks inside quotes as they are;
    so does this copy, which DuckDB then reads as one kind of line end. Quotes are tracked as the
    CSV grammar has them (a doubled quote inside quotes toggles twice).
    """
    opener = gzip.open if source.name.lower().endswith(".gz") else open
    quoted, held = False, b""
    with opener(source, "rb") as f, open(target, "wb") as out:
        while True:
            chunk = f.read(1 << 22)
            if not chunk:
                break
            chunk, held = held + chunk, b""
            if chunk.endswith(b"\r"):  # a CR at the end may be half of a CRLF
                chunk, held = chunk[:-1], b"\r"
            for i, part in enumerate(chunk.split(b'"')):
                if i:
                    out.write(b'"')
                    quoted = not quoted
                out.write(part if quoted else part.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
        if held:
            out.write(held if quoted else b"\n")


def _csv_values(texts: np.ndarray, kind: str) -> np.ndarray:
    """CSV fields as the values pandas would hold in a column of ``kind``."""
    if kind == "int":
        return np.asarray([int(t) for t in texts], dtype=object)
    if kind == "float":
        return np.asarray([float(t) for t in texts], dtype=float)
    if kind == "bool":
        return np.asarray([t in PANDAS_TRUE for t in texts], dtype=bool)
    return np.asarray(texts, dtype=object)


def _cleanup(con: duckdb.DuckDBPyConnection, spill: str) -> None:
    con.close()
    shutil.rmtree(spill, ignore_errors=True)


def _nan(x: str) -> str:
    """SQL: ``x`` (DOUBLE) is NaN. Not ``isnan``: DuckDB (2.0) folds ``isnan`` of a Parquet column to
    false from the file's statistics, whose min and max leave NaN out, so a NaN went unseen (missing
    to pandas, "outside the domain" or a failed integer cast here); ``isfinite`` it does not fold,
    and infinities, which the statistics hold, it folds only where there are none."""
    return f"(NOT isfinite({x}) AND NOT isinf({x}))"


def _has_any(r: str, chars: str) -> str:
    return "(" + " OR ".join(f"contains({r}, {_text(ch)})" for ch in chars) + ")"


def _text(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _any_of(r: str, items: tuple[str, ...]) -> str:
    """``r IN (items)`` as equalities: DuckDB runs a long IN list as a join, far slower here."""
    return "(" + " OR ".join(f"{r} = {_text(s)}" for s in items) + ")"


def _clipped(column: Column, x: str) -> str:
    """The number ``x`` (never NULL here: DuckDB's greatest and least skip NULLs) set to the nearest
    bound when the column is clipped, as the codec's ``clipped`` does; otherwise ``x``."""
    if not column.clip:
        return x
    lower, upper = _bounds(column)
    return f"least(greatest({x}, {_double(lower)}), {_double(upper)})"


def _double(x: float) -> str:
    """A DOUBLE literal of exactly ``x`` (a plain '0.1' would be typed DECIMAL by DuckDB)."""
    x = float(x)
    return f"{x:.17e}" if math.isfinite(x) else f"CAST('{x!r}' AS DOUBLE)"
