"""What is wrong with data measured against a domain, as engines report it."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DataError

MISSING = "missing values"
WRONG_TYPE = "values of the wrong type"
OUTSIDE = "values outside the domain"
PROBLEMS = (MISSING, WRONG_TYPE, OUTSIDE)
EXAMPLES = 5


@dataclass(frozen=True)
class ColumnIssue:
    """``rows`` rows of ``column`` have ``problem``; ``examples`` shows a few distinct values."""

    column: str
    problem: str
    rows: int
    examples: tuple[str, ...] = ()

    def describe(self) -> str:
        shown = f" (e.g. {', '.join(self.examples)})" if self.examples else ""
        return f"column {self.column!r}: {self.rows} row{'s' if self.rows != 1 else ''} with {self.problem}{shown}"


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of checking every row against the domain.

    >>> r = ValidationReport(rows=10, invalid_rows=2, issues=(ColumnIssue("Race", OUTSIDE, 2, ("7",)),))
    >>> r.ok, r.valid_rows
    (False, 8)
    >>> r.summary()
    "2 of 10 rows do not match the domain: column 'Race': 2 rows with values outside the domain (e.g. 7)"
    """

    rows: int
    invalid_rows: int
    issues: tuple[ColumnIssue, ...] = ()
    missing_columns: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.issues and not self.missing_columns

    @property
    def valid_rows(self) -> int:
        return self.rows - self.invalid_rows

    def summary(self) -> str:
        if self.missing_columns:
            return f"the data have no column(s) {', '.join(map(repr, self.missing_columns))}"
        if not self.issues:
            return f"all {self.rows} rows match the domain"
        parts = "; ".join(i.describe() for i in self.issues)
        return f"{self.invalid_rows} of {self.rows} rows do not match the domain: {parts}"

    def raise_if_invalid(self) -> None:
        """Raise a :class:`DataError` that names the columns, values and row counts."""
        if self.missing_columns:
            raise DataError(self.summary(), "rename the data's columns or the domain's, or choose columns with --columns")
        if self.issues:
            raise DataError(self.summary(), "fix the data or the domain file, or pass --on-invalid drop to drop those rows")
