"""What is wrong with data measured against a domain, as engines report it."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import DataError

if TYPE_CHECKING:
    from .columns import Column
    from .domain import Domain

MISSING = "missing values"
WRONG_TYPE = "values of the wrong type"
OUTSIDE = "values outside the domain"
PROBLEMS = (MISSING, WRONG_TYPE, OUTSIDE)
EXAMPLES = 5


@dataclass(frozen=True)
class ColumnIssue:
    """``rows`` rows of ``column`` have ``problem``; ``examples`` shows a few distinct values;
    ``hint`` says what the values and the domain's categories have in common, if it is telling
    (numbers against text categories, or the reverse: see :func:`type_hint`)."""

    column: str
    problem: str
    rows: int
    examples: tuple[str, ...] = ()
    hint: str = ""

    def describe(self) -> str:
        shown = f" (e.g. {', '.join(self.examples)})" if self.examples else ""
        hint = f" — {self.hint}" if self.hint else ""
        return f"column {self.column!r}: {self.rows} row{'s' if self.rows != 1 else ''} with {self.problem}{shown}{hint}"


def type_hint(column: Column, problem: str, examples: tuple[str, ...]) -> str:
    """Why a categorical column's values may not match: numbers against text, shown both ways.

    Decided from the domain and the examples the error shows anyway (so both engines, which
    show the same examples, give the same hint).

    >>> from dipsy.domain import Column
    >>> type_hint(Column("Sex", "categorical", categories=(1, 2)), WRONG_TYPE, ("M", "F"))
    'the domain lists its categories as numbers (1, 2) and these values are text: if the data write the categories as text, list them as the data write them, quoted'
    >>> type_hint(Column("Sex", "categorical", categories=("01", "02")), OUTSIDE, ("1", "2"))
    "the domain lists '01', '02' as text, matched as written, and these values are numbers (read without leading zeros or '.0'): list such categories as numbers, unquoted, if the data hold numbers"
    """
    if not column.is_categorical or not examples:
        return ""
    if column.numeric_categories and problem == WRONG_TYPE:
        return (
            f"the domain lists its categories as numbers ({_shown(column.categories)}) and these values are text: "
            "if the data write the categories as text, list them as the data write them, quoted"
        )
    if column.numeric_categories or problem != OUTSIDE or not all(_reads_as_number(e) for e in examples):
        return ""
    number_texts = [c for c in column.levels if isinstance(c, str) and _reads_as_number(c)]
    if number_texts:
        return (
            f"the domain lists {_shown(number_texts)} as text, matched as written, and these values are numbers "
            "(read without leading zeros or '.0'): list such categories as numbers, unquoted, if the data hold numbers"
        )
    if all(isinstance(c, str) for c in column.levels):
        return (
            f"the domain's categories are text ({_shown(column.levels)}) and these values are numbers: if the "
            "data hold codes, list the codes as the categories and the words under labels:"
        )
    return ""


def _reads_as_number(text: Any) -> bool:
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def _shown(categories: Any, most: int = 4) -> str:
    items = [repr(c) if isinstance(c, str) else str(c) for c in list(categories)[:most]]
    return ", ".join(items) + (", …" if len(categories) > most else "")


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

    def explained(self, domain: Domain) -> ValidationReport:
        """The report with a :func:`type_hint` on each issue where one is telling."""
        issues = tuple(
            replace(i, hint=type_hint(domain[i.column], i.problem, i.examples)) if i.column in domain else i for i in self.issues
        )
        return replace(self, issues=issues)

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
