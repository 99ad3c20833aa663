"""The one interface through which methods read confidential data.

An engine answers queries over records encoded against a public domain: contingency tables
(dense or sparse) and, for methods whose statistics are sums, the valid values of chosen columns.
It is the only code that touches confidential records; what it returns stays inside the process
and is measured with noise, or fed to a private model, by a method.

Backends agree bit for bit on the same data (design rule 6): the in-memory NumPy engine
(:mod:`.numpy_engine`) and the out-of-core DuckDB engine (:mod:`.duckdb_engine`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ..domain import CELL_LIMIT, Domain, ValidationReport
from ..errors import DataError

Form = Literal["auto", "dense", "sparse"]
#: How a backend reads a column's valid rows (:meth:`Engine._values`): cell codes, numbers, missing states.
Pick = Literal["code", "number", "state"]
#: The column of the SQL backends' codes query a pick reads, its name followed by the column's place in the domain.
PICK_FIELDS = {"code": "k", "number": "x", "state": "s"}
ON_INVALID = ("error", "drop")
#: ``form="auto"`` holds a table densely up to this many cells (512 MB of int64 counts).
DENSE_LIMIT = 2**26
#: Flat cell indices are int64; larger cross-tabulations cannot be indexed.
INDEX_LIMIT = 2**63 - 1
#: The strings pandas reads as booleans (a column of only these and missing values is boolean).
PANDAS_TRUE = ("True", "TRUE", "true")
PANDAS_FALSE = ("False", "FALSE", "false")
#: Whole numbers below this magnitude are exact in a float64 and become ``int`` values.
EXACT_INTEGERS = 2.0**53


@dataclass(frozen=True, eq=False)
class Records:
    """Columns of the valid rows, read once and row-aligned (:meth:`Engine.records`).

    ``numbers``: integer and numeric columns as numbers (float64), NaN where a row is in a missing
    state; ``states``: for those that declare missing states, each row's state (−1: a value is
    present); ``codes``: every column that has cells, as cell codes (missing states included).

    >>> r = Records({"x": np.array([1.5, np.nan])}, {}, {"x": np.array([-1, 0])})
    >>> r.rows
    2
    """

    numbers: dict[str, np.ndarray]
    codes: dict[str, np.ndarray]
    states: dict[str, np.ndarray]

    @property
    def rows(self) -> int:
        return len(next(iter((*self.codes.values(), *self.numbers.values()))))


@dataclass(frozen=True, eq=False)
class CountTable:
    """A contingency table over ``columns`` with ``shape`` cells, in domain order.

    Dense: ``counts`` has one entry per cell in C order (first column slowest) and ``cells`` is
    None. Sparse: ``cells`` holds the sorted flat indices of the non-empty cells and ``counts``
    their counts.

    >>> t = CountTable.from_cells(("a", "b"), (2, 3), np.array([1, 5]), np.array([4, 2]))
    >>> t.dense().tolist()
    [[0, 4, 0], [0, 0, 2]]
    >>> t.total, t.size
    (6, 6)
    """

    columns: tuple[str, ...]
    shape: tuple[int, ...]
    counts: np.ndarray
    cells: np.ndarray | None = None

    @classmethod
    def from_cells(cls, columns: Iterable[str], shape: Iterable[int], cells: np.ndarray, counts: np.ndarray) -> CountTable:
        """A sparse table from flat indices (sorted here) and their counts."""
        cells, counts = np.asarray(cells, dtype=np.int64), np.asarray(counts, dtype=np.int64)
        order = np.argsort(cells, kind="stable")
        return cls(tuple(columns), tuple(shape), counts[order], cells[order])

    @property
    def is_sparse(self) -> bool:
        return self.cells is not None

    @property
    def size(self) -> int:
        """Number of cells of the full cross-tabulation."""
        return math.prod(self.shape)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def dense(self) -> np.ndarray:
        """Counts as an array of ``shape``."""
        if not self.is_sparse:
            return self.counts.reshape(self.shape)
        check_dense(self.size)
        out = np.zeros(self.size, dtype=np.int64)
        out[self.cells] = self.counts
        return out.reshape(self.shape)

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat indices of the non-empty cells, sorted, and their counts."""
        if self.cells is not None:  # is_sparse
            keep = self.counts != 0
            return self.cells[keep], self.counts[keep]
        cells = np.flatnonzero(self.counts)
        return cells.astype(np.int64), self.counts[cells]

    def equals(self, other: CountTable) -> bool:
        """Same columns, shape and counts, whatever the form."""
        if self.columns != other.columns or self.shape != other.shape:
            return False
        a, b = self.sparse(), other.sparse()
        return bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))


def check_dense(cells: int) -> None:
    """Refuse a dense table of more than the domain's :data:`~dipsy.domain.CELL_LIMIT` cells."""
    if cells > CELL_LIMIT:
        raise DataError(
            f"a dense table of {cells:,} cells does not fit in memory (the limit is {CELL_LIMIT:,})",
            "choose fewer columns (--columns), coarser bins in the domain file, or a method that works on marginals",
        )


def choose_form(form: Form, cells: int) -> Literal["dense", "sparse"]:
    if cells > INDEX_LIMIT:
        raise DataError(
            f"the cross-tabulation has {cells:,} cells, more than can be indexed",
            "choose fewer columns (--columns) or coarser bins in the domain file",
        )
    if form == "auto":
        return "dense" if cells <= DENSE_LIMIT else "sparse"
    if form not in ("dense", "sparse"):
        raise ValueError(f"form must be 'auto', 'dense' or 'sparse', got {form!r}")
    if form == "dense":
        check_dense(cells)
    return form


@dataclass(frozen=True, eq=False)
class ValueCounts:
    """The distinct values of one raw column and how many rows hold each (:meth:`Engine.value_counts`).

    ``values`` are sorted: numbers first (``int`` when whole and below 2**53 in magnitude, else
    ``float``), ascending, then texts in Python's order; ``counts`` (int64, each >= 1) align with them.

    >>> vc = merge_raw_counts("x", ["b", "01", "TRUE"], [1, 2, 3], np.array([1.0, 2.5]), np.array([4, 5]))
    >>> vc.values, vc.counts.tolist()
    ((1, 2.5, 'True', 'b'), [6, 5, 3, 1])
    """

    column: str
    values: tuple
    counts: np.ndarray


def merge_raw_counts(column: str, texts, text_counts, numbers, number_counts) -> ValueCounts:
    """The value of each raw value, one record at a time, and the counts summed per value.

    Both backends hand over their distinct raw values, as text (a CSV field, a string, a boolean
    as ``True``/``False``, any other object as ``str``) or as numbers (typed numeric values), each
    with its count of rows. A record's value is a function of its own raw value only — never of
    the column's inferred type, which depends on the other records — so that one record changes
    the count of exactly one value (what the DP partition selection of
    :mod:`dipsy.methods.discovery` relies on):

    - a text that reads as a number by pandas' syntax (``pandas.to_numeric``: ``01``, `` 1 ``,
      ``1.0``, ``1e3``) is that number; the boolean spellings pandas reads (``TRUE``, ``true``)
      are ``True`` and ``False``; any other text is itself;
    - a number is ``int`` when whole and below 2**53 in magnitude, else ``float``; non-finite
      numbers (``inf``) are not counted, nor are missing values (counted by no value at all).
    """
    t = pd.Series(list(texts), dtype=object)
    t = t.where(~t.isin(PANDAS_TRUE), "True").where(~t.isin(PANDAS_FALSE), "False")
    tc = np.asarray(text_counts, dtype=np.int64)
    parsed = pd.to_numeric(t, errors="coerce").to_numpy(dtype=float, na_value=np.nan) if len(t) else np.zeros(0)
    read = ~np.isnan(parsed)
    nums = np.concatenate([np.asarray(numbers, dtype=float).reshape(-1), parsed[read]])
    ncounts = np.concatenate([np.asarray(number_counts, dtype=np.int64).reshape(-1), tc[read]])
    keep = np.isfinite(nums)
    nums, ncounts = nums[keep], ncounts[keep]
    distinct, where = np.unique(nums, return_inverse=True)
    summed = np.zeros(distinct.size, dtype=np.int64)
    np.add.at(summed, where.reshape(-1), ncounts)
    whole = (distinct == np.floor(distinct)) & (np.abs(distinct) < EXACT_INTEGERS)
    values: list = [int(v) if w else float(v) for v, w in zip(distinct, whole)]
    by_text: dict[str, int] = {}
    for text, n in zip(t[~read], tc[~read]):  # the distinct raw texts, not the records
        by_text[text] = by_text.get(text, 0) + int(n)
    texts_sorted = sorted(by_text)
    values += texts_sorted
    counts = np.concatenate([summed, np.asarray([by_text[x] for x in texts_sorted], dtype=np.int64)])
    return ValueCounts(column, tuple(values), counts)


class Engine(ABC):
    """Aggregate queries over data encoded against ``domain``.

    Parameters
    ----------
    domain
        The columns in scope; rows are checked against these columns only.
    on_invalid
        ``"error"``: any row that does not match the domain raises a :class:`DataError` naming
        the column, a few values and the row count. ``"drop"``: such rows are left out of every
        query, and :attr:`report` says how many.
    """

    def __init__(self, domain: Domain, on_invalid: str = "error") -> None:
        if on_invalid not in ON_INVALID:
            raise DataError(f"on_invalid is {on_invalid!r}", "use 'error' or 'drop'")
        self.domain = domain
        self.on_invalid = on_invalid
        self._report: ValidationReport | None = None

    @property
    def report(self) -> ValidationReport:
        """The check of every row against the domain (computed once)."""
        if self._report is None:
            # Hints (numbers against text categories) are added here, from the domain and the
            # examples alone, so that every backend gives the same report.
            self._report = self._validate().explained(self.domain)
        return self._report

    def ensure_valid(self) -> ValidationReport:
        """Raise on invalid rows unless they are to be dropped; missing columns always raise."""
        report = self.report
        if report.missing_columns or (self.on_invalid == "error" and not report.ok):
            report.raise_if_invalid()
        return report

    def num_rows(self) -> int:
        """Number of rows used by queries (valid rows)."""
        return self.ensure_valid().valid_rows

    def contingency(self, columns: Iterable[str] | None = None, form: Form = "auto") -> CountTable:
        """Counts of every cell of the cross-tabulation of ``columns`` (default: all in scope)."""
        names = tuple(self.domain.names if columns is None else columns)
        shape = self.domain.shape(names)
        chosen = choose_form(form, math.prod(shape))
        self.ensure_valid()
        cells, counts = self._cell_counts(names, shape)
        table = CountTable.from_cells(names, shape, cells, counts)
        if chosen == "dense":
            return CountTable(names, shape, table.dense().ravel())
        return table

    def values(self, columns: Iterable[str]) -> dict[str, np.ndarray]:
        """The valid rows of ``columns``: codes (int64) of categorical columns, numbers (float64)
        of integer and numeric ones — for methods whose statistics are sums, not counts.

        The arrays hold n values each in memory; rows come in the backend's order, so callers
        that need identical bits across backends sort before summing.
        """
        names = tuple(columns)
        for name in names:
            column = self.domain[name]  # an unknown column is a clear error
            if not column.is_categorical and column.missing is not None:
                # Its rows in a missing state are valid and have no number (or a code such as -8,
                # which is not one): refused rather than read as values. Methods refuse it earlier,
                # when they plan; this is the last guard, before any record is read.
                raise DataError(
                    f"column {name!r} declares missing values (missing:), and its values are read here as numbers",
                    "use a method that counts codes (give the column bins), or leave the column out, or drop "
                    "missing: and pass --on-invalid drop",
                )
        self.ensure_valid()
        return dict(zip(names, self._values(tuple((n, "code" if self.domain[n].is_categorical else "number") for n in names))))

    def codes(self, columns: Iterable[str]) -> dict[str, np.ndarray]:
        """The valid rows' cell codes of ``columns`` (int64): categories, integers, bins and missing
        states alike, the codes the contingency tables count — for methods that read records cell by
        cell (dpsyn's public records) where a table of every column could not be indexed.

        Rows come in the backend's order, as :meth:`values` gives them.
        """
        names = tuple(columns)
        for name in names:
            if self.domain[name].size is None:
                raise DataError(f"column {name!r} has no cells: it is numeric without bins", "give it bins in the domain file")
        self.ensure_valid()
        return dict(zip(names, self._values(tuple((n, "code") for n in names))))

    def records(self, columns: Iterable[str]) -> Records:
        """The valid rows of ``columns`` read once, row-aligned, as :class:`Records`: the numbers of
        integer and numeric columns (NaN where a row is in a missing state) with each row's state,
        and the cell codes of every column that has cells (missing states included, as
        :meth:`codes` gives them) — for methods that repeat a public column as it is, states and all
        (rdt's targets, the pseudo-posterior's predictors)."""
        names = tuple(columns)
        picks: list[tuple[str, Pick]] = []
        for n in names:
            column = self.domain[n]
            if not column.is_categorical:
                picks.append((n, "number"))
                if column.missing is not None:
                    picks.append((n, "state"))
            if column.size is not None:
                picks.append((n, "code"))
        self.ensure_valid()
        read = dict(zip(picks, self._values(tuple(picks))))
        states = {n: read[(n, "state")] for n, kind in picks if kind == "state"}
        numbers = {
            n: np.where(states[n] >= 0, np.nan, x) if n in states else x for (n, kind), x in read.items() if kind == "number"
        }
        return Records(numbers, {n: read[(n, "code")] for n, kind in picks if kind == "code"}, states)

    def has_column(self, name: str) -> bool:
        """Whether the data hold a column ``name`` (from the header or schema: no value is read)."""
        return self._has_column(name)

    def value_counts(self, column: str) -> ValueCounts:
        """How many rows hold each distinct value of ``column``, read raw: not through the domain's
        encoding (the column's declaration is not used, and no row is validated or dropped).

        Missing values are not counted. A record's value is a function of its own raw value only
        (see :func:`merge_raw_counts`), and both backends agree exactly. This is a confidential
        statistic: only a charged measurement reads it (:class:`dipsy.methods.discovery.ValueCountsQuery`).
        """
        if not self._has_column(column):
            raise DataError(f"the data have no column {column!r}", "check the column's name against the data's header")
        return merge_raw_counts(column, *self._raw_counts(column))

    def rebinned(self, domain: Domain) -> Engine:
        """The same data read against ``domain``: the same columns, kinds, bounds and missing states, other bins.

        Bins never decide which rows are valid (missing values, wrong types and values outside
        the bounds do, or clipping), so the new engine keeps exactly these rows.
        """
        if domain == self.domain:
            return self
        same = lambda d: [(c.name, c.kind, c.lower, c.upper, c.categories, c.clip, c.missing) for c in d.columns]  # noqa: E731
        if same(domain) != same(self.domain):
            raise ValueError("rebinned() changes bins only, never columns, kinds or bounds")
        return self._reopen(domain)

    @abstractmethod
    def _has_column(self, name: str) -> bool:
        """Whether the source has a column ``name`` (metadata only)."""

    @abstractmethod
    def _raw_counts(self, name: str) -> tuple:
        """The distinct raw values of ``name`` and their row counts, missing values left out:
        ``(texts, text_counts, numbers, number_counts)`` as :func:`merge_raw_counts` takes them."""

    @abstractmethod
    def _reopen(self, domain: Domain) -> Engine:
        """A new engine of this backend over the same source and ``domain``."""

    @abstractmethod
    def _values(self, picks: tuple[tuple[str, Pick], ...]) -> list[np.ndarray]:
        """For each ``(name, pick)`` of ``picks``, the valid rows' codes of column ``name`` (int64,
        ``"code"``), its numbers (float64, ``"number"``: as read, a state's code included), or its
        missing state (int64, ``"state"``: −1 where a value is present, else the state's index), all
        from one read (row-aligned); a column may be picked several ways."""

    @abstractmethod
    def _validate(self) -> ValidationReport:
        """Check every row of the columns in scope."""

    @abstractmethod
    def _cell_counts(self, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Flat C-order indices of the non-empty cells over valid rows, and their counts."""
